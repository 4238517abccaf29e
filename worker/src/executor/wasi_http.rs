//! Spin's default executor: the component exports wasi:http's `incoming-handler`, gets the
//! request as a wasi:http resource and answers through its response outparam, possibly before
//! its instance ends (a streamed body is written while it runs).

use super::outcome::{answer, record};
use super::run::{Limited, sandbox};
use super::{Answer, Executor, Routed};
use crate::answers::{self, Body, text, too_large};
use crate::guest_output::GuestOutput;
use crate::limits::{CappedRequestBody, CappedResponseBody, MemoryLimiter};
use crate::log;
use crate::outbound::{Outbound, OutboundHooks};
use crate::sandbox::Host;
use crate::stats::Stats;
use crate::trace_context;
use crate::variables::ComponentVariables;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use wasmtime::component::{Component, Linker};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;

struct WasiHttp {
    pre: ProxyPre<Host>,
    variables: ComponentVariables,
    /// What its outgoing requests may reach, and how many may be in flight.
    outbound: Arc<Outbound>,
}

/// WASI 0.2 (its sandbox is `sandbox::Host`), wasi:http and Spin's variables.
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<Host>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    crate::spin_variables::add_to_linker(&mut linker)?;
    Ok(linker)
}

pub fn prepare(
    linker: &Linker<Host>,
    component: &Component,
    variables: ComponentVariables,
    outbound: Arc<Outbound>,
) -> wasmtime::Result<Box<dyn Executor>> {
    let pre = linker.instantiate_pre(component).and_then(ProxyPre::new)?;
    Ok(Box::new(WasiHttp {
        pre,
        variables,
        outbound,
    }))
}

impl Limited for Host {
    fn limiter(&self) -> &MemoryLimiter {
        &self.limiter
    }

    fn limiter_mut(&mut self) -> &mut MemoryLimiter {
        &mut self.limiter
    }
}

impl Executor for WasiHttp {
    fn serve(&self, routed: Routed) -> Answer<'_> {
        Box::pin(self.handle(routed))
    }
}

impl WasiHttp {
    async fn handle(&self, routed: Routed) -> Response<Body> {
        let Routed {
            scope,
            component,
            request,
            turn,
            span,
            ..
        } = routed;
        let limits = scope.limits;
        let tripped = Arc::new(AtomicBool::new(false));
        let traceparent = trace_context::incoming(request.headers());
        let (parts, body) = request.into_parts();
        let body = CappedRequestBody {
            inner: body,
            remaining: limits.max_request_body_bytes,
            cap: limits.max_request_body_bytes,
            tripped: tripped.clone(),
        };
        let request = Request::from_parts(parts, body);

        let stdout = GuestOutput::default();
        let stderr = GuestOutput::default();
        let mut sandbox = sandbox(
            &scope,
            span.clone(),
            self.pre.engine(),
            scope.charge(),
            |limiter| {
                Host::new(
                    OutboundHooks::new(self.outbound.clone()).with_traceparent(traceparent),
                    limiter,
                    self.variables.clone(),
                    stdout.clone(),
                    stderr.clone(),
                )
            },
        );

        let (sender, receiver) = tokio::sync::oneshot::channel();
        let store = &mut sandbox.store;
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

        let pre = self.pre.clone();
        let timed = span.clone();
        let run = sandbox.run(Box::new(move |store| {
            Box::pin(async move {
                let started = timed.as_ref().map(|_| std::time::Instant::now());
                let proxy = pre.instantiate_async(&mut *store).await?;
                if let (Some(span), Some(started)) = (&timed, started) {
                    span.instance_started(started.elapsed());
                }
                proxy
                    .wasi_http_incoming_handler()
                    .call_handle(&mut *store, req, out)
                    .await
            })
        }));
        let (ended, id) = (scope.clone(), component.clone());
        let finished = tokio::spawn(async move {
            let outcome = run.await;
            // The instance is gone: the next request of the application may have its turn.
            drop(turn);
            record(&ended, &id, &outcome, span.as_ref());
            stdout.emit(&ended.id, &id, "stdout");
            stderr.emit(&ended.id, &id, "stderr");
            outcome
        });

        match receiver.await {
            Ok(Ok(response)) => {
                if tripped.load(Ordering::Relaxed) {
                    return too_large(limits.max_request_body_bytes);
                }
                respond(response, &scope.stats, limits.max_response_body_bytes)
            }
            Ok(Err(code)) => {
                log::warn(
                    "the component answered an error",
                    json!({"app": &*scope.id, "component": &*component, "code": format!("{code:?}")}),
                );
                answers::failed()
            }
            // The instance ended without answering: its outcome says why.
            Err(_) => match finished.await {
                _ if tripped.load(Ordering::Relaxed) => too_large(limits.max_request_body_bytes),
                Ok(outcome) => {
                    answer(&outcome, &limits, scope.budget.limit()).unwrap_or_else(answers::failed)
                }
                Err(_) => answers::failed(),
            },
        }
    }
}

/// The component's response, its body capped as it streams.
fn respond(
    response: Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>,
    stats: &Arc<Stats>,
    cap: u64,
) -> Response<Body> {
    let declared = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap) {
        Stats::add(&stats.response_cuts, 1);
        return answers::response_too_large();
    }
    let stats = stats.clone();
    response.map(move |body| {
        CappedResponseBody {
            inner: body,
            remaining: cap,
            on_cut: Some(Box::new(move || Stats::add(&stats.response_cuts, 1))),
        }
        .boxed_unsync()
    })
}
