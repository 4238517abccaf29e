//! Which `Host` an application's port answers. Its port is on loopback and has no
//! authentication: a web page in any browser on the machine could make its own name resolve to
//! 127.0.0.1 (DNS rebinding) and call the application as if it were its own origin. The browser
//! then sends the page's name as `Host`, so only names that cannot be a page's are answered:
//! `localhost`, `127.0.0.1`, `[::1]` and any name under `.localhost` (browsers resolve them to
//! loopback themselves, RFC 6761), without a port or with this listener's own.

/// Whether a request carrying `host` (None: no header, as HTTP/1.0 allows; no browser sends
/// that) may reach the application listening on `port`.
pub fn allowed(host: Option<&[u8]>, port: u16) -> bool {
    let Some(host) = host else {
        return true;
    };
    let (name, rest) = match host.first() {
        Some(b'[') => match host.iter().position(|&b| b == b']') {
            Some(end) => host.split_at(end + 1),
            None => return false,
        },
        _ => match host.iter().position(|&b| b == b':') {
            Some(colon) => host.split_at(colon),
            None => (host, &[][..]),
        },
    };
    port_matches(rest, port) && loopback_name(name)
}

/// Nothing, or `:` and this port in at most five digits.
fn port_matches(rest: &[u8], port: u16) -> bool {
    let Some(digits) = rest.strip_prefix(b":") else {
        return rest.is_empty();
    };
    if digits.is_empty() || digits.len() > 5 || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    digits
        .iter()
        .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
        == u32::from(port)
}

fn loopback_name(name: &[u8]) -> bool {
    const SUFFIX: &[u8] = b".localhost";
    if [&b"localhost"[..], b"127.0.0.1", b"[::1]"]
        .iter()
        .any(|allowed| name.eq_ignore_ascii_case(allowed))
    {
        return true;
    }
    // {app}.localhost, or deeper: DNS labels, none empty.
    name.len() > SUFFIX.len()
        && name[name.len() - SUFFIX.len()..].eq_ignore_ascii_case(SUFFIX)
        && name[..name.len() - SUFFIX.len()]
            .split(|&b| b == b'.')
            .all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            })
}

#[cfg(test)]
mod tests {
    use super::allowed;

    #[test]
    fn loopback_names_with_this_port_or_none() {
        for host in [
            "localhost",
            "localhost:8080",
            "LocalHost:8080",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:8080",
            "shop.localhost:8080",
            "Shop.LOCALHOST",
            "a.b-c.localhost:08080",
        ] {
            assert!(allowed(Some(host.as_bytes()), 8080), "{host}");
        }
        assert!(allowed(None, 8080), "HTTP/1.0 without Host");
    }

    #[test]
    fn other_names_ports_and_spellings_are_refused() {
        for host in [
            "",
            "evil.example",
            "evil.example:8080",
            "localhost:8081",
            "localhost:",
            "localhost:80808",
            "localhost:8080:8080",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "localhost@evil",
            "user@localhost",
            "user:pass@localhost:8080",
            "[::1]x",
            "[::1",
            "[::1]:",
            "[0:0:0:0:0:0:0:1]",
            "127.0.0.2",
            "0.0.0.0",
            ".localhost",
            "a..localhost",
            "evil_.localhost",
            "localhost.",
            "localhost ",
            "xlocalhost",
        ] {
            assert!(!allowed(Some(host.as_bytes()), 8080), "{host:?}");
        }
    }
}
