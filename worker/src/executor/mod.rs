//! How a component answers a request, one executor per kind the lock names (`executor`): the
//! wasi:http handler (`wasi_http.rs`, Spin's default) or a WAGI command (`wagi/`). Each is
//! prepared once at load (linked, so an import the worker does not give fails the load, never a
//! request) and serves each request in a fresh instance that `run.rs` sets up and classifies
//! the end of (`outcome.rs`) the same way for both. The server knows only the trait.

mod outcome;
mod run;
mod scope;
pub mod wagi;
mod wasi_http;

pub use scope::Scope;

use crate::answers::Body;
use crate::cache::Compiled;
use crate::lock::Executor as Kind;
use crate::outbound::Outbound;
use crate::routes::RouteMatch;
use crate::sandbox::Host;
use crate::telemetry::RequestSpan;
use crate::variables::ComponentVariables;
use http::{Request, Response};
use hyper::body::Incoming;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;
use wasmtime::component::Linker;

/// A request routed to a component, its turn at the pool taken (`admission.rs`).
pub struct Routed {
    pub scope: Arc<Scope>,
    pub component: Arc<str>,
    pub request: Request<Incoming>,
    pub found: RouteMatch,
    pub client: SocketAddr,
    /// Held until the request's instance has ended: then the next may have it.
    pub turn: OwnedSemaphorePermit,
    /// Its span, when traces are exported (`telemetry/`).
    pub span: Option<RequestSpan>,
}

pub type Answer<'a> = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'a>>;

pub trait Executor: Send + Sync {
    /// Runs the request in a fresh instance; answers for the guest when it could not.
    fn serve(&self, routed: Routed) -> Answer<'_>;
}

/// What components are linked with, one linker per kind: made once for the worker.
pub struct Linkers {
    pub http: Linker<Host>,
    pub wagi: wasmtime::Linker<wagi::WagiHost>,
}

impl Linkers {
    pub fn new(engine: &wasmtime::Engine) -> wasmtime::Result<Linkers> {
        Ok(Linkers {
            http: wasi_http::linker(engine)?,
            wagi: wagi::linker(engine)?,
        })
    }
}

/// The executor of a component, linked now. Its variables and outgoing requests are only
/// reachable from wasi:http (a WAGI program has neither).
pub fn prepare(
    kind: &Kind,
    compiled: Compiled,
    linkers: &Linkers,
    variables: ComponentVariables,
    outbound: Arc<Outbound>,
) -> wasmtime::Result<Box<dyn Executor>> {
    match (kind, compiled) {
        // An import the worker does not give fails the load, naming it, as Spin refuses such a
        // component (wasmtime's trap stubs would shadow the WASI types of older versions).
        (Kind::Spin, Compiled::Component(component)) => {
            wasi_http::prepare(&linkers.http, &component, variables, outbound)
        }
        (Kind::Wagi { entrypoint, argv }, Compiled::Module(module)) => {
            wagi::prepare(&linkers.wagi, &module, entrypoint, argv)
        }
        (Kind::Spin, Compiled::Module(_)) => Err(wasmtime::format_err!(
            "a core module needs the wagi executor (componentizing modules is not supported yet)"
        )),
        (Kind::Wagi { .. }, Compiled::Component(_)) => Err(wasmtime::format_err!(
            "the wagi executor runs wasip1 modules, not components"
        )),
    }
}
