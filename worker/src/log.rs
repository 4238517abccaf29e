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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Appends one log line (with its newline) to `text`, for a caller that writes many at once.
pub fn push_line(text: &mut String, level: &str, msg: &str, fields: Value) {
    let time = now_ms();
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

/// `push_line` for fields that are all text, written straight into `text` without a JSON value
/// built first: a guest's output passes here for every line it prints, on the thread serving
/// the request, and through `json!` one `console.log` cost the worker about 5 µs, 2% of a js
/// request (bench/RESULTS.md). `fields` must not repeat `time`, `level` or `msg`.
pub fn push_text_line(text: &mut String, level: &str, msg: &str, fields: &[(&str, &str)]) {
    use std::fmt::Write as _;
    let _ = write!(text, "{{\"time\":{}", now_ms());
    for (key, value) in [("level", level), ("msg", msg)].iter().chain(fields) {
        text.push(',');
        push_json_string(text, key);
        text.push(':');
        push_json_string(text, value);
    }
    text.push_str("}\n");
}

/// `value` as a JSON string: quotes, backslashes and control characters escaped, the rest as is.
fn push_json_string(text: &mut String, value: &str) {
    use std::fmt::Write as _;
    text.push('"');
    let mut plain = 0;
    for (i, byte) in value.bytes().enumerate() {
        let short = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // Every byte escaped is ASCII: a character's boundary on both sides.
        text.push_str(&value[plain..i]);
        match short {
            "" => {
                let _ = write!(text, "\\u{byte:04x}");
            }
            short => text.push_str(short),
        }
        plain = i + 1;
    }
    text.push_str(&value[plain..]);
    text.push('"');
}

/// Whole lines in one write: lines stay whole when several threads log at once.
pub fn write_lines(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ASCII byte, the escapes' neighbours, and characters of two to four bytes: each
    /// line parses, and every field reads back as written.
    #[test]
    fn text_lines_are_json_and_keep_every_character() {
        let mut values: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        values.extend(
            [
                "",
                "plain",
                "a\"b\\c\nd\re\tf\u{0}g\u{1f}h\u{7f}",
                "\\\"",
                "é ü 中文 🦀 \u{2028}\u{2029}\u{fffd}",
                "end\\",
            ]
            .map(String::from),
        );
        let all: String = values.concat();
        values.push(all);
        for value in &values {
            let mut text = String::new();
            let key = format!("key {value}");
            push_text_line(&mut text, "info", value, &[("line", value), (&key, "k")]);
            assert!(
                text.ends_with("}\n") && text.matches('\n').count() == 1,
                "{text:?}"
            );
            let line: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(line["msg"], json!(value));
            assert_eq!(line["line"], json!(value));
            assert_eq!(line["level"], "info");
            assert!(line["time"].is_u64());
            assert_eq!(line[key.as_str()], "k");
            assert_eq!(line.as_object().unwrap().len(), 5);
        }
    }
}
