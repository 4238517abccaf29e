//! An application as loaded: its routes and, per component, what each request's instance
//! is made from. Everything that can fail (the lock, templates, compiling, linking) fails
//! here, at `load`, never on a request.

use crate::admission::Admission;
use crate::baseline::Baseline;
use crate::budget::Budget;
use crate::cache::ComponentCache;
use crate::executor::{self, Executor, Linkers, Scope};
use crate::instances::Instances;
use crate::limits::Limits;
use crate::load_error::{ComponentError, LoadError};
use crate::lock::LockedApp;
use crate::outbound::Outbound;
use crate::outbound::address::AddressPolicy;
use crate::outbound::allowed::AllowedHosts;
use crate::outbound::caps::{self, Counter};
use crate::outbound::resolve::Names;
use crate::routes::Router;
use crate::stats::{ComponentStats, Stats};
use crate::variables::{AppVariables, ComponentVariables};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct ComponentRuntime {
    pub id: Arc<str>,
    pub executor: Box<dyn Executor>,
    /// Its requests' latency and errors (`stats`' `components`).
    pub stats: Arc<ComponentStats>,
}

pub struct App {
    /// Its id, bounds, counters, part of the budget and turns: what its runs are held within.
    pub scope: Arc<Scope>,
    pub router: Router,
    pub components: HashMap<String, Arc<ComponentRuntime>>,
    pub digests: Vec<String>,
    /// Its turns at the instance pool (`limits.maxConcurrentRequests`, `maxQueuedRequests`).
    pub admission: Admission,
    /// The wasm of the components that run Winch's code: Cranelift's is on its way
    /// (`baseline.rs`).
    pub on_winch: Vec<PathBuf>,
}

/// What every application is built with, the same for all of them.
pub struct Shared {
    pub policy: Arc<AddressPolicy>,
    pub names: Arc<Names>,
    pub budget: Arc<Budget>,
    /// `--max-instances`, counted over both engines (`instances.rs`).
    pub instances: Arc<Instances>,
    /// The serving threads: an application's turns while computing.
    pub threads: usize,
}

/// The last hold on an app goes when its port and every request in flight are done, which
/// may be after `unload` answered: what its components and instances held (tens of MB for a
/// js component) is freed then, and given back, so an unloaded app costs nothing.
impl Drop for App {
    fn drop(&mut self) {
        IN_MEMORY.fetch_sub(1, Ordering::Relaxed);
        crate::cache::give_back_free_memory();
    }
}

/// Apps built and not yet dropped, loaded or on their way out (`stats`' `appsInMemory`): an
/// idle or unloaded app leaves it once its last request is done.
static IN_MEMORY: AtomicUsize = AtomicUsize::new(0);

pub fn in_memory() -> usize {
    IN_MEMORY.load(Ordering::Relaxed)
}

#[derive(Clone)]
pub struct LoadRequest {
    pub app: String,
    pub lock: Value,
    pub components: HashMap<String, PathBuf>,
    pub variables: HashMap<String, String>,
    pub limits: Limits,
}

/// Blocks while components compile: run it off the async threads. With `baseline`, a component
/// Cranelift has not compiled yet is compiled by Winch (`baseline.rs`).
pub fn build(
    request: LoadRequest,
    cache: &ComponentCache,
    linkers: &Linkers,
    baseline: Option<&Baseline>,
    shared: &Shared,
    stats: Arc<Stats>,
) -> Result<App, LoadError> {
    let mut on_winch = Vec::new();
    let app_id: Arc<str> = request.app.as_str().into();
    let app_in_flight = Counter::new(caps::PER_APP);
    let lock = LockedApp::from_value(request.lock)?;
    let routes = lock.http_routes()?;
    let pairs: Vec<(String, String)> = routes
        .iter()
        .map(|(r, c, _)| (r.clone(), c.clone()))
        .collect();
    let router = Router::new(&pairs)?;
    let app_variables = Arc::new(AppVariables::new(&lock.variables, &request.variables)?);
    let declared = |name: &str| lock.variables.contains_key(name);

    let mut components = HashMap::new();
    let mut digests = Vec::new();
    for component in &lock.components {
        // Only what a route reaches is compiled and kept.
        let mut executors = routes
            .iter()
            .filter(|(_, c, _)| *c == component.id)
            .map(|(_, _, e)| e);
        let Some(executor) = executors.next() else {
            continue;
        };
        let id = component.id.as_str();
        if executors.any(|e| e != executor) {
            return Err(ComponentError::MixedExecutors.of(id));
        }
        if !component.files.is_empty() {
            return Err(ComponentError::Files.of(id));
        }
        let path = request
            .components
            .get(id)
            .ok_or_else(|| ComponentError::NoWasm.of(id))?;
        let expected = component.source.digest.as_deref();
        let (digest, compiled) = match baseline {
            Some(baseline) => baseline.component(cache, path, expected),
            None => cache.load(path, expected),
        }
        .map_err(|e| ComponentError::Cache(e).of(id))?;
        // A component links only with its own engine's linkers.
        let own_linkers = match baseline {
            Some(baseline) if baseline.compiled(&compiled) => {
                on_winch.push(path.clone());
                &baseline.linkers
            }
            _ => linkers,
        };
        let mut hosts = Vec::new();
        for host in component.allowed_outbound_hosts()? {
            hosts.push(
                app_variables
                    .expand(&host, &declared)
                    .map_err(|e| ComponentError::HostTemplate(e).of(id))?,
            );
        }
        let allowed =
            AllowedHosts::parse(&hosts).map_err(|e| ComponentError::AllowedHosts(e).of(id))?;
        let variables = ComponentVariables::new(
            &component.id,
            &component.config,
            &declared,
            app_variables.clone(),
        )?;
        let executor_of = |e| ComponentError::Link(e).of(id);
        let id: Arc<str> = id.into();
        let outbound = Arc::new(Outbound {
            app: app_id.clone(),
            component: id.clone(),
            allowed: Arc::new(allowed),
            policy: shared.policy.clone(),
            names: shared.names.clone(),
            app_in_flight: app_in_flight.clone(),
            stats: stats.clone(),
        });
        let executor = executor::prepare(executor, compiled, own_linkers, variables, outbound)
            .map_err(executor_of)?;
        components.insert(
            component.id.clone(),
            Arc::new(ComponentRuntime {
                stats: stats.component(&id),
                id,
                executor,
            }),
        );
        digests.push(digest);
    }
    if let Some((route, missing, _)) = routes.iter().find(|(_, c, _)| !components.contains_key(c)) {
        return Err(LoadError::MissingComponent {
            route: route.clone(),
            component: missing.clone(),
        });
    }
    IN_MEMORY.fetch_add(1, Ordering::Relaxed);
    let limits = request.limits;
    Ok(App {
        admission: Admission::new(
            limits.max_concurrent_requests,
            limits.max_queued_requests,
            limits.request_timeout,
        ),
        scope: Arc::new(Scope {
            id: app_id,
            limits,
            stats,
            turns: crate::turns::turns(shared.threads),
            budget: shared.budget.clone(),
            share: Arc::default(),
            instances: shared.instances.clone(),
        }),
        router,
        components,
        digests,
        on_winch,
    })
}
