//! The answers the worker makes itself, rather than a guest: refusals and failures, each
//! with the status the worker's README gives it.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};

pub type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

pub fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    response
}

/// A refusal that passes: the caller may come back in a second.
pub fn retry_later(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = text(status, body);
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A name other than loopback's (`host.rs`): the request may come from a rebinding page.
pub fn host_refused() -> Response<Body> {
    text(
        StatusCode::BAD_REQUEST,
        "this port answers only Host localhost, 127.0.0.1, [::1] or NAME.localhost, with its port or none\n",
    )
}

pub fn pool_full() -> Response<Body> {
    retry_later(
        StatusCode::SERVICE_UNAVAILABLE,
        "every instance of the worker is in use\n",
    )
}

pub fn budget_in_use(budget: u64) -> Response<Body> {
    retry_later(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "the worker's memory budget of {budget} bytes is in use (--memory-budget-bytes)\n"
        ),
    )
}

pub fn timed_out(timeout: std::time::Duration) -> Response<Body> {
    text(
        StatusCode::GATEWAY_TIMEOUT,
        &format!(
            "the function did not answer within {} ms\n",
            timeout.as_millis()
        ),
    )
}

pub fn failed() -> Response<Body> {
    text(StatusCode::INTERNAL_SERVER_ERROR, "the function failed\n")
}

pub fn too_large(cap: u64) -> Response<Body> {
    let mut response = text(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("request body larger than {cap} bytes\n"),
    );
    // The rest of the body is not read: the connection cannot carry another request.
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub fn response_too_large() -> Response<Body> {
    text(
        StatusCode::BAD_GATEWAY,
        "the function's response is larger than allowed\n",
    )
}
