//! The control plane's commands, one JSON object per line on stdin, each answered by one line
//! on stdout with the same `id`:
//!   load   {app, lock, components: {id: path}, variables, limits, port} -> {url}
//!   unload {app, prune?}                                               -> {}
//!   idle   {app}                                                       -> {}
//!   stats                                                              -> {apps: {id: {..., memoryBytes, components}}, appsInMemory, memoryBudget, threads}
//!   prune                                                              -> {removed: [digest]}
//! A failure is `{"id":N,"ok":false,"error":"..."}`; the worker goes on. Lines without an `id`
//! are events: `{"event":"awake","app":ID}` when a request loaded an idle application again.

use crate::app::LoadRequest;
use crate::limits::Limits;
use crate::log;
use crate::slot::{Loader, Serving, Slot};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    Load {
        app: String,
        lock: Value,
        components: HashMap<String, PathBuf>,
        #[serde(default)]
        variables: HashMap<String, String>,
        // Boxed: the other commands' lines should not all be the size of the largest.
        #[serde(default)]
        limits: Box<LimitsInput>,
        #[serde(default)]
        port: u16,
    },
    Unload {
        app: String,
        #[serde(default)]
        prune: bool,
    },
    Idle {
        app: String,
    },
    Stats,
    Prune,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LimitsInput {
    memory_bytes: Option<u64>,
    request_timeout_ms: Option<u64>,
    max_request_body_bytes: Option<u64>,
    max_response_body_bytes: Option<u64>,
    max_concurrent_requests: Option<u64>,
    max_queued_requests: Option<u64>,
}

const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
const DEFAULT_MAX_REQUEST_BODY: u64 = 10 << 20;
const DEFAULT_MAX_RESPONSE_BODY: u64 = 32 << 20;
/// A tenth of the default pool (1,000 instances): ten applications flooding at once still
/// leave instances to every other one.
const DEFAULT_MAX_CONCURRENT: u64 = 100;
const DEFAULT_MAX_QUEUED: u64 = 100;
/// A queue longer than this only makes callers wait for deadlines in a row.
const MAX_QUEUED: u64 = 10_000;

struct Loaded {
    /// What the port serves now: a redeploy swaps it, the listener staying.
    serving: Arc<Serving>,
    port: u16,
    server: JoinHandle<()>,
}

pub struct Worker {
    loader: Arc<Loader>,
    pub max_memory_bytes: u64,
    /// The pool's size (--max-instances): no application may be given more turns than it has.
    max_instances: u64,
    apps: Mutex<HashMap<String, Loaded>>,
}

impl Worker {
    pub fn new(loader: Loader, max_memory_bytes: u64, max_instances: u64) -> Self {
        Worker {
            loader: Arc::new(loader),
            max_memory_bytes,
            max_instances,
            apps: Mutex::new(HashMap::new()),
        }
    }

    /// One line in, one line out.
    pub async fn handle_line(self: Arc<Self>, line: &str) -> String {
        let parsed: Result<Value, _> = serde_json::from_str(line);
        let id = parsed
            .as_ref()
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or(Value::Null);
        let result = match parsed.map(serde_json::from_value::<Op>) {
            Ok(Ok(op)) => self.run(op).await,
            Ok(Err(e)) | Err(e) => Err(format!("bad command: {e}")),
        };
        let mut reply = match result {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => serde_json::Map::new(),
            Err(error) => {
                let mut fields = serde_json::Map::new();
                fields.insert("ok".into(), json!(false));
                fields.insert("error".into(), json!(error));
                fields
            }
        };
        reply.entry("ok").or_insert(json!(true));
        reply.insert("id".into(), id);
        Value::Object(reply).to_string()
    }

    async fn run(self: Arc<Self>, op: Op) -> Result<Value, String> {
        match op {
            Op::Load {
                app,
                lock,
                components,
                variables,
                limits,
                port,
            } => {
                let limits = self.limits(*limits)?;
                let request = LoadRequest {
                    app,
                    lock,
                    components,
                    variables,
                    limits,
                };
                self.load(request, port).await
            }
            Op::Unload { app, prune } => {
                let found = self.unload(&app).await;
                let removed = if prune { self.prune() } else { Vec::new() };
                if !found {
                    return Err(format!("no application {app:?} is loaded"));
                }
                Ok(json!({"removed": removed}))
            }
            Op::Idle { app } => {
                let slot = self
                    .apps
                    .lock()
                    .unwrap()
                    .get(&app)
                    .map(|l| l.serving.slot());
                let Some(slot) = slot else {
                    return Err(format!("no application {app:?} is loaded"));
                };
                slot.idle().await;
                self.cache_release();
                // What the app held goes with its last request in flight (`App`'s drop);
                // given back now too, for what went with the cache's hold.
                crate::cache::give_back_free_memory();
                log::info(
                    "application idle: unloaded, its port kept",
                    json!({"app": app}),
                );
                Ok(json!({}))
            }
            Op::Stats => {
                let apps = self.apps.lock().unwrap();
                let stats: serde_json::Map<String, Value> = apps
                    .iter()
                    .map(|(id, loaded)| {
                        let slot = loaded.serving.slot();
                        let mut s = slot.stats.to_json();
                        s["port"] = json!(loaded.port);
                        s["idle"] = json!(!slot.is_loaded());
                        s["memoryBytes"] = json!(slot.memory_bytes());
                        let (running, waiting) = slot.turns();
                        s["running"] = json!(running);
                        s["waiting"] = json!(waiting);
                        (id.clone(), s)
                    })
                    .collect();
                Ok(json!({
                    "apps": stats,
                    "appsInMemory": crate::app::in_memory(),
                    "memoryBudget": {
                        "limitBytes": self.loader.shared.budget.limit(),
                        "usedBytes": self.loader.shared.budget.used(),
                    },
                    // The runtime's threads serving requests (--threads), as the runtime counts them.
                    "threads": tokio::runtime::Handle::current().metrics().num_workers(),
                }))
            }
            Op::Prune => Ok(json!({"removed": self.prune()})),
        }
    }

    fn limits(&self, input: LimitsInput) -> Result<Limits, String> {
        let memory = input.memory_bytes.unwrap_or(DEFAULT_MEMORY_BYTES);
        if memory > self.max_memory_bytes {
            return Err(format!(
                "limits.memoryBytes {memory} is above the worker's --max-memory-bytes {}",
                self.max_memory_bytes
            ));
        }
        let timeout = input.request_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout == 0 {
            return Err("limits.requestTimeoutMs must be positive".into());
        }
        let concurrent = input
            .max_concurrent_requests
            .unwrap_or(DEFAULT_MAX_CONCURRENT.min(self.max_instances));
        if concurrent == 0 || concurrent > self.max_instances {
            return Err(format!(
                "limits.maxConcurrentRequests {concurrent} must be from 1 to the worker's --max-instances {}",
                self.max_instances
            ));
        }
        let queued = input.max_queued_requests.unwrap_or(DEFAULT_MAX_QUEUED);
        if queued > MAX_QUEUED {
            return Err(format!(
                "limits.maxQueuedRequests {queued} is above {MAX_QUEUED}"
            ));
        }
        Ok(Limits {
            memory_bytes: memory as usize,
            request_timeout: Duration::from_millis(timeout),
            max_request_body_bytes: input
                .max_request_body_bytes
                .unwrap_or(DEFAULT_MAX_REQUEST_BODY),
            max_response_body_bytes: input
                .max_response_body_bytes
                .unwrap_or(DEFAULT_MAX_RESPONSE_BODY),
            max_concurrent_requests: concurrent as usize,
            max_queued_requests: queued as usize,
        })
    }

    async fn load(self: Arc<Self>, request: LoadRequest, port: u16) -> Result<Value, String> {
        let id = request.app.clone();
        let started = std::time::Instant::now();
        let slot = Arc::new(Slot::load(&self.loader, request).await?);
        // A redeploy on the port it has: the new application is ready, so it takes the next
        // request on every connection, kept-alive ones too; requests in flight finish on the
        // old one, which goes with the last of them. No request sees the port closed.
        let replaced = {
            let apps = self.apps.lock().unwrap();
            match apps.get(&id) {
                Some(loaded) if port == 0 || port == loaded.port => {
                    loaded.serving.replace(slot.clone());
                    Some(loaded.port)
                }
                _ => None,
            }
        };
        if let Some(port) = replaced {
            self.cache_release();
            crate::cache::give_back_free_memory();
            log::info(
                "application replaced",
                json!({"app": id, "port": port, "ms": started.elapsed().as_millis() as u64}),
            );
            return Ok(json!({"url": format!("http://127.0.0.1:{port}")}));
        }
        // A new port (or none yet): bound before the old one closes, so a failure leaves it.
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
        self.unload(&id).await;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let serving = Arc::new(Serving::new(slot));
        let server = tokio::spawn(crate::server::serve(listener, serving.clone()));
        self.apps.lock().unwrap().insert(
            id.clone(),
            Loaded {
                serving,
                port,
                server,
            },
        );
        log::info(
            "application loaded",
            json!({"app": id, "port": port, "ms": started.elapsed().as_millis() as u64}),
        );
        Ok(json!({"url": format!("http://127.0.0.1:{port}")}))
    }

    /// Closes the port and its connections; the instances in flight end with them.
    async fn unload(&self, id: &str) -> bool {
        let removed = self.apps.lock().unwrap().remove(id);
        let Some(loaded) = removed else {
            return false;
        };
        loaded.server.abort();
        // Awaited so the listener is closed before a new load binds the same port.
        let _ = loaded.server.await;
        self.cache_release();
        // The app's components may have gone with it (its `Drop` gave the memory back) or
        // only now, with the cache's hold on them.
        crate::cache::give_back_free_memory();
        log::info("application unloaded", json!({"app": id}));
        true
    }

    /// The cache lets go of the components no loaded application uses; their files stay.
    fn cache_release(&self) {
        let in_memory = self
            .apps
            .lock()
            .unwrap()
            .values()
            .map(|l| l.serving.slot())
            .filter(|slot| slot.is_loaded())
            .flat_map(|slot| slot.digests.clone())
            .collect();
        self.loader.cache.release(&in_memory);
    }

    /// Deletes the compiled files no application uses, loaded or idle.
    fn prune(&self) -> Vec<String> {
        let on_disk: HashSet<String> = self
            .apps
            .lock()
            .unwrap()
            .values()
            .flat_map(|l| l.serving.slot().digests.clone())
            .collect();
        let removed = self.loader.cache.prune(&on_disk);
        if !removed.is_empty() {
            log::info("compiled components pruned", json!({"digests": removed}));
        }
        removed
    }
}
