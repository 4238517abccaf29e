//! The worker's command line. Everything an application needs (its lock, variables, limits)
//! comes over stdin; flags only say how the machine's operator sets up the engine.

use crate::outbound::address::{AddressPolicy, BadCidr};
use std::path::PathBuf;

pub const USAGE: &str = "usage: worker --cache-dir DIR [--functions-cache-dir DIR] [--baseline-first] [--allow-private-outbound CIDR,...] [--max-instances N] [--max-memory-bytes N] [--memory-budget-bytes N] [--resolver IP:PORT] [--threads N]\n       worker compile WASM --cache-dir DIR [flags]: compiles one component into the cache at the lowest priority, as --baseline-first does in the background, and exits when done or when its stdin closes";

#[derive(Debug, Clone)]
pub struct Config {
    pub cache_dir: PathBuf,
    /// Cranelift's compiled functions by content (cache/functions.rs); none: not kept.
    pub functions_cache_dir: Option<PathBuf>,
    /// A component never compiled answers from Winch's code while Cranelift compiles it
    /// (`baseline.rs`).
    pub baseline_first: bool,
    pub address_policy: AddressPolicy,
    /// Instances running at once, all applications and both engines together: the pool's
    /// size, and the count `instances.rs` keeps.
    pub max_instances: u32,
    /// The largest linear memory any application may be given.
    pub max_memory_bytes: u64,
    /// What every instance's memories and WAGI bodies together may hold (`budget.rs`).
    pub memory_budget_bytes: u64,
    /// The one name server outgoing requests' names are resolved with; the machine's when none.
    pub resolver: Option<std::net::SocketAddr>,
    /// Threads serving requests. One by default: every fresh instance's copy-on-write faults
    /// and every slot reset change the address space, and with two threads running each such
    /// change interrupts the other core to flush its TLB, which doubled the CPU per request
    /// on two cores (bench/RESULTS.md).
    pub threads: usize,
}

/// A command line the worker refuses (exit 2, with the usage).
#[derive(Debug, thiserror::Error)]
pub enum BadFlags {
    #[error("{0} needs a value")]
    NoValue(String),
    /// A flag's value out of its range: the flag and the range.
    #[error("{0}")]
    Value(&'static str),
    #[error("unknown flag {0}")]
    Unknown(String),
    #[error(transparent)]
    Address(#[from] BadCidr),
}

impl Config {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, BadFlags> {
        let mut cache_dir = None;
        let mut functions_cache_dir = None;
        let mut baseline_first = false;
        let mut address_policy = AddressPolicy::default();
        let mut max_instances = 1000;
        let mut max_memory_bytes = 4u64 << 30;
        let mut threads = 1;
        let mut memory_budget_bytes = crate::budget::default_limit();
        let mut resolver = None;
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| BadFlags::NoValue(flag.clone()));
            match flag.as_str() {
                "--cache-dir" => cache_dir = Some(PathBuf::from(value()?)),
                "--functions-cache-dir" => functions_cache_dir = Some(PathBuf::from(value()?)),
                "--baseline-first" => baseline_first = true,
                "--allow-private-outbound" => address_policy = AddressPolicy::parse(&value()?)?,
                "--max-instances" => {
                    max_instances = value()?
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or(BadFlags::Value("--max-instances: a positive number"))?
                }
                "--max-memory-bytes" => {
                    max_memory_bytes = value()?
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1 << 16 && *n <= 4 << 30)
                        .ok_or(BadFlags::Value("--max-memory-bytes: 64 KiB to 4 GiB"))?
                }
                "--memory-budget-bytes" => {
                    memory_budget_bytes = value()?
                        .parse()
                        .ok()
                        .filter(|n| *n >= 16 << 20)
                        .ok_or(BadFlags::Value("--memory-budget-bytes: 16 MiB or more"))?
                }
                "--resolver" => {
                    resolver = Some(value()?.parse().map_err(|_| {
                        BadFlags::Value("--resolver: an IP address and port, like 127.0.0.53:53")
                    })?)
                }
                "--threads" => {
                    threads = value()?
                        .parse()
                        .ok()
                        .filter(|n| (1..=256).contains(n))
                        .ok_or(BadFlags::Value("--threads: 1 to 256"))?
                }
                other => return Err(BadFlags::Unknown(other.to_string())),
            }
        }
        Ok(Config {
            cache_dir: cache_dir.ok_or(BadFlags::Value("--cache-dir is required"))?,
            functions_cache_dir,
            baseline_first,
            address_policy,
            max_instances,
            max_memory_bytes,
            memory_budget_bytes,
            resolver,
            threads,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> Result<Config, BadFlags> {
        let mut args = vec!["--cache-dir".to_string(), "/tmp/c".to_string()];
        args.extend(flags.iter().map(|f| f.to_string()));
        Config::parse(args)
    }

    #[test]
    fn the_budget_and_the_resolver_are_checked() {
        let config = parse(&[
            "--memory-budget-bytes",
            "16777216",
            "--resolver",
            "127.0.0.1:5353",
        ])
        .unwrap();
        assert_eq!(config.memory_budget_bytes, 16 << 20);
        assert_eq!(config.resolver, Some("127.0.0.1:5353".parse().unwrap()));
        assert!(
            parse(&[]).unwrap().memory_budget_bytes >= 16 << 20,
            "half the machine's memory"
        );
        for bad in [
            ["--memory-budget-bytes", "16777215"],
            ["--memory-budget-bytes", "lots"],
            ["--resolver", "127.0.0.1"],
            ["--resolver", "dns.example:53"],
        ] {
            assert!(parse(&bad).is_err(), "{bad:?}");
        }
    }
}
