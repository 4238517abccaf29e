//! Spin's WAGI executor (`executor = { type = "wagi" }`): a wasip1 command module gets the
//! request as CGI does (the request's variables as its environment, the query as arguments,
//! the body on stdin) and answers on stdout: header lines, a blank line, the body. Only the
//! request's own variables are in that environment: nothing of the worker's.

mod body;
mod cgi;
mod output;

use super::outcome::{Outcome, answer, record};
use super::run::{Limited, sandbox};
use super::{Answer, Executor, Routed};
use crate::answers::{self, Body, too_large};
use crate::guest_output::GuestOutput;
use crate::limits::MemoryLimiter;
use crate::stats::Stats;
use body::{Gathered, gather};
use http::Response;
use wasmtime::{InstancePre, Linker, Module};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;

pub struct WagiHost {
    wasi: WasiP1Ctx,
    limiter: MemoryLimiter,
}

impl Limited for WagiHost {
    fn limiter(&self) -> &MemoryLimiter {
        &self.limiter
    }

    fn limiter_mut(&mut self) -> &mut MemoryLimiter {
        &mut self.limiter
    }
}

struct Wagi {
    pre: InstancePre<WagiHost>,
    entrypoint: String,
    argv: String,
}

/// WASI preview 1 only: a WAGI module has no other import.
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<WagiHost>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_async(&mut linker, |host: &mut WagiHost| &mut host.wasi)?;
    Ok(linker)
}

pub fn prepare(
    linker: &Linker<WagiHost>,
    module: &Module,
    entrypoint: &str,
    argv: &str,
) -> wasmtime::Result<Box<dyn Executor>> {
    Ok(Box::new(Wagi {
        pre: linker.instantiate_pre(module)?,
        entrypoint: entrypoint.to_string(),
        argv: argv.to_string(),
    }))
}

impl Executor for Wagi {
    fn serve(&self, routed: Routed) -> Answer<'_> {
        Box::pin(self.handle(routed))
    }
}

impl Wagi {
    async fn handle(&self, routed: Routed) -> Response<Body> {
        let Routed {
            scope,
            component,
            request,
            found,
            client,
            // The instance ends before its answer is made: the turn is held until then.
            turn: _turn,
            span,
        } = routed;
        let limits = scope.limits;
        let budget = scope.budget.limit();
        // The request's bodies and its instance's memories, given back when the request ends.
        let charge = scope.charge();
        let (parts, body) = request.into_parts();
        // A CGI program reads its body from stdin to the end: it is gathered first, bounded.
        let body = match gather(body, limits.max_request_body_bytes, &charge).await {
            Ok(body) => body,
            Err(Gathered::TooLarge) => {
                Stats::add(&scope.stats.body_refusals, 1);
                return too_large(limits.max_request_body_bytes);
            }
            Err(Gathered::OverBudget) => {
                Stats::add(&scope.stats.budget_refusals, 1);
                return answers::budget_in_use(budget);
            }
            Err(Gathered::Broken) => {
                return answers::text(
                    http::StatusCode::BAD_REQUEST,
                    "the request body ended early\n",
                );
            }
        };
        let env = cgi::cgi_environment(&parts, &found, client, body.len());
        let argv = cgi::arguments(&self.argv, &found, parts.uri.query().unwrap_or(""));
        let stdout = output::Output::new(
            limits.max_response_body_bytes as usize + 64 * 1024,
            charge.clone(),
        );
        let stderr = GuestOutput::default();
        let wasi = crate::sandbox::closed_wasi()
            .stdin(MemoryInputPipe::new(body))
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .envs(&env)
            .args(&argv)
            .build_p1();
        let sandbox = sandbox(
            &scope,
            span.clone(),
            self.pre.module().engine(),
            charge.clone(),
            |limiter| WagiHost { wasi, limiter },
        );
        let (pre, entrypoint) = (self.pre.clone(), self.entrypoint.clone());
        let timed = span.clone();
        let mut outcome = sandbox
            .run(Box::new(move |store| {
                Box::pin(async move {
                    let call = async {
                        let started = timed.as_ref().map(|_| std::time::Instant::now());
                        let instance = pre.instantiate_async(&mut *store).await?;
                        if let (Some(span), Some(started)) = (&timed, started) {
                            span.instance_started(started.elapsed());
                        }
                        let start = instance.get_typed_func::<(), ()>(&mut *store, &entrypoint)?;
                        start.call_async(&mut *store, ()).await
                    };
                    match call.await {
                        // A program's `exit(0)` is its normal end.
                        Err(e) if e.downcast_ref::<I32Exit>().is_some_and(|exit| exit.0 == 0) => {
                            Ok(())
                        }
                        ended => ended,
                    }
                })
            }))
            .await;
        // A write refused by the budget, which the program went past: its output is not whole.
        if matches!(outcome, Outcome::Done) && charge.refused().is_some() {
            outcome = Outcome::MemoryBudget;
        }
        record(&scope, &component, &outcome, span.as_ref());
        stderr.emit(&scope.id, &component, "stderr");
        if let Some(answer) = answer(&outcome, &limits, budget) {
            return answer;
        }
        let output = stdout.take();
        if output.len() as u64 > limits.max_response_body_bytes {
            Stats::add(&scope.stats.response_cuts, 1);
            return answers::response_too_large();
        }
        cgi::parse_output(&output).unwrap_or_else(|e| {
            crate::log::warn(
                "the WAGI output is not a CGI response",
                serde_json::json!({"app": &*scope.id, "component": &*component, "err": e.to_string()}),
            );
            answers::failed()
        })
    }
}
