//! How spans leave the worker: the OTLP exporter's HTTP client, on hyper (already the worker's)
//! rather than reqwest. The SDK's batch processor exports from a thread of its own and waits
//! there; this client runs each POST on a single-threaded tokio runtime of its own on that
//! thread, so an export never takes a turn on the threads serving requests.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError};
use std::time::Duration;

/// OTLP's default export timeout: a collector that hangs costs one batch, not the thread.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A collector's answer is a few bytes (a partial success at most): anything longer is cut.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub struct Client {
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("telemetry::export::Client")
    }
}

impl Client {
    pub fn new() -> std::io::Result<Client> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Client { runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        // Called on the batch processor's own thread, which runs no tokio runtime.
        self.runtime
            .block_on(async { tokio::time::timeout(TIMEOUT, post(request)).await })
            .map_err(|_| HttpError::from("the OTLP endpoint did not answer within 10 s"))?
    }
}

async fn post(request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") {
        return Err("only http:// OTLP endpoints are supported".into());
    }
    let host = uri.host().ok_or("the OTLP endpoint has no host")?;
    let port = uri.port_u16().unwrap_or(80);
    // A name is resolved on this runtime's blocking threads, never the serving ones.
    let stream = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port)).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move { connection.await.ok() });
    let (mut parts, body) = request.into_parts();
    let authority = uri
        .authority()
        .map_or(host.to_string(), |a| a.as_str().to_string());
    parts.headers.insert(http::header::HOST, authority.parse()?);
    parts.uri = uri.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    let response = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, MAX_ANSWER_BYTES)
        .collect()
        .await?
        .to_bytes();
    Ok(Response::from_parts(parts, body))
}
