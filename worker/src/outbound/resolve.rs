//! Names resolved by an asynchronous stub resolver (hickory), not the C library's
//! `getaddrinfo`. That call blocks: tokio ran it on its blocking pool, the pool that also
//! compiles applications at load, and a name whose server never answers held a thread there
//! for as long as the C library kept trying, beyond any deadline of the guest's. Here a lookup
//! is a few packets on the serving thread, bounded by the request's connect timeout.
//!
//! `/etc/hosts` first, then the machine's `/etc/resolv.conf`, or the one server of
//! `--resolver` (an operator's, or a test's).

use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::{Resolver, TokioResolver};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

pub struct Names(TokioResolver);

/// Why a name gave no address.
#[derive(Debug)]
pub enum Unresolved {
    TimedOut,
    NotFound,
}

/// The resolver could not be set up (the worker does not start).
#[derive(Debug, thiserror::Error)]
pub enum ResolverError {
    #[error("/etc/resolv.conf: {0}")]
    SystemConfig(Box<dyn std::error::Error + Send + Sync>),
    #[error("{0}")]
    Build(Box<dyn std::error::Error + Send + Sync>),
}

impl Names {
    /// The machine's configuration, or `server` alone when given.
    pub fn new(server: Option<SocketAddr>) -> Result<Names, ResolverError> {
        let builder = match server {
            None => Resolver::builder_tokio().map_err(|e| ResolverError::SystemConfig(e.into()))?,
            Some(server) => {
                let mut name_server = NameServerConfig::udp_and_tcp(server.ip());
                for connection in &mut name_server.connections {
                    connection.port = server.port();
                }
                Resolver::builder_with_config(
                    ResolverConfig::from_name_servers(vec![name_server]),
                    TokioRuntimeProvider::default(),
                )
            }
        };
        builder
            .build()
            .map(Names)
            .map_err(|e| ResolverError::Build(e.into()))
    }

    /// The addresses of `host`, within `timeout` whatever the servers do.
    pub async fn lookup(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, Unresolved> {
        match tokio::time::timeout(timeout, self.0.lookup_ip(host)).await {
            Err(_) => Err(Unresolved::TimedOut),
            Ok(Err(NetError::Timeout)) => Err(Unresolved::TimedOut),
            Ok(Err(_)) => Err(Unresolved::NotFound),
            Ok(Ok(found)) => Ok(found
                .iter()
                .map(|ip: IpAddr| SocketAddr::new(ip, port))
                .collect()),
        }
    }
}
