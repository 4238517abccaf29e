//! A request's span in the worker: its parent the caller's `traceparent` (the control plane's
//! invoke span, on one machine and through the Service proxy alike), its attributes what the
//! worker decided about the request and never anything the caller sent but its method: no
//! header value, query string, path or variable. The guest gets this span as its parent, so
//! its outgoing requests are children of the worker's span in the same trace.
//!
//! The response path and the instance's run each hold it; it ends when the later of the two
//! lets go (a streamed body outlives the response's head, a refusal has no instance).

use super::tracer;
use crate::trace_context;
use http::{HeaderMap, HeaderValue, Method};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
pub struct RequestSpan(Arc<Mutex<Recording>>);

struct Recording {
    span: opentelemetry_sdk::trace::Span,
    method: &'static str,
    /// Whether a fresh instance was made for the request: false for a refusal before one.
    instance: bool,
    /// The span's status is an error already, with the outcome as its description.
    failed: bool,
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.span
            .set_attribute(KeyValue::new("platform.instance.started", self.instance));
        self.span.end();
    }
}

/// The span of a request to application `app`, or `None` when traces are off (then nothing is
/// made at all).
pub fn begin(app: &str, method: &Method, headers: &HeaderMap) -> Option<RequestSpan> {
    let tracer = tracer()?;
    let parent = trace_context::incoming(headers)
        .and_then(|value| remote(value.as_bytes()))
        .map_or_else(Context::new, |parent| {
            Context::new().with_remote_span_context(parent)
        });
    // Semantic conventions: a method other than the standard ones is `_OTHER` (no caller text).
    let method: &'static str = match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    };
    let span = tracer
        .span_builder(method)
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("platform.application.id", app.to_string()),
            KeyValue::new("http.request.method", method),
        ])
        .start_with_context(tracer, &parent);
    Some(RequestSpan(Arc::new(Mutex::new(Recording {
        span,
        method,
        instance: false,
        failed: false,
    }))))
}

/// A well-formed traceparent (`trace_context::valid`) as a remote parent.
fn remote(value: &[u8]) -> Option<SpanContext> {
    let text = std::str::from_utf8(value).ok()?;
    let trace = TraceId::from_hex(&text[3..35]).ok()?;
    let span = SpanId::from_hex(&text[36..52]).ok()?;
    let flags = u8::from_str_radix(&text[53..55], 16).ok()?;
    Some(SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    ))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

impl RequestSpan {
    fn with(&self, f: impl FnOnce(&mut Recording)) {
        if let Ok(mut recording) = self.0.lock() {
            f(&mut recording);
        }
    }

    /// The application was idle and loaded again for this request (scale to zero).
    pub fn woken(&self, load: Duration) {
        self.with(|r| {
            r.span
                .set_attribute(KeyValue::new("platform.application.woken", true));
            r.span
                .set_attribute(KeyValue::new("platform.application.load_ms", ms(load)));
        });
    }

    /// Routed to `component` by `route` (the lock's pattern, not the request's path).
    pub fn routed(&self, component: &str, route: &str) {
        self.with(|r| {
            r.span.update_name(format!("{} {route}", r.method));
            r.span.set_attribute(KeyValue::new(
                "platform.component.id",
                component.to_string(),
            ));
            r.span
                .set_attribute(KeyValue::new("http.route", route.to_string()));
        });
    }

    /// What the guest and its outgoing requests get as their parent: this span.
    pub fn traceparent(&self) -> Option<HeaderValue> {
        let recording = self.0.lock().ok()?;
        let context = recording.span.span_context();
        HeaderValue::from_str(&format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        ))
        .ok()
    }

    /// A fresh instance was made for the request, in `start` (instantiation).
    pub fn instance_started(&self, start: Duration) {
        self.with(|r| {
            r.instance = true;
            r.span
                .set_attribute(KeyValue::new("platform.instance.start_ms", ms(start)));
        });
    }

    /// The guest's time: from its instance's start to the handler's end.
    pub fn guest(&self, time: Duration) {
        self.with(|r| {
            r.span
                .set_attribute(KeyValue::new("platform.guest.ms", ms(time)));
        });
    }

    /// How the request ended: the run's outcome (`executor::outcome`'s name for it), or the
    /// worker's refusal before any instance.
    pub fn ended(&self, outcome: &'static str) {
        self.with(|r| {
            r.span
                .set_attribute(KeyValue::new("platform.outcome", outcome));
            if outcome != "ok" {
                r.failed = true;
                r.span.set_status(Status::error(outcome));
            }
        });
    }

    /// The answer's status; a 5xx marks the span as failed, as a server span's convention is.
    pub fn responded(&self, status: u16) {
        self.with(|r| {
            r.span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status),
            ));
            if status >= 500 && !r.failed {
                r.failed = true;
                r.span.set_status(Status::error(""));
            }
        });
    }
}
