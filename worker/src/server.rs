//! One application's loopback port: routes each request to its component and runs it in a
//! fresh instance, inside the application's bounds (deadline, memory, bodies).

use crate::admission::Refused;
use crate::answers::{self, Body, text, too_large};
use crate::app::{App, Handler};
use crate::budget::Charge;
use crate::guest_output::GuestOutput;
use crate::limits::{CappedRequestBody, CappedResponseBody, MemoryLimiter};
use crate::log;
use crate::outbound::OutboundHooks;
use crate::outcome::{Outcome, failure, record};
use crate::routes::RouteMatch;
use crate::sandbox::Host;
use crate::slot::Serving;
use crate::stats::Stats;
use crate::turns::{CpuCharged, Held, bound_in_time};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use wasmtime::Store;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;

/// The first pause after a failed accept, doubled on each failure in a row up to `ACCEPT_MAX_PAUSE`.
const ACCEPT_FIRST_PAUSE: Duration = Duration::from_millis(5);
const ACCEPT_MAX_PAUSE: Duration = Duration::from_secs(1);

/// Accepts until the task is aborted (`unload`); aborting drops the connections with it.
/// Each request takes the application from the slot serving now (a redeploy swaps it),
/// loading it again when it is idle: a kept-alive connection does not keep an idle
/// application in memory, nor an old version.
pub async fn serve(listener: TcpListener, serving: Arc<Serving>) {
    let port = listener.local_addr().map_or(0, |a| a.port());
    let mut connections = JoinSet::new();
    let mut pause = ACCEPT_FIRST_PAUSE;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, client) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors (EMFILE) the listener stays readable, and
                        // accepting again at once spins a core: back off until one succeeds.
                        log::warn("accept failed", json!({"port": port, "err": e.to_string(), "pauseMs": pause.as_millis() as u64}));
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(ACCEPT_MAX_PAUSE);
                        continue;
                    }
                };
                pause = ACCEPT_FIRST_PAUSE;
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
                                return Ok(answers::host_refused());
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

/// 429 past the application's queue (its own flood, nobody else's), 503 after a wait as
/// long as its deadline; both say when to come back.
fn busy(app: &App, refused: &Refused) -> Response<Body> {
    Stats::add(&app.stats.busy_refusals, 1);
    let limits = app.limits;
    match refused {
        Refused::Full => answers::retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "the application has {} requests running and {} waiting, its most\n",
                limits.max_concurrent_requests, limits.max_queued_requests
            ),
        ),
        Refused::WaitedTooLong => answers::retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "the application had no free turn within {} ms\n",
                limits.request_timeout.as_millis()
            ),
        ),
    }
}

async fn handle(app: Arc<App>, request: Request<Incoming>, client: SocketAddr) -> Response<Body> {
    let path = request.uri().path().to_string();
    let Some(found) = app.router.find(&path) else {
        Stats::add(&app.stats.not_found, 1);
        return text(StatusCode::NOT_FOUND, "no route\n");
    };
    let Some(component) = app.components.get(&found.component).cloned() else {
        return text(StatusCode::NOT_FOUND, "no route\n");
    };
    let started = Instant::now();
    let answer = handle_component(app, component.clone(), request, found, client).await;
    // Until the response's head, as a span around the handler would measure it.
    component
        .stats
        .observe(started.elapsed(), answer.status().is_server_error());
    answer
}

async fn handle_component(
    app: Arc<App>,
    component: Arc<crate::app::ComponentRuntime>,
    mut request: Request<Incoming>,
    found: RouteMatch,
    client: SocketAddr,
) -> Response<Body> {
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
    let held = Arc::new(Held::default());
    let mut store = Store::new(
        pre.engine(),
        Host::new(
            OutboundHooks::new(component.outbound.clone()),
            MemoryLimiter::new(limits.memory_bytes, Charge::new(&app.budget, &app.share)),
            component.variables.clone(),
            stdout.clone(),
            stderr.clone(),
        ),
    );
    store.limiter(|host| &mut host.limiter);
    bound_in_time(&mut store, deadline, app.turns.clone(), held.clone());

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
        held,
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
            answers::failed()
        }
        // The instance ended without answering: its outcome says why.
        Err(_) => match finished.await {
            _ if tripped.load(Ordering::Relaxed) => too_large(limits.max_request_body_bytes),
            Ok(outcome) => crate::outcome::answer(&outcome, &limits, app.budget.limit())
                .unwrap_or_else(answers::failed),
            Err(_) => answers::failed(),
        },
    }
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
    let outcome = match result {
        Err(_) => Outcome::Timeout,
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(e)) => failure(&e, &store.data().limiter),
    };
    let used = store.data().limiter.used;
    crate::limits::release(store, used);
    outcome
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
        return answers::response_too_large();
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
