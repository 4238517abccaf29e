//! Spin's WAGI executor (`executor = { type = "wagi" }`): a wasip1 command module gets the
//! request as CGI does (the request's variables as its environment, the query as arguments,
//! the body on stdin) and answers on stdout: header lines, a blank line, the body. Only the
//! request's own variables are in that environment: nothing of the worker's.

use crate::app::App;
use crate::guest_output::GuestOutput;
use crate::limits::MemoryLimiter;
use crate::routes::RouteMatch;
use crate::server::{Body, Outcome, bound_in_time, record, text, too_large};
use crate::stats::{CpuCharged, Stats};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::{InstancePre, Linker, Store};
use wasmtime_wasi::I32Exit;
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};

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
    let (parts, body) = request.into_parts();
    // A CGI program reads its body from stdin to the end: it is gathered first, bounded.
    let body = match Limited::new(body, limits.max_request_body_bytes as usize)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            Stats::add(&app.stats.body_refusals, 1);
            return too_large(limits.max_request_body_bytes);
        }
    };
    let env = cgi_environment(&parts, found, client, body.len());
    let argv = arguments(&wagi.argv, found, parts.uri.query().unwrap_or(""));
    let stdout = MemoryOutputPipe::new(limits.max_response_body_bytes as usize + 64 * 1024);
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
            limiter: MemoryLimiter::new(limits.memory_bytes),
        },
    );
    store.limiter(|host| &mut host.limiter);
    let deadline = Instant::now() + limits.request_timeout;
    bound_in_time(&mut store, deadline);
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
        match result {
            Err(_) => Outcome::Timeout,
            Ok(Ok(())) => Outcome::Done,
            Ok(Err(e)) if e.downcast_ref::<I32Exit>().is_some_and(|exit| exit.0 == 0) => {
                Outcome::Done
            }
            Ok(Err(e)) => crate::server::failure(&e, store.data().limiter.refused),
        }
    };
    let outcome = tokio::spawn(CpuCharged {
        inner: Box::pin(run),
        stats: app.stats.clone(),
    })
    .await
    .unwrap_or_else(|e| Outcome::Trap(e.to_string()));
    record(&app, &component, &outcome);
    stderr.emit(&app.id, &component, "stderr");
    match outcome {
        Outcome::Done => {}
        Outcome::Timeout => return crate::server::timed_out(limits.request_timeout),
        Outcome::PoolFull => return crate::server::pool_full(),
        _ => return text(StatusCode::INTERNAL_SERVER_ERROR, "the function failed\n"),
    }
    let output = stdout.contents();
    if output.len() as u64 > limits.max_response_body_bytes {
        Stats::add(&app.stats.response_cuts, 1);
        return text(
            StatusCode::BAD_GATEWAY,
            "the function's response is larger than allowed\n",
        );
    }
    parse_output(&output).unwrap_or_else(|e| {
        crate::log::warn(
            "the WAGI output is not a CGI response",
            serde_json::json!({"app": &*app.id, "component": &*component, "err": e}),
        );
        text(StatusCode::INTERNAL_SERVER_ERROR, "the function failed\n")
    })
}

/// The variables WAGI (and Spin's WAGI executor) gives a CGI program.
fn cgi_environment(
    parts: &http::request::Parts,
    found: &RouteMatch,
    client: SocketAddr,
    length: usize,
) -> Vec<(String, String)> {
    let header = |name: &http::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let host = header(&http::header::HOST);
    let (server_name, server_port) = host.rsplit_once(':').unwrap_or((host.as_str(), "80"));
    let full_url = format!(
        "http://{host}{}",
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut env: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter(|(name, _)| *name != http::header::AUTHORIZATION)
        .filter_map(|(name, value)| {
            let key = format!(
                "HTTP_{}",
                name.as_str().to_ascii_uppercase().replace('-', "_")
            );
            Some((key, value.to_str().ok()?.to_string()))
        })
        .collect();
    let fixed = [
        ("AUTH_TYPE", String::new()),
        ("CONTENT_LENGTH", length.to_string()),
        ("CONTENT_TYPE", header(&http::header::CONTENT_TYPE)),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("PATH_INFO", found.path_info.clone()),
        ("PATH_TRANSLATED", found.path_info.clone()),
        ("QUERY_STRING", parts.uri.query().unwrap_or("").into()),
        ("REMOTE_ADDR", client.ip().to_string()),
        ("REMOTE_HOST", client.ip().to_string()),
        ("REMOTE_USER", String::new()),
        ("REQUEST_METHOD", parts.method.to_string()),
        ("SCRIPT_NAME", found.base.clone()),
        ("SERVER_NAME", server_name.to_string()),
        ("SERVER_PORT", server_port.to_string()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ("SERVER_SOFTWARE", "WAGI/1".into()),
        ("X_FULL_URL", full_url),
        ("X_MATCHED_ROUTE", found.route.clone()),
        ("X_RAW_PATH_INFO", found.path_info.clone()),
        ("X_COMPONENT_ROUTE", found.base.clone()),
        ("X_RAW_COMPONENT_ROUTE", found.route.clone()),
        ("X_BASE_PATH", "/".into()),
    ];
    env.extend(fixed.into_iter().map(|(k, v)| (k.to_string(), v)));
    env
}

/// The executor's `argv` template: `${SCRIPT_NAME}` the route, `${ARGS}` the query's parts.
fn arguments(template: &str, found: &RouteMatch, query: &str) -> Vec<String> {
    let args = query
        .split('&')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    template
        .replace("${SCRIPT_NAME}", &found.base)
        .replace("${ARGS}", &args)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Header lines up to a blank line, then the body. `status: 404 Not Found` sets the status;
/// `location` without one is a 302, as CGI has it.
fn parse_output(output: &[u8]) -> Result<Response<Body>, String> {
    let (head_end, body_start) = [&b"\r\n\r\n"[..], &b"\n\n"[..]]
        .iter()
        .filter_map(|sep| {
            output
                .windows(sep.len())
                .position(|w| w == *sep)
                .map(|at| (at, at + sep.len()))
        })
        .min()
        .ok_or("no blank line after the headers")?;
    let head = std::str::from_utf8(&output[..head_end]).map_err(|_| "headers are not UTF-8")?;
    let mut response = Response::new(
        Full::new(Bytes::copy_from_slice(&output[body_start..]))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    let mut status = None;
    for line in head.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "status" {
            let code = value.split_whitespace().next().unwrap_or("");
            status = Some(
                StatusCode::from_bytes(code.as_bytes())
                    .map_err(|_| format!("bad status {value:?}"))?,
            );
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("bad header name {name:?}"))?;
        let value = HeaderValue::from_str(value).map_err(|_| format!("bad value for {name}"))?;
        response.headers_mut().append(name, value);
    }
    let redirect = response.headers().contains_key(http::header::LOCATION);
    *response.status_mut() = status.unwrap_or(if redirect {
        StatusCode::FOUND
    } else {
        StatusCode::OK
    });
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgi_output_is_parsed() {
        let ok = parse_output(b"content-type: text/plain\n\nhello").unwrap();
        assert_eq!(ok.status(), 200);
        assert_eq!(ok.headers()["content-type"], "text/plain");
        let missing =
            parse_output(b"Status: 404 Not Found\r\ncontent-type: text/plain\r\n\r\n").unwrap();
        assert_eq!(missing.status(), 404);
        assert_eq!(parse_output(b"location: /x\n\n").unwrap().status(), 302);
        assert!(parse_output(b"no blank line").is_err());
    }

    #[test]
    fn argv_from_the_template() {
        let found = RouteMatch {
            component: "c".into(),
            route: "/wagi/...".into(),
            base: "/wagi".into(),
            path_info: "/x".into(),
        };
        assert_eq!(
            arguments("${SCRIPT_NAME} ${ARGS}", &found, "a=1&b"),
            ["/wagi", "a=1", "b"]
        );
        assert_eq!(arguments("${SCRIPT_NAME} ${ARGS}", &found, ""), ["/wagi"]);
    }
}
