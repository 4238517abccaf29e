//! Spin's WAGI executor (`executor = { type = "wagi" }`): a wasip1 command module gets the
//! request as CGI does (the request's variables as its environment, the query as arguments,
//! the body on stdin) and answers on stdout: header lines, a blank line, the body. Only the
//! request's own variables are in that environment: nothing of the worker's.

mod cgi;
mod output;

use crate::answers::{self, Body, too_large};
use crate::app::App;
use crate::budget::Charge;
use crate::guest_output::GuestOutput;
use crate::limits::MemoryLimiter;
use crate::outcome::{Outcome, failure, record};
use crate::routes::RouteMatch;
use crate::stats::Stats;
use crate::turns::{CpuCharged, Held, bound_in_time};
use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::{InstancePre, Linker, Store};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;

pub struct WagiHost {
    wasi: WasiP1Ctx,
    limiter: MemoryLimiter,
}

pub struct WagiRuntime {
    pub pre: InstancePre<WagiHost>,
    pub entrypoint: String,
    pub argv: String,
}

/// WASI preview 1 only: a WAGI module has no other import.
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<WagiHost>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_async(&mut linker, |host: &mut WagiHost| &mut host.wasi)?;
    Ok(linker)
}

pub async fn handle(
    app: Arc<App>,
    component: Arc<str>,
    wagi: &WagiRuntime,
    request: Request<Incoming>,
    found: &RouteMatch,
    client: SocketAddr,
) -> Response<Body> {
    let limits = app.limits;
    let budget = app.budget.limit();
    // The request's bodies and its instance's memories, given back when the request ends.
    let charge = Charge::new(&app.budget, &app.share);
    let (parts, body) = request.into_parts();
    // A CGI program reads its body from stdin to the end: it is gathered first, bounded.
    let body = match gather(body, limits.max_request_body_bytes, &charge).await {
        Ok(body) => body,
        Err(Gathered::TooLarge) => {
            Stats::add(&app.stats.body_refusals, 1);
            return too_large(limits.max_request_body_bytes);
        }
        Err(Gathered::OverBudget) => {
            Stats::add(&app.stats.budget_refusals, 1);
            return answers::budget_in_use(budget);
        }
        Err(Gathered::Broken) => {
            return answers::text(
                http::StatusCode::BAD_REQUEST,
                "the request body ended early\n",
            );
        }
    };
    let env = cgi::cgi_environment(&parts, found, client, body.len());
    let argv = cgi::arguments(&wagi.argv, found, parts.uri.query().unwrap_or(""));
    let stdout = output::Output::new(
        limits.max_response_body_bytes as usize + 64 * 1024,
        charge.clone(),
    );
    let stderr = GuestOutput::default();
    let wasi = WasiCtx::builder()
        .stdin(MemoryInputPipe::new(body))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .envs(&env)
        .args(&argv)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }))
        .build_p1();
    let mut store = Store::new(
        wagi.pre.module().engine(),
        WagiHost {
            wasi,
            limiter: MemoryLimiter::new(limits.memory_bytes, charge.clone()),
        },
    );
    store.limiter(|host| &mut host.limiter);
    let deadline = Instant::now() + limits.request_timeout;
    let held = Arc::new(Held::default());
    bound_in_time(&mut store, deadline, app.turns.clone(), held.clone());
    Stats::add(&app.stats.requests, 1);

    let pre = wagi.pre.clone();
    let entrypoint = wagi.entrypoint.clone();
    let stats = app.stats.clone();
    let run = async move {
        let started = Instant::now();
        let call = async {
            let instance = pre.instantiate_async(&mut store).await?;
            let start = instance.get_typed_func::<(), ()>(&mut store, &entrypoint)?;
            start.call_async(&mut store, ()).await
        };
        let result = tokio::time::timeout_at(deadline.into(), call).await;
        Stats::add(&stats.wall_ns, started.elapsed().as_nanos() as u64);
        let outcome = match result {
            Err(_) => Outcome::Timeout,
            Ok(Ok(())) => Outcome::Done,
            Ok(Err(e)) if e.downcast_ref::<I32Exit>().is_some_and(|exit| exit.0 == 0) => {
                Outcome::Done
            }
            Ok(Err(e)) => failure(&e, &store.data().limiter),
        };
        let used = store.data().limiter.used;
        crate::limits::release(store, used);
        outcome
    };
    let mut outcome = tokio::spawn(CpuCharged {
        inner: Box::pin(run),
        stats: app.stats.clone(),
        held,
    })
    .await
    .unwrap_or_else(|e| Outcome::Trap(e.to_string()));
    // A write refused by the budget, which the program went past: its output is not whole.
    if matches!(outcome, Outcome::Done) && charge.refused().is_some() {
        outcome = Outcome::MemoryBudget;
    }
    record(&app, &component, &outcome);
    stderr.emit(&app.id, &component, "stderr");
    if let Some(answer) = crate::outcome::answer(&outcome, &limits, budget) {
        return answer;
    }
    let output = stdout.take();
    if output.len() as u64 > limits.max_response_body_bytes {
        Stats::add(&app.stats.response_cuts, 1);
        return answers::response_too_large();
    }
    cgi::parse_output(&output).unwrap_or_else(|e| {
        crate::log::warn(
            "the WAGI output is not a CGI response",
            serde_json::json!({"app": &*app.id, "component": &*component, "err": e}),
        );
        answers::failed()
    })
}

enum Gathered {
    TooLarge,
    OverBudget,
    Broken,
}

/// The whole request body, at most `cap` bytes, each part charged to the budget as it comes.
async fn gather(mut body: Incoming, cap: u64, charge: &Charge) -> Result<Bytes, Gathered> {
    let mut gathered = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Gathered::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if gathered.len() as u64 + data.len() as u64 > cap {
            return Err(Gathered::TooLarge);
        }
        charge
            .take(data.len() as u64)
            .map_err(|_| Gathered::OverBudget)?;
        gathered.extend_from_slice(&data);
    }
    Ok(gathered.freeze())
}
