//! wasmtime-wasi-http's `send_request` hook. The crate's default sender resolves and connects
//! in one step, which leaves no place to look at the addresses a name resolved to; this one
//! resolves first, keeps only the addresses the policy permits, and connects to one of those,
//! so a name that points at loopback or the cluster's network is refused like an IP literal.

use super::address::AddressPolicy;
use super::allowed::AllowedHosts;
use super::caps::{self, Counter};
use super::resolve::{Names, Unresolved};
use crate::log;
use crate::stats::Stats;
use crate::trace_context;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// When a component names no timeout: the request's own deadline bounds it anyway.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendResult = Result<(http::Response<WasiBody>, IoFuture), Error>;

/// Per component, made at load: which component is asking, what it may reach, and the
/// application's count of requests in flight.
pub struct Outbound {
    pub app: Arc<str>,
    pub component: Arc<str>,
    pub allowed: Arc<AllowedHosts>,
    pub policy: Arc<AddressPolicy>,
    pub names: Arc<Names>,
    pub app_in_flight: Arc<Counter>,
    pub stats: Arc<Stats>,
}

/// Per store: its component's `Outbound` and the instance's own count, made at its first
/// outgoing request (most requests make none).
pub struct OutboundHooks {
    target: Arc<Outbound>,
    instance_in_flight: Option<Arc<Counter>>,
    /// The incoming request's trace context, carried on to each outgoing request.
    traceparent: Option<http::HeaderValue>,
}

impl OutboundHooks {
    pub fn new(target: Arc<Outbound>) -> Self {
        OutboundHooks {
            target,
            instance_in_flight: None,
            traceparent: None,
        }
    }

    pub fn with_traceparent(mut self, traceparent: Option<http::HeaderValue>) -> Self {
        self.traceparent = traceparent;
        self
    }
}

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        let target = self.target.clone();
        let instance = self
            .instance_in_flight
            .get_or_insert_with(|| Counter::new(caps::PER_INSTANCE));
        let place = caps::enter(instance, &target.app_in_flight);
        trace_context::propagate(request.headers_mut(), self.traceparent.as_ref());
        Box::new(async move {
            let place = match place {
                Ok(place) => place,
                Err(over) => {
                    Stats::add(&target.stats.outbound_refusals, 1);
                    let host = request.uri().host().unwrap_or("").to_string();
                    let message = over.message();
                    return Err(target.refuse(
                        &host,
                        &message,
                        Error::InternalError(Some(message.clone())),
                    ));
                }
            };
            let (response, io) = target.send(request, options).await?;
            let response = response.map(|body| {
                caps::Held {
                    inner: body,
                    place: Some(place),
                }
                .boxed_unsync()
            });
            Ok((response, io))
        })
    }
}

impl Outbound {
    fn refuse(&self, host: &str, reason: &str, error: Error) -> Error {
        log::warn(
            "outgoing request refused",
            json!({"app": &*self.app, "component": &*self.component, "host": host, "reason": reason}),
        );
        error
    }

    async fn send(
        &self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> SendResult {
        let uri = request.uri().clone();
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(Error::HttpProtocolError),
        };
        let scheme = if tls { "https" } else { "http" };
        let host = uri
            .host()
            .ok_or(Error::HttpRequestUriInvalid)?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        if !self.allowed.allows(scheme, &host, uri.port_u16()) {
            return Err(self.refuse(
                &host,
                "not in allowed_outbound_hosts",
                Error::HttpRequestDenied,
            ));
        }
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let connect_timeout = options
            .and_then(|o| o.connect_timeout)
            .unwrap_or(DEFAULT_TIMEOUT);
        let first_byte_timeout = options
            .and_then(|o| o.first_byte_timeout)
            .unwrap_or(DEFAULT_TIMEOUT);

        let candidates: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => match self.names.lookup(&host, port, connect_timeout).await {
                Ok(found) => found,
                Err(Unresolved::TimedOut) => return Err(Error::DnsTimeout),
                Err(Unresolved::NotFound) => {
                    return Err(Error::DnsError {
                        rcode: Some("address not available".into()),
                        info_code: None,
                    });
                }
            },
        };
        let permitted: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|a| self.policy.permits(a.ip()))
            .collect();
        if permitted.is_empty() {
            return Err(self.refuse(
                &host,
                "resolves only to internal addresses",
                Error::DestinationIpProhibited,
            ));
        }

        let stream = connect(&permitted, connect_timeout).await?;
        // The connection runs beside the request; it ends when both sides drop it, and an
        // error in it reaches the guest through the response body it is reading.
        let mut sender = if tls {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| Error::HttpRequestUriInvalid)?;
            let stream = tokio_rustls::TlsConnector::from(tls_config())
                .connect(name, stream)
                .await
                .map_err(Error::Tls)?;
            let (sender, connection) = handshake(TokioIo::new(stream), connect_timeout).await?;
            tokio::spawn(async move { connection.await.ok() });
            sender
        } else {
            let (sender, connection) = handshake(TokioIo::new(stream), connect_timeout).await?;
            tokio::spawn(async move { connection.await.ok() });
            sender
        };

        // The request line carries only the path: the authority went into the Host header.
        *request.uri_mut() = http::Uri::builder()
            .path_and_query(uri.path_and_query().map_or("/", |p| p.as_str()))
            .build()
            .map_err(|_| Error::HttpRequestUriInvalid)?;
        let response = tokio::time::timeout(first_byte_timeout, sender.send_request(request))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)??;
        let response = response.map(|body| body.map_err(Error::from).boxed_unsync());
        Ok((response, Box::new(async { Ok(()) })))
    }
}

async fn connect(addresses: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for address in addresses {
        match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Error::Connect(e),
            Err(_) => last = Error::ConnectionTimeout,
        }
    }
    Err(last)
}

type Sender = hyper::client::conn::http1::SendRequest<WasiBody>;

async fn handshake<I>(
    io: I,
    timeout: Duration,
) -> Result<(Sender, hyper::client::conn::http1::Connection<I, WasiBody>), Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    tokio::time::timeout(timeout, hyper::client::conn::http1::handshake(io))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::from)
}

/// The public web's roots, built once: every TLS connection shares them.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}
