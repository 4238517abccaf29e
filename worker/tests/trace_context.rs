//! W3C trace context through the worker: a caller's `traceparent` reaches the guest and goes
//! out on the guest's outgoing request to a loopback server of the test, which reads it; a
//! malformed one, or none, sends none.

mod common;

use common::{Worker, lock, request};
use serde_json::json;
use std::io::{Read, Write};
use std::sync::mpsc;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A loopback server that answers `pong` and sends each request's head to the test.
fn header_server() -> (u16, mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (heads, received) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let heads = heads.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = heads.send(String::from_utf8_lossy(&head).to_ascii_lowercase());
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
                );
            });
        }
    });
    (port, received)
}

#[test]
fn a_traceparent_goes_out_on_the_guest_outgoing_request() {
    let (port, heads) = header_server();
    let allowed =
        json!({"metadata": {"allowed_outbound_hosts": [format!("http://127.0.0.1:{port}")]}});
    let mut worker = Worker::start(&["--allow-private-outbound", "127.0.0.0/8"]);
    let url = worker.load("traced", &lock(&[("/...", "probe")], allowed), json!({}));
    let fetch = format!("/fetch?url=http://127.0.0.1:{port}/");

    let cases = [
        (Some(TRACEPARENT), Some(TRACEPARENT)),
        (None, None),
        // Upper-case hex is not version 00's form: dropped, not passed on.
        (
            Some("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"),
            None,
        ),
    ];
    for (sent, expected) in cases {
        let headers: Vec<(&str, &str)> = sent.iter().map(|v| ("traceparent", *v)).collect();
        let answer = request(&url, "GET", &fetch, &headers, b"");
        assert_eq!(
            (answer.status, answer.text().as_str()),
            (200, "fetched 200 pong"),
            "{}",
            worker.log()
        );
        let head = heads.recv().unwrap();
        let got = head
            .lines()
            .find_map(|line| line.strip_prefix("traceparent: ").map(str::trim));
        assert_eq!(
            got, expected,
            "sent {sent:?}; the outgoing request's head: {head}"
        );
    }
}
