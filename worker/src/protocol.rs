//! The control plane's commands, one JSON object per line on stdin, each answered by one line
//! on stdout with the same `id`:
//!   load   {app, lock, components: {id: path}, variables, limits, port} -> {url}
//!   unload {app, prune?}                                               -> {}
//!   idle   {app}                                                       -> {}
//!   stats                                                              -> {apps: {id: {..., memoryBytes, components}}, appsInMemory, memoryBudget, threads}
//!   prune                                                              -> {removed: [digest]}
//! A failure is `{"id":N,"ok":false,"error":"..."}`; the worker goes on. Lines without an `id`
//! are events: `{"event":"awake","app":ID}` when a request loaded an idle application again.
//! The messages' one definition is a JSON Schema (control/src/local/worker-client/
//! protocol-schema.ts); their serde types (messages.rs) are held to it by tests/protocol.rs.

mod limits_input;
mod messages;

use crate::app::LoadRequest;
use crate::log;
use crate::slot::{Loader, Serving, Slot};
use messages::{MemoryBudget, Op, Reply, StatsReply};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

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
        let mut reply = match result.map(serde_json::to_value) {
            Ok(Ok(Value::Object(fields))) => fields,
            Ok(Ok(_)) => serde_json::Map::new(),
            Ok(Err(error)) => Self::failure(format!("the reply could not be written: {error}")),
            Err(error) => Self::failure(error),
        };
        reply.entry("ok").or_insert(json!(true));
        reply.insert("id".into(), id);
        Value::Object(reply).to_string()
    }

    fn failure(error: String) -> serde_json::Map<String, Value> {
        let mut fields = serde_json::Map::new();
        fields.insert("ok".into(), json!(false));
        fields.insert("error".into(), json!(error));
        fields
    }

    async fn run(self: Arc<Self>, op: Op) -> Result<Reply, String> {
        match op {
            Op::Load {
                app,
                lock,
                components,
                variables,
                limits,
                port,
            } => {
                let limits = limits.into_limits(self.max_memory_bytes, self.max_instances)?;
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
                Ok(Reply::Removed { removed })
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
                Ok(Reply::Done {})
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
                Ok(Reply::Stats(Box::new(StatsReply {
                    apps: stats,
                    apps_in_memory: crate::app::in_memory(),
                    memory_budget: MemoryBudget {
                        limit_bytes: self.loader.shared.budget.limit(),
                        used_bytes: self.loader.shared.budget.used(),
                    },
                    threads: tokio::runtime::Handle::current().metrics().num_workers(),
                })))
            }
            Op::Prune => Ok(Reply::Removed {
                removed: self.prune(),
            }),
        }
    }

    async fn load(self: Arc<Self>, request: LoadRequest, port: u16) -> Result<Reply, String> {
        let id = request.app.clone();
        let started = std::time::Instant::now();
        let slot = Slot::load(&self.loader, request).await?;
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
            return Ok(Reply::Loaded {
                url: format!("http://127.0.0.1:{port}"),
            });
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
        Ok(Reply::Loaded {
            url: format!("http://127.0.0.1:{port}"),
        })
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
