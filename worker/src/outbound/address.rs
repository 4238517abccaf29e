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

/// An address or range that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BadCidr {
    #[error("{0:?} is not an IP address or CIDR range")]
    Address(String),
    #[error("{text:?}: the prefix length is not 0-{max}")]
    Prefix { text: String, max: u8 },
}

impl Cidr {
    /// `10.0.0.0/8`, `fd00::/8`, or one address (`127.0.0.1`, `::1`).
    pub fn parse(text: &str) -> Result<Self, BadCidr> {
        let (addr, bits) = match text.split_once('/') {
            Some((addr, bits)) => (addr, Some(bits)),
            None => (text, None),
        };
        let base: IpAddr = addr
            .parse()
            .map_err(|_| BadCidr::Address(text.to_string()))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => {
                b.parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| BadCidr::Prefix {
                        text: text.to_string(),
                        max,
                    })?
            }
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

/// Loopback, private, link-local, shared (100.64/10), documentation, benchmarking, 6to4 relay,
/// multicast, reserved and "this network" ranges: none is a public service a function may call.
const INTERNAL_V4: [(u32, u8); 15] = [
    (0x0000_0000, 8),  // 0.0.0.0/8
    (0x0a00_0000, 8),  // 10.0.0.0/8
    (0x6440_0000, 10), // 100.64.0.0/10, carrier-grade NAT: a provider's internal network
    (0x7f00_0000, 8),  // 127.0.0.0/8
    (0xa9fe_0000, 16), // 169.254.0.0/16, cloud metadata among it
    (0xac10_0000, 12), // 172.16.0.0/12
    (0xc000_0000, 24), // 192.0.0.0/24
    (0xc000_0200, 24), // 192.0.2.0/24
    (0xc058_6300, 24), // 192.88.99.0/24
    (0xc0a8_0000, 16), // 192.168.0.0/16
    (0xc612_0000, 15), // 198.18.0.0/15
    (0xc633_6400, 24), // 198.51.100.0/24
    (0xcb00_7100, 24), // 203.0.113.0/24
    (0xe000_0000, 4),  // 224.0.0.0/4, multicast
    (0xf000_0000, 4),  // 240.0.0.0/4, reserved and broadcast
];

/// The IPv6 counterparts, and the forms that carry an IPv4 address a gateway would reach for
/// the function (IPv4-compatible, NAT64, 6to4): refused whatever address they embed.
const INTERNAL_V6: [(u128, u8); 12] = [
    (0, 96), // ::/96: unspecified, loopback, IPv4-compatible
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // 64:ff9b::/96, NAT64
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48, local NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64, discard
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23, protocol assignments (Teredo among them)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32, documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16, 6to4
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7, unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10, link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10, the old site-local
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8, multicast
    (1, 128),                                        // ::1 (inside ::/96 too: named for the reader)
];

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let value = u32::from(ip);
    INTERNAL_V4
        .iter()
        .any(|&(base, bits)| value >> (32 - bits) == base >> (32 - bits))
}

fn is_internal_v6(ip: Ipv6Addr) -> bool {
    let value = u128::from(ip);
    INTERNAL_V6
        .iter()
        .any(|&(base, bits)| value >> (128 - bits) == base >> (128 - bits))
}

#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<Cidr>,
}

impl AddressPolicy {
    /// `--allow-private-outbound`'s value: CIDR ranges separated by commas.
    pub fn parse(list: &str) -> Result<Self, BadCidr> {
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
        for refused in [
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "::127.0.0.1",
            "ff02::1",
            "fec0::1",
            "100::1",
            "198.18.0.1",
            "203.0.113.9",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!none.permits(ip(refused)), "{refused}");
        }
        for permitted in [
            "93.184.216.34",
            "2606:2800:220:1::1",
            "2606:4700::1111",
            "172.32.0.1",
        ] {
            assert!(none.permits(ip(permitted)), "{permitted}");
        }
        let loopback = AddressPolicy::parse("127.0.0.0/8, 10.0.0.5").unwrap();
        assert!(loopback.permits(ip("127.0.0.1")));
        assert!(loopback.permits(ip("::ffff:127.0.0.1")));
        assert!(loopback.permits(ip("10.0.0.5")));
        assert!(!loopback.permits(ip("10.0.0.6")));
        assert!(!loopback.permits(ip("::1")));
    }

    // An independent statement of the IPv4 ranges that must be refused (RFC 6890's special
    // purpose registry), against addresses spread over the whole space and the ranges' edges:
    // each refused exactly when it is in one, in its IPv4-mapped spelling too.
    const REFUSED: [(&str, u8); 15] = [
        ("0.0.0.0", 8),
        ("10.0.0.0", 8),
        ("100.64.0.0", 10),
        ("127.0.0.0", 8),
        ("169.254.0.0", 16),
        ("172.16.0.0", 12),
        ("192.0.0.0", 24),
        ("192.0.2.0", 24),
        ("192.88.99.0", 24),
        ("192.168.0.0", 16),
        ("198.18.0.0", 15),
        ("198.51.100.0", 24),
        ("203.0.113.0", 24),
        ("224.0.0.0", 4),
        ("240.0.0.0", 4),
    ];

    #[test]
    fn every_ipv4_address_is_refused_exactly_in_a_special_range() {
        let ranges: Vec<Cidr> = REFUSED
            .iter()
            .map(|(base, bits)| Cidr::parse(&format!("{base}/{bits}")).unwrap())
            .collect();
        let mut samples: Vec<u32> = Vec::new();
        for cidr in &ranges {
            let IpAddr::V4(base) = cidr.base else {
                unreachable!()
            };
            let first = u32::from(base);
            let size = 1u64 << (32 - cidr.bits);
            let last = (u64::from(first) + size - 1) as u32;
            samples.extend([first.wrapping_sub(1), first, last, last.wrapping_add(1)]);
        }
        // A fixed xorshift sequence: the same million addresses every run.
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            samples.push(x);
        }
        let none = AddressPolicy::default();
        for value in samples {
            let v4 = Ipv4Addr::from(value);
            let expected = ranges.iter().any(|cidr| cidr.contains(IpAddr::V4(v4)));
            assert_eq!(!none.permits(IpAddr::V4(v4)), expected, "{v4}");
            assert_eq!(
                !none.permits(IpAddr::V6(v4.to_ipv6_mapped())),
                expected,
                "::ffff:{v4}"
            );
        }
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
