//! The CGI side of WAGI: the environment and arguments a program is given, and the reading
//! of what it printed (header lines, a blank line, the body) into a response.

use crate::answers::Body;
use crate::routes::RouteMatch;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use std::net::SocketAddr;

/// The variables WAGI (and Spin's WAGI executor) gives a CGI program.
pub fn cgi_environment(
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
pub fn arguments(template: &str, found: &RouteMatch, query: &str) -> Vec<String> {
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

/// Why a program's output is not a CGI response (logged; the caller is answered 500).
#[derive(Debug, thiserror::Error)]
pub enum NotCgi {
    #[error("no blank line after the headers")]
    NoBlankLine,
    #[error("headers are not UTF-8")]
    NotUtf8,
    #[error("bad header line {0:?}")]
    Line(String),
    #[error("bad status {0:?}")]
    Status(String),
    #[error("bad header name {0:?}")]
    Name(String),
    #[error("bad value for {0}")]
    Value(HeaderName),
}

/// Header lines up to a blank line, then the body. `status: 404 Not Found` sets the status;
/// `location` without one is a 302, as CGI has it.
pub fn parse_output(output: &[u8]) -> Result<Response<Body>, NotCgi> {
    let (head_end, body_start) = [&b"\r\n\r\n"[..], &b"\n\n"[..]]
        .iter()
        .filter_map(|sep| {
            output
                .windows(sep.len())
                .position(|w| w == *sep)
                .map(|at| (at, at + sep.len()))
        })
        .min()
        .ok_or(NotCgi::NoBlankLine)?;
    let head = std::str::from_utf8(&output[..head_end]).map_err(|_| NotCgi::NotUtf8)?;
    let mut response = Response::new(
        Full::new(Bytes::copy_from_slice(&output[body_start..]))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    let mut status = None;
    for line in head.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| NotCgi::Line(line.to_string()))?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "status" {
            let code = value.split_whitespace().next().unwrap_or("");
            status = Some(
                StatusCode::from_bytes(code.as_bytes())
                    .map_err(|_| NotCgi::Status(value.to_string()))?,
            );
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| NotCgi::Name(name))?;
        let value = HeaderValue::from_str(value).map_err(|_| NotCgi::Value(name.clone()))?;
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
        let refused = |output: &[u8]| parse_output(output).unwrap_err().to_string();
        assert_eq!(refused(b"no blank line"), "no blank line after the headers");
        assert_eq!(refused(b"oops\n\n"), "bad header line \"oops\"");
        assert_eq!(refused(b"status: x\n\n"), "bad status \"x\"");
        assert_eq!(refused(b"a b: 1\n\n"), "bad header name \"a b\"");
        assert_eq!(refused(b"a: \x01\n\n"), "bad value for a");
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
