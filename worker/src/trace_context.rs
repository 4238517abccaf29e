//! W3C trace context (https://www.w3.org/TR/trace-context/) carried through a request: the
//! caller's `traceparent` reaches the guest as a request header like any other, and the guest's
//! outgoing requests carry it on when the guest sets none, so the service it calls joins the
//! same trace. Only a well-formed version-00 value is carried: anything else (a guess, an
//! attempt to smuggle text into other services' logs) is dropped.

use http::{HeaderMap, HeaderValue};

pub const TRACEPARENT: &str = "traceparent";

fn lower_hex(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == b'0')
}

/// Whether `value` is a traceparent of version 00: `00-<32 hex>-<16 hex>-<2 hex>`, lower-case,
/// neither id all zeros.
pub fn valid(value: &[u8]) -> bool {
    if value.len() != 55 || value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
        return false;
    }
    let (version, trace, parent, flags) =
        (&value[..2], &value[3..35], &value[36..52], &value[53..]);
    version == b"00"
        && lower_hex(trace)
        && lower_hex(parent)
        && lower_hex(flags)
        && !all_zero(trace)
        && !all_zero(parent)
}

/// The request's traceparent when there is exactly one and it is well formed.
pub fn incoming(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut values = headers.get_all(TRACEPARENT).iter();
    let first = values.next()?;
    (values.next().is_none() && valid(first.as_bytes())).then(|| first.clone())
}

/// Adds `traceparent` to an outgoing request's headers unless the guest set one itself.
pub fn propagate(headers: &mut HeaderMap, traceparent: Option<&HeaderValue>) {
    let Some(value) = traceparent else { return };
    if !headers.contains_key(TRACEPARENT) {
        headers.insert(TRACEPARENT, value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn only_a_well_formed_version_00_value() {
        assert!(valid(GOOD.as_bytes()));
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
            "00-4bf92f3577b34da6a3ce929d0e0e4736x00f067aa0ba902b7-01",
            "",
        ] {
            assert!(!valid(bad.as_bytes()), "{bad:?}");
        }
    }

    #[test]
    fn two_values_are_none_and_the_guest_own_value_stays() {
        let mut headers = HeaderMap::new();
        headers.append(TRACEPARENT, HeaderValue::from_static(GOOD));
        assert_eq!(
            incoming(&headers).as_ref(),
            Some(&HeaderValue::from_static(GOOD))
        );
        headers.append(TRACEPARENT, HeaderValue::from_static(GOOD));
        assert_eq!(incoming(&headers), None);

        let own =
            HeaderValue::from_static("00-11111111111111111111111111111111-2222222222222222-00");
        let mut outgoing = HeaderMap::new();
        outgoing.insert(TRACEPARENT, own.clone());
        propagate(&mut outgoing, Some(&HeaderValue::from_static(GOOD)));
        assert_eq!(outgoing.get(TRACEPARENT), Some(&own));
        let mut empty = HeaderMap::new();
        propagate(&mut empty, Some(&HeaderValue::from_static(GOOD)));
        assert_eq!(
            empty.get(TRACEPARENT).map(|v| v.as_bytes()),
            Some(GOOD.as_bytes())
        );
    }
}
