//! Where outgoing requests may go once a name is resolved. A component allowed to reach
//! `https://example.com` must not reach the machine's own services or its network through a
//! name that resolves to them (or through an IP literal): loopback, link-local (cloud
//! metadata), private, shared and unspecified addresses are refused unless the operator
//! allows a range with `--allow-private-outbound`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    base: IpAddr,
    bits: u8,
}

impl Cidr {
    /// `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (addr, bits) = match text.split_once('/') {
            Some((addr, bits)) => (addr, Some(bits)),
            None => (text, None),
        };
        let base: IpAddr = addr
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR range"))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length is not 0-{max}"))?,
            None => max,
        };
        Ok(Cidr { base, bits })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.base, unmap(ip)) {
            (IpAddr::V4(base), IpAddr::V4(ip)) => {
                prefix_equal(&base.octets(), &ip.octets(), self.bits)
            }
            (IpAddr::V6(base), IpAddr::V6(ip)) => {
                prefix_equal(&base.octets(), &ip.octets(), self.bits)
            }
            _ => false,
        }
    }
}

fn prefix_equal(a: &[u8], b: &[u8], bits: u8) -> bool {
    let whole = usize::from(bits / 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    let rest = bits % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[whole] & mask == b[whole] & mask
}

/// `::ffff:127.0.0.1` is 127.0.0.1 to the kernel, so it is judged as one.
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        // 100.64.0.0/10, carrier-grade NAT: a provider's internal network.
        || (a == 100 && (64..128).contains(&b))
}

fn is_internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // fc00::/7 unique local, fe80::/10 link-local, fec0::/10 the old site-local.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
}

#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<Cidr>,
}

impl AddressPolicy {
    /// `--allow-private-outbound`'s value: CIDR ranges separated by commas.
    pub fn parse(list: &str) -> Result<Self, String> {
        let allowed = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Cidr::parse)
            .collect::<Result<_, _>>()?;
        Ok(AddressPolicy { allowed })
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        let internal = match unmap(ip) {
            IpAddr::V4(v4) => is_internal_v4(v4),
            IpAddr::V6(v6) => is_internal_v6(v6),
        };
        !internal || self.allowed.iter().any(|net| net.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_refused_unless_allowed() {
        let none = AddressPolicy::default();
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!none.permits(ip(refused)), "{refused}");
        }
        for permitted in ["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1"] {
            assert!(none.permits(ip(permitted)), "{permitted}");
        }
        let loopback = AddressPolicy::parse("127.0.0.0/8, 10.0.0.5").unwrap();
        assert!(loopback.permits(ip("127.0.0.1")));
        assert!(loopback.permits(ip("::ffff:127.0.0.1")));
        assert!(loopback.permits(ip("10.0.0.5")));
        assert!(!loopback.permits(ip("10.0.0.6")));
        assert!(!loopback.permits(ip("::1")));
    }

    #[test]
    fn cidr_parsing() {
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("nope").is_err());
        assert!(
            Cidr::parse("10.0.0.0/12")
                .unwrap()
                .contains(ip("10.15.255.255"))
        );
        assert!(
            !Cidr::parse("10.0.0.0/12")
                .unwrap()
                .contains(ip("10.16.0.0"))
        );
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
    }
}
