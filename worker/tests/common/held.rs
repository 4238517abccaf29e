//! Requests the worker holds open until the test lets them go, and waiting on the worker's own
//! gauges for them: nothing waits on a guess at a time. A held request is the probe's `/echo`
//! with half its body sent: its instance reads until the test sends the rest.

use super::Worker;
use serde_json::{Value, json};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `POST /echo` promising ten bytes and sending five: the instance waits for the rest.
pub fn held_echo(url: &str) -> TcpStream {
    let authority = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "POST /echo HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: 10\r\n\r\n12345"
    )
    .unwrap();
    stream
}

/// Everything the worker sent on `stream` until it closed.
pub fn read_all(stream: &mut TcpStream) -> String {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Whether the worker has answered on `stream` yet (without waiting).
pub fn answered(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte) {
        Ok(n) => n > 0,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("{e}"),
    }
}

pub fn app_stats(worker: &mut Worker, app: &str) -> Value {
    worker.send(json!({"op": "stats"}))["apps"][app].clone()
}

/// Polls `stats` until `check` holds of its reply.
pub fn until(worker: &mut Worker, check: impl Fn(&Value) -> bool) -> Value {
    let mut stats = Value::Null;
    for _ in 0..600 {
        stats = worker.send(json!({"op": "stats"}));
        if check(&stats) {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("stats never matched: {stats}");
}

/// Polls `stats` until `check` holds of `app`'s.
pub fn until_stats(worker: &mut Worker, app: &str, check: impl Fn(&Value) -> bool) -> Value {
    until(worker, |stats| check(&stats["apps"][app]))["apps"][app].clone()
}
