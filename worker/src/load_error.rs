//! Why a `load` failed: everything that can fail fails there, never on a request. The text of
//! each is what the control plane shows and its tests match: kept word for word.

use crate::cache::CacheError;
use crate::load_pool::PoolError;
use crate::lock::LockError;
use crate::outbound::allowed::BadRule;
use crate::routes::BadRoute;
use crate::variables::{TemplateError, VariablesError};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Route(#[from] BadRoute),
    #[error(transparent)]
    Variables(#[from] VariablesError),
    #[error("component {id}: {error}")]
    Component { id: String, error: ComponentError },
    #[error("route {route} names component {component:?}, which the lock lacks")]
    MissingComponent { route: String, component: String },
    #[error(transparent)]
    Pool(#[from] PoolError),
}

/// What one component of the lock could not be made into.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    #[error("routes with different executors")]
    MixedExecutors,
    #[error("files are not supported by this worker yet")]
    Files,
    #[error("no wasm file given")]
    NoWasm,
    #[error(transparent)]
    Cache(CacheError),
    #[error("allowed_outbound_hosts: {0}")]
    HostTemplate(TemplateError),
    #[error("allowed_outbound_hosts: {0}")]
    AllowedHosts(BadRule),
    /// An import the worker does not give, or a module for the wrong executor.
    #[error("{0}")]
    Link(wasmtime::Error),
}

impl ComponentError {
    pub fn of(self, id: &str) -> LoadError {
        LoadError::Component {
            id: id.to_string(),
            error: self,
        }
    }
}

/// The protocol answers a failed command with its text (`protocol.rs`).
impl From<LoadError> for String {
    fn from(error: LoadError) -> String {
        error.to_string()
    }
}
