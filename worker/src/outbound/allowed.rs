//! A component's `allowed_outbound_hosts`, in Spin's syntax (spin's outbound-networking
//! config): `<scheme>://<host>[:<port>]`, where the scheme may be `*`, the host `*`,
//! `*.domain` (any subdomain), a name, an IP address or a CIDR range, and the port `*`, a
//! number or a range `a..b` (end excluded); no port means the scheme's well-known one. Hosts
//! written with `{{ variable }}` are expanded before they get here.

use super::address::Cidr;

#[derive(Debug, Clone, PartialEq, Eq)]
enum SchemeRule {
    Any,
    Exact(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    Any,
    /// The suffix with its leading dot: `.example.com`.
    Subdomain(String),
    Name(String),
    Network(Cidr),
    /// Spin's `self`: requests to the application itself, which this worker does not route.
    ToSelf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PortRule {
    Any,
    One(u16),
    /// Start included, end excluded, as Spin's `a..b`.
    Range(u16, u16),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    scheme: SchemeRule,
    host: HostRule,
    port: PortRule,
}

#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    rules: Vec<Rule>,
}

fn well_known_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        "postgres" => Some(5432),
        "mysql" => Some(3306),
        "redis" => Some(6379),
        "mqtt" => Some(1883),
        _ => None,
    }
}

/// An `allowed_outbound_hosts` entry refused at `load`, in Spin's words where it has them.
#[derive(Debug, thiserror::Error)]
pub enum BadRule {
    #[error("'insecure:allow-all' is not allowed: use '*://*:*'")]
    AllowAll,
    #[error("{0:?} does not contain a scheme (e.g. 'http://' or '*://')")]
    NoScheme(String),
    #[error("{rule:?}: scheme {scheme:?} is not a word or *")]
    Scheme { rule: String, scheme: String },
    #[error("{0:?} has a path but is not allowed to")]
    Path(String),
    #[error("{0:?}: wildcards are allowed only as a first label")]
    Wildcard(String),
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error("{0:?}: a wildcard scheme needs a port (e.g. '*://host:*')")]
    AnySchemeNoPort(String),
    #[error("{rule:?}: no port and the scheme {scheme:?} has no well-known one")]
    NoPort { rule: String, scheme: String },
    #[error("{rule:?}: port range {port:?} holds a non-number")]
    PortRange { rule: String, port: String },
    #[error("{rule:?}: port {port:?} is not a number")]
    Port { rule: String, port: String },
}

fn parse_rule(text: &str) -> Result<Rule, BadRule> {
    let text = text.trim();
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(BadRule::NoScheme(text.to_string()));
    };
    let scheme = match scheme {
        "*" => SchemeRule::Any,
        s if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic()) => {
            SchemeRule::Exact(s.to_string())
        }
        s => {
            return Err(BadRule::Scheme {
                rule: text.to_string(),
                scheme: s.to_string(),
            });
        }
    };
    let rest = match rest.split_once('/') {
        // A CIDR's mask is the only slash a rule may hold, and then only with a port after it.
        Some((before, "")) => before.to_string(),
        Some(_)
            if Cidr::parse(rest).is_ok()
                || rest.rsplit_once(':').is_some_and(|(h, _)| h.contains('/')) =>
        {
            rest.to_string()
        }
        Some(_) => return Err(BadRule::Path(text.to_string())),
        None => rest.to_string(),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !port.contains(']') => (host, port),
        _ => (rest.as_str(), ""),
    };
    let host = host.trim_end_matches('/');
    let host_rule = if host == "*" {
        HostRule::Any
    } else if host == "self" || host == "self.alt" {
        HostRule::ToSelf
    } else if let Some(domain) = host.strip_prefix("*.") {
        if domain.contains('*') || domain.is_empty() {
            return Err(BadRule::Wildcard(text.to_string()));
        }
        HostRule::Subdomain(format!(".{}", domain.to_ascii_lowercase()))
    } else if host.contains('*') {
        return Err(BadRule::Wildcard(text.to_string()));
    } else if let Ok(network) = Cidr::parse(host.trim_start_matches('[').trim_end_matches(']')) {
        HostRule::Network(network)
    } else if host.is_empty() {
        return Err(BadRule::NoHost(text.to_string()));
    } else {
        HostRule::Name(host.to_ascii_lowercase())
    };
    let port_rule = if port.is_empty() {
        let SchemeRule::Exact(ref s) = scheme else {
            return Err(BadRule::AnySchemeNoPort(text.to_string()));
        };
        PortRule::One(well_known_port(s).ok_or_else(|| BadRule::NoPort {
            rule: text.to_string(),
            scheme: s.clone(),
        })?)
    } else if port == "*" {
        PortRule::Any
    } else if let Some((start, end)) = port.split_once("..") {
        let number = |p: &str| {
            p.parse::<u16>().map_err(|_| BadRule::PortRange {
                rule: text.to_string(),
                port: port.to_string(),
            })
        };
        PortRule::Range(number(start)?, number(end)?)
    } else {
        PortRule::One(port.parse().map_err(|_| BadRule::Port {
            rule: text.to_string(),
            port: port.to_string(),
        })?)
    };
    Ok(Rule {
        scheme,
        host: host_rule,
        port: port_rule,
    })
}

impl AllowedHosts {
    pub fn parse(hosts: &[String]) -> Result<Self, BadRule> {
        if hosts.len() == 1 && hosts[0] == "insecure:allow-all" {
            return Err(BadRule::AllowAll);
        }
        let rules = hosts
            .iter()
            .map(|h| parse_rule(h))
            .collect::<Result<_, _>>()?;
        Ok(AllowedHosts { rules })
    }

    /// `host` as the URL names it: a lower-case name, or an IP address without brackets.
    pub fn allows(&self, scheme: &str, host: &str, port: Option<u16>) -> bool {
        let Some(port) = port.or_else(|| well_known_port(scheme)) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        self.rules.iter().any(|rule| {
            let scheme_ok = match &rule.scheme {
                SchemeRule::Any => true,
                SchemeRule::Exact(s) => s == scheme,
            };
            let host_ok = match &rule.host {
                HostRule::Any => true,
                HostRule::Subdomain(suffix) => host.ends_with(suffix.as_str()),
                HostRule::Name(name) => *name == host,
                HostRule::Network(net) => host.parse().is_ok_and(|ip| net.contains(ip)),
                HostRule::ToSelf => false,
            };
            let port_ok = match rule.port {
                PortRule::Any => true,
                PortRule::One(p) => p == port,
                PortRule::Range(start, end) => (start..end).contains(&port),
            };
            scheme_ok && host_ok && port_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> AllowedHosts {
        AllowedHosts::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn spin_syntax() {
        let h = hosts(&[
            "https://example.com",
            "http://127.0.0.1:8080",
            "*://*.svc.local:*",
        ]);
        assert!(h.allows("https", "example.com", None));
        assert!(h.allows("https", "EXAMPLE.com", Some(443)));
        assert!(!h.allows("http", "example.com", None));
        assert!(!h.allows("https", "example.com", Some(8443)));
        assert!(h.allows("http", "127.0.0.1", Some(8080)));
        assert!(!h.allows("http", "127.0.0.1", Some(8081)));
        assert!(h.allows("http", "a.svc.local", Some(1)));
        assert!(!h.allows("http", "svc.local", Some(1)));
        let all = hosts(&["*://*:*"]);
        assert!(all.allows("https", "anything.example", None));
        let ranges = hosts(&[
            "http://10.0.0.0/8:8000..8002",
            "http://[::1]:80",
            "http://192.168.0.0/16",
        ]);
        assert!(ranges.allows("http", "192.168.1.1", None));
        assert!(ranges.allows("http", "10.1.2.3", Some(8001)));
        assert!(!ranges.allows("http", "10.1.2.3", Some(8002)));
        assert!(ranges.allows("http", "::1", None));
        assert!(hosts(&[]).rules.is_empty());
    }

    #[test]
    fn bad_rules_are_refused() {
        for (bad, said) in [
            (
                "example.com",
                r#""example.com" does not contain a scheme (e.g. 'http://' or '*://')"#,
            ),
            (
                "*://example.com",
                r#""*://example.com": a wildcard scheme needs a port (e.g. '*://host:*')"#,
            ),
            (
                "http://ex*.com",
                r#""http://ex*.com": wildcards are allowed only as a first label"#,
            ),
            (
                "http://e.com/path",
                r#""http://e.com/path" has a path but is not allowed to"#,
            ),
            (
                "insecure:allow-all",
                "'insecure:allow-all' is not allowed: use '*://*:*'",
            ),
            (
                "http://e.com:x",
                r#""http://e.com:x": port "x" is not a number"#,
            ),
            (
                "http://e.com:1..x",
                r#""http://e.com:1..x": port range "1..x" holds a non-number"#,
            ),
            (
                "gopher://e.com",
                r#""gopher://e.com": no port and the scheme "gopher" has no well-known one"#,
            ),
            (
                "ht-tp://e.com",
                r#""ht-tp://e.com": scheme "ht-tp" is not a word or *"#,
            ),
            ("http://:80", r#""http://:80" has no host"#),
        ] {
            let refused = AllowedHosts::parse(&[bad.to_string()]).unwrap_err();
            assert_eq!(refused.to_string(), said);
        }
    }
}
