//! One application's flood does not take the worker from the others (issue 40): each has at
//! most `maxConcurrentRequests` running and `maxQueuedRequests` waiting, the next gets 429
//! with Retry-After; the instance pool (`--max-instances`) stays the bound of them all, full
//! answering 503 with Retry-After. Slow requests are held open (`common/held.rs`): each holds
//! its instance until the test sends the rest, so nothing here waits on a clock.

mod common;

use common::held::{answered, app_stats, held_echo, read_all, until_stats};
use common::{Worker, get, lock};
use serde_json::json;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn a_flood_gets_429_past_its_queue_and_another_application_is_answered() {
    // A pool of 8 instances: the flooding application, unbounded, would take every one.
    let mut worker = Worker::start(&["--max-instances", "8"]);
    let probe = lock(&[("/...", "probe")], json!({}));
    let flood_url = worker.load(
        "flood",
        &probe,
        json!({"limits": {"maxConcurrentRequests": 4, "maxQueuedRequests": 4}}),
    );
    let quiet_url = worker.load("quiet", &probe, json!({}));
    assert_eq!(get(&quiet_url, "/").status, 200, "the probe is compiled");

    let mut flood: Vec<TcpStream> = (0..20).map(|_| held_echo(&flood_url)).collect();
    let stats = until_stats(&mut worker, "flood", |s| {
        s["running"] == json!(4) && s["waiting"] == json!(4) && s["busyRefusals"] == json!(12)
    });
    assert_eq!(
        stats["requests"],
        json!(4),
        "only the running ones have instances: {stats}"
    );

    // The twelve refused were answered at once: 429, with when to come back.
    let mut refused = Vec::new();
    for _ in 0..600 {
        refused = (0..flood.len())
            .filter(|&i| answered(&mut flood[i]))
            .collect();
        if refused.len() == 12 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(refused.len(), 12);
    for &i in refused.iter().rev() {
        let answer = read_all(&mut flood.remove(i));
        assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("\r\nretry-after: 1\r\n"),
            "{answer}"
        );
    }

    // The other application meanwhile: every request answered.
    for _ in 0..10 {
        let answer = get(&quiet_url, "/");
        assert_eq!(answer.status, 200, "{}", answer.text());
    }

    // The rest of the bodies: the four running answer, then the four that waited.
    for stream in &mut flood {
        stream.write_all(b"67890").unwrap();
    }
    for stream in &mut flood {
        let answer = read_all(stream);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.ends_with("bytes 10"), "{answer}");
    }
    let stats = until_stats(&mut worker, "flood", |s| s["running"] == json!(0));
    assert_eq!(
        (stats["requests"].clone(), stats["waiting"].clone()),
        (json!(8), json!(0)),
        "{stats}"
    );
    assert_eq!(app_stats(&mut worker, "quiet")["busyRefusals"], json!(0));
}

#[test]
fn a_full_pool_answers_503_with_retry_after_not_a_failure() {
    let mut worker = Worker::start(&["--max-instances", "2"]);
    let probe = lock(&[("/...", "probe")], json!({}));
    let first = worker.load("first", &probe, json!({}));
    let second = worker.load("second", &probe, json!({}));
    assert_eq!(get(&second, "/").status, 200, "the probe is compiled");
    let mut held: Vec<TcpStream> = (0..2).map(|_| held_echo(&first)).collect();
    until_stats(&mut worker, "first", |s| s["running"] == json!(2));

    let answer = get(&second, "/");
    assert_eq!(answer.status, 503, "{}", answer.text());
    assert!(
        answer
            .headers
            .to_ascii_lowercase()
            .contains("\r\nretry-after: 1"),
        "{}",
        answer.headers
    );
    assert_eq!(app_stats(&mut worker, "second")["poolRefusals"], json!(1));

    for stream in &mut held {
        stream.write_all(b"67890").unwrap();
        assert!(read_all(stream).starts_with("HTTP/1.1 200 "));
    }
    until_stats(&mut worker, "first", |s| s["running"] == json!(0));
    assert_eq!(get(&second, "/").status, 200, "instances free again");
}

#[test]
fn limits_past_the_pool_are_refused_at_load() {
    let mut worker = Worker::start(&["--max-instances", "8"]);
    let probe = lock(&[("/...", "probe")], json!({}));
    for limits in [
        json!({"maxConcurrentRequests": 9}),
        json!({"maxConcurrentRequests": 0}),
        json!({"maxQueuedRequests": 10_001}),
    ] {
        let reply = worker.send(common::load_command(
            "app",
            &probe,
            json!({ "limits": limits }),
        ));
        assert_eq!(reply["ok"], json!(false), "{limits}: {reply}");
    }
    // The default: a tenth of the pool's default, here the whole (smaller) pool.
    worker.load("app", &probe, json!({}));
    assert_eq!(
        app_stats(&mut worker, "app")["running"],
        json!(0),
        "loaded with the default"
    );
}
