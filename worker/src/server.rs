//! One application's loopback port: routes each request to its component and runs it in a
//! fresh instance, inside the application's bounds (deadline, memory, bodies).

use crate::admission::Refused;
use crate::app::{App, Handler};
use crate::guest_output::GuestOutput;
use crate::limits::{CappedRequestBody, CappedResponseBody, MemoryLimiter};
use crate::log;
use crate::outbound::OutboundHooks;
use crate::routes::RouteMatch;
use crate::sandbox::Host;
use crate::slot::Serving;
use crate::stats::{CpuCharged, Stats};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use wasmtime::{PoolConcurrencyLimitError, Store, Trap, UpdateDeadline};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;

pub type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Accepts until the task is aborted (`unload`); aborting drops the connections with it.
/// Each request takes the application from the slot serving now (a redeploy swaps it),
/// loading it again when it is idle: a kept-alive connection does not keep an idle
/// application in memory, nor an old version.
pub async fn serve(listener: TcpListener, serving: Arc<Serving>) {
    let port = listener.local_addr().map_or(0, |a| a.port());
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, client)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let serving = serving.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let slot = serving.slot();
                        let host = request.headers().get(http::header::HOST).map(HeaderValue::as_bytes);
                        let host_allowed = crate::host::allowed(host, port);
                        async move {
                            if !host_allowed {
                                Stats::add(&slot.stats.host_refusals, 1);
                                return Ok(host_refused());
                            }
                            let answer = match slot.app().await {
                                Ok(app) => handle(app, request, client).await,
                                Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "the application could not be loaded\n"),
                            };
                            Ok::<_, std::convert::Infallible>(answer)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            // Finished connections are reaped so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A name other than loopback's (`host.rs`): the request may come from a rebinding page.
fn host_refused() -> Response<Body> {
    text(
        StatusCode::BAD_REQUEST,
        "this port answers only Host localhost, 127.0.0.1, [::1] or NAME.localhost, with its port or none\n",
    )
}

pub fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    response
}

/// How an instance's run ended.
pub enum Outcome {
    Done,
    Timeout,
    MemoryLimit,
    /// No instance left in the pool (`--max-instances`, all applications together).
    PoolFull,
    Trap(String),
}

/// How a run that failed ended: the instance may not have started (the pool is full).
pub fn failure(e: &wasmtime::Error, memory_refused: bool) -> Outcome {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        Outcome::Timeout
    } else if e.downcast_ref::<PoolConcurrencyLimitError>().is_some() {
        Outcome::PoolFull
    } else if memory_refused {
        Outcome::MemoryLimit
    } else {
        Outcome::Trap(format!("{e:?}"))
    }
}

/// 429 past the application's queue (its own flood, nobody else's), 503 after a wait as
/// long as its deadline; both say when to come back.
fn busy(app: &App, refused: &Refused) -> Response<Body> {
    Stats::add(&app.stats.busy_refusals, 1);
    let limits = app.limits;
    let mut response = match refused {
        Refused::Full => text(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "the application has {} requests running and {} waiting, its most\n",
                limits.max_concurrent_requests, limits.max_queued_requests
            ),
        ),
        Refused::WaitedTooLong => text(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "the application had no free turn within {} ms\n",
                limits.request_timeout.as_millis()
            ),
        ),
    };
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

pub fn pool_full() -> Response<Body> {
    let mut response = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "every instance of the worker is in use\n",
    );
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

async fn handle(
    app: Arc<App>,
    mut request: Request<Incoming>,
    client: SocketAddr,
) -> Response<Body> {
    let path = request.uri().path().to_string();
    let Some(found) = app.router.find(&path) else {
        Stats::add(&app.stats.not_found, 1);
        return text(StatusCode::NOT_FOUND, "no route\n");
    };
    let Some(component) = app.components.get(&found.component).cloned() else {
        return text(StatusCode::NOT_FOUND, "no route\n");
    };
    let limits = app.limits;
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_request_body_bytes) {
        Stats::add(&app.stats.body_refusals, 1);
        return too_large(limits.max_request_body_bytes);
    }
    // The turn is taken before anything of the instance exists: a waiting request holds none.
    let turn = match app.admission.admit().await {
        Ok(turn) => turn,
        Err(refused) => return busy(&app, &refused),
    };
    add_spin_headers(&mut request, &found, client);
    let pre = match &component.handler {
        Handler::Http(pre) => pre.clone(),
        Handler::Wagi(wagi) => {
            let id = component.id.clone();
            // WAGI's instance ends before its answer is made: the turn is held until then.
            let answer = crate::wagi::handle(app.clone(), id, wagi, request, &found, client).await;
            drop(turn);
            return answer;
        }
    };
    Stats::add(&app.stats.requests, 1);

    let tripped = Arc::new(AtomicBool::new(false));
    let (parts, body) = request.into_parts();
    let body = CappedRequestBody {
        inner: body,
        remaining: limits.max_request_body_bytes,
        cap: limits.max_request_body_bytes,
        tripped: tripped.clone(),
    };
    let request = Request::from_parts(parts, body);

    let deadline = Instant::now() + limits.request_timeout;
    let stdout = GuestOutput::default();
    let stderr = GuestOutput::default();
    let mut store = Store::new(
        pre.engine(),
        Host::new(
            OutboundHooks {
                app: app.id.clone(),
                component: component.id.clone(),
                allowed: component.allowed.clone(),
                policy: app.policy.clone(),
            },
            MemoryLimiter::new(limits.memory_bytes),
            component.variables.clone(),
            stdout.clone(),
            stderr.clone(),
        ),
    );
    store.limiter(|host| &mut host.limiter);
    bound_in_time(&mut store, deadline);

    let (sender, receiver) = tokio::sync::oneshot::channel();
    let resources = store
        .data_mut()
        .http()
        .new_incoming_request(Scheme::Http, request)
        .and_then(|req| {
            let out = store.data_mut().http().new_response_outparam(sender)?;
            Ok((req, out))
        });
    let (req, out) = match resources {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
    };

    let run = run_instance(store, pre, req, out, deadline, app.stats.clone());
    let task = tokio::spawn(CpuCharged {
        inner: Box::pin(run),
        stats: app.stats.clone(),
    });
    let app_for_end = app.clone();
    let component_id = component.id.clone();
    let finished = tokio::spawn(async move {
        let outcome = task.await.unwrap_or_else(|e| Outcome::Trap(e.to_string()));
        // The instance is gone: the next request of the application may have its turn.
        drop(turn);
        record(&app_for_end, &component_id, &outcome);
        stdout.emit(&app_for_end.id, &component_id, "stdout");
        stderr.emit(&app_for_end.id, &component_id, "stderr");
        outcome
    });

    match receiver.await {
        Ok(Ok(response)) => {
            if tripped.load(Ordering::Relaxed) {
                return too_large(limits.max_request_body_bytes);
            }
            respond(response, &app, limits.max_response_body_bytes)
        }
        Ok(Err(code)) => {
            log::warn(
                "the component answered an error",
                json!({"app": &*app.id, "component": &*component.id, "code": format!("{code:?}")}),
            );
            text(StatusCode::INTERNAL_SERVER_ERROR, "the function failed\n")
        }
        // The instance ended without answering: its outcome says why.
        Err(_) => match finished.await {
            _ if tripped.load(Ordering::Relaxed) => too_large(limits.max_request_body_bytes),
            Ok(Outcome::Timeout) => timed_out(limits.request_timeout),
            Ok(Outcome::PoolFull) => pool_full(),
            _ => text(StatusCode::INTERNAL_SERVER_ERROR, "the function failed\n"),
        },
    }
}

/// Every tick the guest gives its thread back (other requests run) and the deadline is
/// checked; past it the guest traps wherever it is.
pub fn bound_in_time<T: 'static>(store: &mut Store<T>, deadline: Instant) {
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline {
            Err(Trap::Interrupt.into())
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
}

pub fn timed_out(timeout: std::time::Duration) -> Response<Body> {
    text(
        StatusCode::GATEWAY_TIMEOUT,
        &format!(
            "the function did not answer within {} ms\n",
            timeout.as_millis()
        ),
    )
}

async fn run_instance(
    mut store: Store<Host>,
    pre: ProxyPre<Host>,
    req: wasmtime::component::Resource<wasmtime_wasi_http::p2::types::HostIncomingRequest>,
    out: wasmtime::component::Resource<wasmtime_wasi_http::p2::types::HostResponseOutparam>,
    deadline: Instant,
    stats: Arc<Stats>,
) -> Outcome {
    let started = Instant::now();
    let call = async {
        let proxy = pre.instantiate_async(&mut store).await?;
        proxy
            .wasi_http_incoming_handler()
            .call_handle(&mut store, req, out)
            .await
    };
    // The epoch stops a guest that computes; this stops one that waits (on outgoing I/O).
    let result = tokio::time::timeout_at(deadline.into(), call).await;
    Stats::add(&stats.wall_ns, started.elapsed().as_nanos() as u64);
    match result {
        Err(_) => Outcome::Timeout,
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(e)) => failure(&e, store.data().limiter.refused),
    }
}

pub fn record(app: &App, component: &str, outcome: &Outcome) {
    let (counter, what, detail) = match outcome {
        Outcome::Done => return,
        Outcome::Timeout => (&app.stats.timeouts, "deadline", None),
        Outcome::MemoryLimit => (&app.stats.memory_refusals, "memory limit", None),
        Outcome::PoolFull => (&app.stats.pool_refusals, "instance pool full", None),
        Outcome::Trap(e) => (&app.stats.traps, "trap", Some(e.as_str())),
    };
    Stats::add(counter, 1);
    log::warn(
        "the instance was stopped",
        json!({"app": &*app.id, "component": component, "reason": what, "err": detail}),
    );
}

pub fn too_large(cap: u64) -> Response<Body> {
    let mut response = text(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("request body larger than {cap} bytes\n"),
    );
    // The rest of the body is not read: the connection cannot carry another request.
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn respond(
    response: Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>,
    app: &App,
    cap: u64,
) -> Response<Body> {
    let declared = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap) {
        Stats::add(&app.stats.response_cuts, 1);
        return text(
            StatusCode::BAD_GATEWAY,
            "the function's response is larger than allowed\n",
        );
    }
    let stats = app.stats.clone();
    response.map(move |body| {
        CappedResponseBody {
            inner: body,
            remaining: cap,
            on_cut: Some(Box::new(move || Stats::add(&stats.response_cuts, 1))),
        }
        .boxed_unsync()
    })
}

fn add_spin_headers(request: &mut Request<Incoming>, found: &RouteMatch, client: SocketAddr) {
    let host = request
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let path_and_query = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let headers = request.headers_mut();
    if !headers.contains_key(http::header::HOST) {
        // wasi:http needs an authority; HTTP/1.0 clients may send none.
        headers.insert(http::header::HOST, HeaderValue::from_static("127.0.0.1"));
    }
    let pairs = [
        ("spin-full-url", format!("http://{host}{path_and_query}")),
        ("spin-path-info", found.path_info.clone()),
        ("spin-matched-route", found.route.clone()),
        ("spin-component-route", found.base.clone()),
        ("spin-raw-component-route", found.route.clone()),
        ("spin-base-path", "/".to_string()),
        ("spin-client-addr", client.to_string()),
    ];
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}
