//! An application's port answers only a `Host` naming loopback (src/host.rs): a page that
//! rebinds its own name to 127.0.0.1 gets 400 and never reaches the function.

mod common;

use common::{Worker, lock};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The status of `GET /` sent with these header lines (each ending in CRLF).
fn status_with(url: &str, headers: &str) -> u16 {
    let authority = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET / HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

#[test]
fn loopback_names_are_answered_and_others_refused() {
    let mut worker = Worker::start(&[]);
    let url = worker.load("app", &lock(&[("/...", "probe")], json!({})), json!({}));
    let port = url.rsplit(':').next().unwrap();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("app.localhost:{port}"),
        format!("LOCALHOST:{port}"),
        "localhost".to_string(),
    ] {
        assert_eq!(
            status_with(&url, &format!("Host: {host}\r\n")),
            200,
            "{host}"
        );
    }
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost:{}", port.parse::<u16>().unwrap() ^ 1),
        format!("user@localhost:{port}"),
        format!("[::1]x:{port}"),
    ] {
        assert_eq!(
            status_with(&url, &format!("Host: {host}\r\n")),
            400,
            "{host}"
        );
    }
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(stats["apps"]["app"]["hostRefusals"], json!(6), "{stats}");
    assert_eq!(
        stats["apps"]["app"]["requests"],
        json!(6),
        "the refused never reached an instance: {stats}"
    );
}
