//! An application at its port, loaded or idle. `idle` drops what the application holds in
//! memory (its components, instances, slots' pages) but keeps its port and what `load` was
//! given: the next request at the port loads it again (from the compiled file: milliseconds)
//! and is answered, so a client of the application's own URL never sees it gone.

use crate::app::{self, App, LoadRequest, Shared};
use crate::baseline::Baseline;
use crate::cache::ComponentCache;
use crate::compile_apart::{self, ApartError};
use crate::executor::Linkers;
use crate::load_error::LoadError;
use crate::load_pool::LoadPool;
use crate::log;
use crate::stats::Stats;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::WeakUnboundedSender;

/// What loading an application needs, shared by every application of the worker.
pub struct Loader {
    pub linkers: Linkers,
    pub cache: Arc<ComponentCache>,
    pub shared: Shared,
    /// Loads compile on these threads, apart from tokio's blocking pool and the serving ones.
    pub pool: LoadPool,
    /// Unsolicited lines for stdout (`{"event": ...}`); weak, so it never keeps stdout open.
    pub events: WeakUnboundedSender<String>,
    /// `--baseline-first`: new components answer from Winch's code first.
    pub baseline: Option<Baseline>,
}

impl Loader {
    /// Compiles or maps the components: blocks, so it runs on the load pool. `first`: a
    /// component never compiled is Winch's, when the worker answers from it first.
    pub async fn build(
        self: &Arc<Self>,
        request: LoadRequest,
        stats: Arc<Stats>,
        first: bool,
    ) -> Result<App, LoadError> {
        let loader = self.clone();
        self.pool
            .run(move || {
                let baseline = loader.baseline.as_ref().filter(|_| first);
                app::build(
                    request,
                    &loader.cache,
                    &loader.linkers,
                    baseline,
                    &loader.shared,
                    stats,
                )
            })
            .await?
    }

    /// Cranelift's build of an application loaded with Winch's code: its components compiled
    /// in a compile process (`compile_apart.rs`), one at a time behind the compiles before
    /// it, then the application built again from the cache's files.
    async fn optimize(
        self: &Arc<Self>,
        request: LoadRequest,
        on_winch: Vec<PathBuf>,
        stats: Arc<Stats>,
    ) -> Option<Result<App, OptimizeError>> {
        let loader = self.clone();
        let baseline = self.baseline.as_ref()?;
        let flags = baseline.flags.clone();
        let built = baseline
            .optimize
            .run(move || {
                for wasm in &on_winch {
                    compile_apart::compile(wasm, &flags)?;
                }
                let Loader {
                    cache,
                    linkers,
                    shared,
                    ..
                } = &*loader;
                Ok(app::build(request, cache, linkers, None, shared, stats)?)
            })
            .await;
        Some(
            built
                .map_err(|e| OptimizeError::Load(e.into()))
                .and_then(|built| built),
        )
    }

    fn event(&self, event: serde_json::Value) {
        if let Some(events) = self.events.upgrade() {
            let _ = events.send(event.to_string());
        }
    }
}

/// Why an application stays on Winch's code.
#[derive(Debug, thiserror::Error)]
enum OptimizeError {
    #[error(transparent)]
    Apart(#[from] ApartError),
    #[error(transparent)]
    Load(#[from] LoadError),
}

pub struct Slot {
    pub id: Arc<str>,
    /// Counted across idle periods: the control plane reads idleness from them.
    pub stats: Arc<Stats>,
    /// The compiled files the application uses: kept on disk while it is idle.
    pub digests: Vec<String>,
    request: LoadRequest,
    loaded: Mutex<Option<Arc<App>>>,
    /// One load at a time: the requests that find the application idle wait for it.
    waking: tokio::sync::Mutex<()>,
    loader: Arc<Loader>,
}

impl Slot {
    /// Loads the application (everything that can fail fails here) into a new slot. When it
    /// answers from Winch's code, Cranelift's follows (`optimize`).
    pub async fn load(loader: &Arc<Loader>, request: LoadRequest) -> Result<Arc<Slot>, LoadError> {
        let stats = Arc::new(Stats::default());
        let app = loader.build(request.clone(), stats.clone(), true).await?;
        let on_winch = app.on_winch.clone();
        let slot = Arc::new(Slot {
            id: app.scope.id.clone(),
            stats,
            digests: app.digests.clone(),
            request,
            loaded: Mutex::new(Some(Arc::new(app))),
            waking: tokio::sync::Mutex::new(()),
            loader: loader.clone(),
        });
        if !on_winch.is_empty() {
            tokio::spawn(Slot::optimize(Arc::downgrade(&slot), on_winch));
        }
        Ok(slot)
    }

    /// Builds the application again with Cranelift's code and serves that from then on, as a
    /// redeploy in place does: a request takes the application current when it comes, so
    /// those in flight end on Winch's code. The compile fills the cache even when the slot
    /// has gone meanwhile (replaced, unloaded): the next load of the digest maps it. An idle
    /// application is left idle; it wakes on Cranelift's file.
    async fn optimize(slot: std::sync::Weak<Slot>, on_winch: Vec<PathBuf>) {
        let Some((loader, request, stats, id)) = slot.upgrade().map(|s| {
            (
                s.loader.clone(),
                s.request.clone(),
                s.stats.clone(),
                s.id.clone(),
            )
        }) else {
            return;
        };
        let started = std::time::Instant::now();
        let built = match loader.optimize(request, on_winch, stats).await {
            Some(Ok(app)) => app,
            Some(Err(e)) => {
                log::error(
                    "Cranelift could not compile the application: it stays on the baseline code",
                    json!({"app": &*id, "err": e.to_string()}),
                );
                return;
            }
            None => return,
        };
        let ms = started.elapsed().as_millis() as u64;
        let swapped = slot.upgrade().is_some_and(|slot| {
            let mut loaded = slot.loaded.lock().unwrap();
            let on_baseline = loaded.as_ref().is_some_and(|app| !app.on_winch.is_empty());
            if on_baseline {
                *loaded = Some(Arc::new(built));
            }
            on_baseline
        });
        log::info(
            "application on Cranelift's code",
            json!({"app": &*id, "ms": ms, "swapped": swapped}),
        );
    }

    /// The application for a request, loaded again first when it is idle.
    pub async fn app(&self) -> Result<Arc<App>, LoadError> {
        if let Some(app) = self.current() {
            return Ok(app);
        }
        let _waking = self.waking.lock().await;
        // Another request may have loaded it meanwhile.
        if let Some(app) = self.current() {
            return Ok(app);
        }
        let started = std::time::Instant::now();
        let app = match self
            .loader
            .build(self.request.clone(), self.stats.clone(), false)
            .await
        {
            Ok(app) => Arc::new(app),
            Err(e) => {
                log::error(
                    "the idle application could not be loaded again",
                    json!({"app": &*self.id, "err": e.to_string()}),
                );
                return Err(e);
            }
        };
        *self.loaded.lock().unwrap() = Some(app.clone());
        log::info(
            "idle application loaded again by a request",
            json!({"app": &*self.id, "ms": started.elapsed().as_millis() as u64}),
        );
        self.loader
            .event(json!({"event": "awake", "app": &*self.id}));
        Ok(app)
    }

    /// Lets go of the application: what it holds is freed once its requests in flight end.
    pub async fn idle(&self) {
        // After a load under way, not under it.
        let _waking = self.waking.lock().await;
        self.loaded.lock().unwrap().take();
    }

    /// Its requests holding an instance and waiting for a turn now (none while it is idle).
    pub fn turns(&self) -> (usize, usize) {
        self.current().map_or((0, 0), |app| {
            (app.admission.running(), app.admission.waiting())
        })
    }

    /// What its instances' memories hold now (its part of the worker's budget).
    pub fn memory_bytes(&self) -> u64 {
        self.current().map_or(0, |app| app.scope.share.used())
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded.lock().unwrap().is_some()
    }

    fn current(&self) -> Option<Arc<App>> {
        self.loaded.lock().unwrap().clone()
    }
}

/// The slot an application's port serves: each request takes the one current when it comes,
/// so a redeploy swaps it without closing the port or its connections.
pub struct Serving(Mutex<Arc<Slot>>);

impl Serving {
    pub fn new(slot: Arc<Slot>) -> Serving {
        Serving(Mutex::new(slot))
    }

    pub fn slot(&self) -> Arc<Slot> {
        self.0.lock().unwrap().clone()
    }

    pub fn replace(&self, slot: Arc<Slot>) {
        *self.0.lock().unwrap() = slot;
    }
}
