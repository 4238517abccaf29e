//! The worker's own log: one JSON object per line on stderr, so the control plane can parse
//! it and keep it apart from anything else. Callers pass only names, ids and figures: a
//! variable's value never reaches this module.

use serde_json::{Map, Value, json};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn info(msg: &str, fields: Value) {
    write("info", msg, fields);
}

pub fn warn(msg: &str, fields: Value) {
    write("warn", msg, fields);
}

pub fn error(msg: &str, fields: Value) {
    write("error", msg, fields);
}

fn write(level: &str, msg: &str, fields: Value) {
    let mut text = String::new();
    push_line(&mut text, level, msg, fields);
    write_lines(&text);
}

/// Appends one log line (with its newline) to `text`, for a caller that writes many at once.
pub fn push_line(text: &mut String, level: &str, msg: &str, fields: Value) {
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut line = Map::new();
    line.insert("time".into(), json!(time));
    line.insert("level".into(), json!(level));
    line.insert("msg".into(), json!(msg));
    if let Value::Object(extra) = fields {
        for (key, value) in extra {
            line.insert(key, value);
        }
    }
    text.push_str(&Value::Object(line).to_string());
    text.push('\n');
}

/// Whole lines in one write: lines stay whole when several threads log at once.
pub fn write_lines(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
