//! The protocol's one definition, a JSON Schema in the control plane's
//! control/src/local/worker-client/protocol-schema.ts (its types are derived from it), held
//! against a real worker: each command sent here is one the schema allows, and every line the
//! worker writes back (replies, failures, events) is what the schema says. A field added or
//! renamed on one side fails here until the schema says it too.

mod common;

use common::{Worker, get, load_command, lock};
use serde_json::{Value, json};

/// The schema: the JSON object between `= ` and ` as const` of that TypeScript module.
fn schema() -> Value {
    let text = include_str!("../../control/src/local/worker-client/protocol-schema.ts");
    let start = text.find("= {").expect("`= {` in the schema module") + 2;
    let end = text
        .rfind("} as const")
        .expect("`} as const` in the schema module")
        + 1;
    serde_json::from_str(&text[start..end]).expect("the schema module's object is plain JSON")
}

/// Why `value` is not the schema's definition `name`; empty when it is.
fn errors(name: &str, value: &Value) -> Vec<String> {
    let mut root = schema();
    root["$ref"] = json!(format!("#/$defs/{name}"));
    let validator = jsonschema::validator_for(&root).expect("the schema is valid JSON Schema");
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn check(name: &str, value: &Value) {
    let errors = errors(name, value);
    assert!(errors.is_empty(), "not a {name}: {value}\n{errors:#?}");
}

/// Sends `command`, checked as a Command first, and checks the worker's answer as `reply`.
fn exchange(worker: &mut Worker, command: Value, reply: &str) -> Value {
    let mut numbered = command.clone();
    numbered["id"] = json!(1);
    check("Command", &numbered);
    let answer = worker.send(command);
    check(reply, &answer);
    answer
}

#[test]
fn every_command_and_line_of_the_worker_is_what_the_schema_says() {
    let mut worker = Worker::start(&[]);
    let mut lock = lock(&[("/...", "probe")], json!({}));
    lock["variables"] = json!({"greeting": {}});
    let limits = json!({
        "memoryBytes": 64 << 20,
        "requestTimeoutMs": 5000,
        "maxRequestBodyBytes": 1 << 20,
        "maxResponseBodyBytes": 1 << 20,
        "maxConcurrentRequests": 4,
        "maxQueuedRequests": 4,
    });
    let load = load_command(
        "typed",
        &lock,
        json!({"variables": {"greeting": "hi"}, "limits": limits, "port": 0}),
    );
    let url = exchange(&mut worker, load, "LoadReply")["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(get(&url, "/").status, 200);
    // After a request, so its components' counters are there too.
    let stats = exchange(&mut worker, json!({"op": "stats"}), "StatsReply");
    assert!(
        stats["apps"]["typed"]["components"]["probe"].is_object(),
        "{stats}"
    );
    exchange(
        &mut worker,
        json!({"op": "idle", "app": "typed"}),
        "IdleReply",
    );
    assert_eq!(get(&url, "/").status, 200);
    exchange(&mut worker, json!({"op": "stats"}), "StatsReply");
    assert_eq!(
        worker.events.len(),
        1,
        "the awake event: {:?}",
        worker.events
    );
    check("Event", &worker.events[0]);
    exchange(
        &mut worker,
        json!({"op": "unload", "app": "typed", "prune": true}),
        "UnloadReply",
    );
    exchange(&mut worker, json!({"op": "prune"}), "PruneReply");

    // Failures: of a command the schema allows, and of a line that is not JSON (no id).
    let failed = exchange(
        &mut worker,
        json!({"op": "unload", "app": "typed"}),
        "Failure",
    );
    assert_eq!(failed["ok"], json!(false));
    check("Failure", &worker.send_raw("not json"));
}

#[test]
fn what_the_schema_refuses_the_worker_refuses_too() {
    let mut worker = Worker::start(&[]);
    let lock = lock(&[("/...", "probe")], json!({}));
    // A limit the worker does not know: refused by both, not ignored.
    let mut load = load_command("strict", &lock, json!({"limits": {"memoryByte": 1}}));
    load["id"] = json!(1);
    assert!(!errors("Command", &load).is_empty());
    let reply = worker.send(load);
    check("Failure", &reply);
    assert!(
        reply["error"].as_str().unwrap().contains("unknown field"),
        "{reply}"
    );
    // A command the protocol has not.
    assert!(!errors("Command", &json!({"id": 1, "op": "launch"})).is_empty());
    check("Failure", &worker.send(json!({"op": "launch"})));
    // A reply missing a field, or with one the schema does not name, is not a reply.
    assert!(!errors("LoadReply", &json!({"id": 1, "ok": true})).is_empty());
    assert!(!errors("IdleReply", &json!({"id": 1, "ok": true, "extra": 1})).is_empty());
}
