//! The worker's span per request (src/telemetry/), exported as OTLP/HTTP protobuf to a
//! receiver of the test, which decodes each batch as a collector would: its parent the
//! caller's traceparent, the guest's parent the worker's span, and how the request ended
//! (`trap`, `deadline`) on it. Without an endpoint the worker sends nothing (the same receiver
//! gets no connection).

mod common;

use common::{Worker, request};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// Every span the receiver is sent, with its resource's service.name, in order of arrival.
fn receiver() -> (u16, mpsc::Receiver<(String, Span)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, spans) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
                line.clear();
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let batch = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            for resource in batch.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                        Value::StringValue(s) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                for scope in resource.scope_spans {
                    for span in scope.spans {
                        let _ = sender.send((service.clone(), span));
                    }
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (port, spans)
}

fn attribute(span: &Span, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.clone())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attribute(span, key)? {
        Value::StringValue(s) => Some(s),
        Value::IntValue(i) => Some(i.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn write_component(name: &str, core_module: &str) -> PathBuf {
    let bytes = wat::parse_str(common::http_component(core_module)).unwrap();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("telemetry-{name}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn load(worker: &mut Worker, app: &str, wasm: &PathBuf) -> String {
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "c", "route": "/..."}}],
        "components": [{"id": "c", "source": {"content_type": "application/wasm"}}]});
    let reply = worker.send(
        json!({"op": "load", "app": app, "lock": lock, "components": {"c": wasm},
        "limits": {"requestTimeoutMs": 300}}),
    );
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    reply["url"].as_str().unwrap().to_string()
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER: &str = "00f067aa0ba902b7";

#[test]
fn a_trap_and_a_deadline_each_end_their_span_so() {
    let (port, spans) = receiver();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut worker = Worker::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
        ],
    );
    let trapping = write_component(
        "trap",
        r#"(func (export "handle") (param i32 i32) unreachable)"#,
    );
    let looping = write_component(
        "loop",
        r#"(func (export "handle") (param i32 i32) (loop $l (br $l)))"#,
    );
    let traceparent = format!("00-{TRACE}-{CALLER}-01");
    let trap_url = load(&mut worker, "trapping", &trapping);
    let answer = request(
        &trap_url,
        "GET",
        "/x?secret=q1",
        &[("traceparent", &traceparent)],
        b"",
    );
    assert_eq!(answer.status, 500);
    let loop_url = load(&mut worker, "looping", &looping);
    assert_eq!(request(&loop_url, "POST", "/", &[], b"").status, 504);

    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(
            spans
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("two spans, got {seen:?}\n{}", worker.log())),
        );
    }
    let by_app = |app: &str| {
        seen.iter()
            .find(|(_, span)| text(span, "platform.application.id").as_deref() == Some(app))
            .unwrap_or_else(|| panic!("{app}'s span in {seen:?}"))
    };
    let (service, trap) = by_app("trapping");
    assert_eq!(service, "session-relay-worker");
    assert_eq!(hex(&trap.trace_id), TRACE, "the caller's trace");
    assert_eq!(
        hex(&trap.parent_span_id),
        CALLER,
        "the caller's span is its parent"
    );
    assert_eq!(trap.name, "GET /...");
    assert_eq!(text(trap, "platform.outcome").as_deref(), Some("trap"));
    assert_eq!(
        text(trap, "http.response.status_code").as_deref(),
        Some("500")
    );
    assert_eq!(text(trap, "platform.component.id").as_deref(), Some("c"));
    assert_eq!(
        text(trap, "platform.instance.started").as_deref(),
        Some("true")
    );
    assert!(matches!(
        attribute(trap, "platform.guest.ms"),
        Some(Value::DoubleValue(_))
    ));
    assert_eq!(trap.status.as_ref().map(|s| s.code), Some(2), "an error");

    let (_, deadline) = by_app("looping");
    assert_ne!(
        hex(&deadline.trace_id),
        TRACE,
        "no traceparent: a trace of its own"
    );
    assert!(deadline.parent_span_id.is_empty());
    assert_eq!(deadline.name, "POST /...");
    assert_eq!(
        text(deadline, "platform.outcome").as_deref(),
        Some("deadline")
    );
    assert_eq!(
        text(deadline, "http.response.status_code").as_deref(),
        Some("504")
    );
    let guest = match attribute(deadline, "platform.guest.ms") {
        Some(Value::DoubleValue(ms)) => ms,
        other => panic!("{other:?}"),
    };
    assert!(guest >= 300.0, "the guest ran to its deadline: {guest}");
    assert!(!format!("{seen:?}").contains("q1"), "no query string");
    worker.close();
}

#[test]
fn without_an_endpoint_nothing_is_sent() {
    let (port, spans) = receiver();
    // Everything but an endpoint: the port of the receiver is named nowhere it would be used.
    let mut worker = Worker::start_with_env(
        &[],
        &[
            ("OTEL_SERVICE_NAME", "w"),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ],
    );
    let trapping = write_component(
        "trap-off",
        r#"(func (export "handle") (param i32 i32) unreachable)"#,
    );
    let url = load(&mut worker, "off", &trapping);
    let traceparent = format!("00-{TRACE}-{CALLER}-01");
    assert_eq!(
        request(&url, "GET", "/", &[("traceparent", &traceparent)], b"").status,
        500
    );
    assert!(!worker.log_has("exporting traces"), "{}", worker.log());
    // The worker's exit flushes what it holds: after it, nothing may still be on its way.
    worker.close();
    assert!(spans.try_recv().is_err(), "port {port} got a span");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
