//! One application's loopback port: routes each request to its component and runs it in a
//! fresh instance, inside the application's bounds (deadline, memory, bodies).

use crate::admission::Refused;
use crate::answers::{self, Body, text, too_large};
use crate::app::{App, ComponentRuntime};
use crate::executor::Routed;
use crate::log;
use crate::routes::RouteMatch;
use crate::slot::Serving;
use crate::stats::Stats;
use crate::telemetry::{self, RequestSpan};
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

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
                            let span = telemetry::begin(&slot.id, request.method(), request.headers());
                            let answer = match app_for(&slot, span.as_ref()).await {
                                Ok(app) => handle(app, request, client, span.clone()).await,
                                Err(_) => {
                                    if let Some(span) = &span {
                                        span.ended("unavailable");
                                    }
                                    text(StatusCode::SERVICE_UNAVAILABLE, "the application could not be loaded\n")
                                }
                            };
                            if let Some(span) = &span {
                                span.responded(answer.status().as_u16());
                            }
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

/// The slot's application, noting on the span when it was idle and loaded for this request.
async fn app_for(
    slot: &crate::slot::Slot,
    span: Option<&RequestSpan>,
) -> Result<Arc<App>, crate::load_error::LoadError> {
    let Some(span) = span else {
        return slot.app().await;
    };
    let idle = !slot.is_loaded();
    let started = Instant::now();
    let app = slot.app().await;
    if idle {
        span.woken(started.elapsed());
    }
    app
}

/// 429 past the application's queue (its own flood, nobody else's), 503 after a wait as
/// long as its deadline; both say when to come back.
fn busy(app: &App, refused: &Refused) -> Response<Body> {
    Stats::add(&app.scope.stats.busy_refusals, 1);
    let limits = app.scope.limits;
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

async fn handle(
    app: Arc<App>,
    request: Request<Incoming>,
    client: SocketAddr,
    span: Option<RequestSpan>,
) -> Response<Body> {
    let path = request.uri().path().to_string();
    let no_route = |span: &Option<RequestSpan>| {
        if let Some(span) = span {
            span.ended("no_route");
        }
        text(StatusCode::NOT_FOUND, "no route\n")
    };
    let Some(found) = app.router.find(&path) else {
        Stats::add(&app.scope.stats.not_found, 1);
        return no_route(&span);
    };
    let Some(component) = app.components.get(&found.component).cloned() else {
        return no_route(&span);
    };
    if let Some(span) = &span {
        span.routed(&found.component, &found.route);
    }
    let started = Instant::now();
    let answer = handle_component(app, component.clone(), request, found, client, span).await;
    // Until the response's head, as a span around the handler would measure it.
    component
        .stats
        .observe(started.elapsed(), answer.status().is_server_error());
    answer
}

async fn handle_component(
    app: Arc<App>,
    component: Arc<ComponentRuntime>,
    mut request: Request<Incoming>,
    found: RouteMatch,
    client: SocketAddr,
    span: Option<RequestSpan>,
) -> Response<Body> {
    let limits = app.scope.limits;
    let refused = |span: &Option<RequestSpan>| {
        if let Some(span) = span {
            span.ended("refused");
        }
    };
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_request_body_bytes) {
        Stats::add(&app.scope.stats.body_refusals, 1);
        refused(&span);
        return too_large(limits.max_request_body_bytes);
    }
    // The turn is taken before anything of the instance exists: a waiting request holds none.
    let turn = match app.admission.admit().await {
        Ok(turn) => turn,
        Err(why) => {
            refused(&span);
            return busy(&app, &why);
        }
    };
    add_spin_headers(&mut request, &found, client);
    // The guest's parent is the worker's span (whatever the caller sent, or a new trace).
    if let Some(traceparent) = span.as_ref().and_then(RequestSpan::traceparent) {
        request
            .headers_mut()
            .insert(crate::trace_context::TRACEPARENT, traceparent);
    }
    let routed = Routed {
        scope: app.scope.clone(),
        component: component.id.clone(),
        request,
        found,
        client,
        turn,
        span,
    };
    component.executor.serve(routed).await
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
