//! The worker's OpenTelemetry traces (issue 42): a span per request (`span.rs`), exported as
//! OTLP/HTTP protobuf in batches from a thread of the SDK's own (`export.rs`), configured only
//! by the standard `OTEL_*` variables. Without an OTLP endpoint nothing is set up: no provider,
//! no exporter, no thread, and a request's only cost is reading that the tracer is absent.

mod export;
mod span;

pub use span::{RequestSpan, begin};

use crate::log;
use opentelemetry_otlp::{SpanExporter, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use serde_json::json;
use std::sync::OnceLock;

/// The worker's name when the operator gives none (the control plane's is `session-relay-control`).
const SERVICE_NAME: &str = "session-relay-worker";

const ENDPOINTS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// Set once at start, when traces are exported; read by every request.
static TRACER: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// Whether these variables turn traces on: an OTLP endpoint named, and neither
/// `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` (as the control plane decides).
pub fn configured(var: impl Fn(&str) -> Option<String>) -> bool {
    let is =
        |name: &str, value: &str| var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
        return false;
    }
    ENDPOINTS
        .iter()
        .any(|name| var(name).is_some_and(|v| !v.trim().is_empty()))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Starts exporting when the environment says so. A configuration the exporter refuses is
/// logged and leaves traces off: the worker serves either way.
pub fn start() {
    if !configured(env) {
        return;
    }
    match provider() {
        Ok(provider) => {
            use opentelemetry::trace::TracerProvider;
            let tracer = provider.tracer("worker");
            let _ = TRACER.set((provider, tracer));
            log::info("exporting traces", json!({}));
        }
        Err(e) => log::error("traces are off", json!({"err": e})),
    }
}

fn provider() -> Result<SdkTracerProvider, String> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(export::Client::new().map_err(|e| e.to_string())?)
        .build()
        .map_err(|e| e.to_string())?;
    // The SDK's resource: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and its own name and
    // version; nothing of the process (its command line or environment).
    let named = env("OTEL_SERVICE_NAME").is_some_and(|n| !n.trim().is_empty())
        || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="));
    let resource = if named {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name(SERVICE_NAME).build()
    };
    Ok(SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_resource(resource)
        .build())
}

fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get().map(|(_, tracer)| tracer)
}

/// Sends what is still queued, before the process exits.
pub fn shutdown() {
    if let Some((provider, _)) = TRACER.get() {
        let _ = provider.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::configured;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> bool {
        let vars: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        configured(|name| vars.get(name).cloned())
    }

    #[test]
    fn only_an_endpoint_turns_traces_on() {
        assert!(!with(&[]));
        assert!(!with(&[("OTEL_SERVICE_NAME", "w")]));
        assert!(!with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]));
        assert!(with(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318"
        )]));
        assert!(with(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )]));
        assert!(!with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
            ("OTEL_SDK_DISABLED", "TRUE")
        ]));
        assert!(!with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
            ("OTEL_TRACES_EXPORTER", "none")
        ]));
    }
}
