//! The worker run as the control plane runs it, serving a real js component (built by the
//! project's js builder from tests/fixtures/probe) over real sockets.

mod common;

use common::{Worker, get, lock, pong_server, request};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

#[test]
fn routes_with_spin_semantics_and_headers() {
    let mut worker = Worker::start(&[]);
    let lock = lock(
        &[("/...", "all"), ("/api/...", "api"), ("/exact", "exact")],
        json!({}),
    );
    let url = worker.load("routes", &lock, json!({}));

    let api = get(&url, "/api/users/1?x=y").json();
    assert_eq!(api["who"], "api");
    assert_eq!(api["headers"]["spin-path-info"], "/users/1");
    assert_eq!(api["headers"]["spin-component-route"], "/api");
    assert_eq!(api["headers"]["spin-matched-route"], "/api/...");
    assert_eq!(api["headers"]["spin-raw-component-route"], "/api/...");
    assert_eq!(api["headers"]["spin-base-path"], "/");
    let full = api["headers"]["spin-full-url"].as_str().unwrap();
    assert!(
        full.starts_with("http://127.0.0.1:") && full.ends_with("/api/users/1?x=y"),
        "{full}"
    );
    assert!(
        api["headers"]["spin-client-addr"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    assert_eq!(get(&url, "/exact").json()["who"], "exact");
    assert_eq!(get(&url, "/exact/").json()["who"], "exact");
    assert_eq!(get(&url, "/exact/below").json()["who"], "all");
    assert_eq!(get(&url, "/apiary").json()["who"], "all");

    let narrow = lock_with(&[("/hello", "hello")]);
    let url = worker.load("narrow", &narrow, json!({}));
    let missing = get(&url, "/nope");
    assert_eq!(
        (missing.status, missing.text().as_str()),
        (404, "no route\n")
    );
    assert_eq!(get(&url, "/hello").status, 200);
    assert_eq!(
        worker.close().code(),
        Some(0),
        "stdin closed: the worker exits 0"
    );
}

fn lock_with(routes: &[(&str, &str)]) -> Value {
    lock(routes, json!({}))
}

#[test]
fn variables_from_load_then_defaults_and_never_logged() {
    let mut worker = Worker::start(&[]);
    let mut lock = lock(
        &[("/...", "probe")],
        json!({"config": {"greeting": "{{ greeting }}!", "sky": "sky-{{ colour }}", "token": "{{api_key}}", "missing": "{{ unset }}"}}),
    );
    lock["variables"] = json!({"greeting": {}, "colour": {"default": "blue"}, "api_key": {"secret": true}, "unset": {}});
    let url = worker.load(
        "vars",
        &lock,
        json!({"variables": {"greeting": "hej", "api_key": "sk-test-never-logged"}}),
    );
    let ask = |name: &str| get(&url, &format!("/?name={name}")).json()["variable"].clone();
    assert_eq!(ask("greeting"), json!({"value": "hej!"}));
    assert_eq!(ask("sky"), json!({"value": "sky-blue"}));
    assert_eq!(ask("token"), json!({"value": "sk-test-never-logged"}));
    assert_eq!(
        ask("missing"),
        json!({"error": {"tag": "provider", "val": "no provider resolved required variable \"unset\""}})
    );
    assert_eq!(
        ask("nope"),
        json!({"error": {"tag": "undefined", "val": "no variable for \"probe\".\"nope\""}})
    );
    assert_eq!(ask("Bad-Name")["error"]["tag"], "invalid-name");

    // A template naming an undeclared variable, or a value for an undeclared one: no load.
    let mut bad = lock.clone();
    bad["components"][0]["config"]["x"] = json!("{{ undeclared }}");
    let reply = worker.send(common::load_command("bad", &bad, json!({})));
    assert_eq!(reply["ok"], json!(false), "{reply}");
    let reply = worker.send(common::load_command(
        "bad",
        &lock,
        json!({"variables": {"other": "x"}}),
    ));
    assert_eq!(reply["ok"], json!(false), "{reply}");
    assert!(
        !worker.log().contains("sk-test-never-logged"),
        "{}",
        worker.log()
    );
    let environ =
        std::fs::read(format!("/proc/{}/environ", worker_pid(&worker))).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&environ).contains("sk-test"));
}

fn worker_pid(worker: &Worker) -> u32 {
    let log = worker.log();
    let line = log.lines().find(|l| l.contains("worker ready")).unwrap();
    serde_json::from_str::<Value>(line).unwrap()["pid"]
        .as_u64()
        .unwrap() as u32
}

#[test]
fn a_deadline_stops_a_loop_and_the_worker_answers_others() {
    let mut worker = Worker::start(&[]);
    let lock = lock_with(&[("/...", "probe")]);
    let url = worker.load("spin", &lock, json!({"limits": {"requestTimeoutMs": 1500}}));
    let looping_url = url.clone();
    let started = Instant::now();
    let looping = std::thread::spawn(move || get(&looping_url, "/loop"));
    std::thread::sleep(Duration::from_millis(300));
    // Both of the machine's cores may be busy with loops: the others still get turns.
    let quick = Instant::now();
    assert_eq!(get(&url, "/").status, 200);
    assert!(
        quick.elapsed() < Duration::from_millis(1000),
        "{:?}",
        quick.elapsed()
    );
    let answer = looping.join().unwrap();
    assert_eq!(answer.status, 504, "{}", answer.text());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(4),
        "{took:?}"
    );
    let stats = worker.send(json!({"op": "stats"}));
    let app = &stats["apps"]["spin"];
    assert_eq!(app["timeouts"], json!(1), "{stats}");
    // Charged CPU, not wall time: the machine's other work takes its share of the second.
    assert!(
        app["cpuMs"].as_f64().unwrap() >= 300.0,
        "the loop's CPU is charged: {stats}"
    );
    assert_eq!(get(&url, "/").status, 200);
}

#[test]
fn memory_past_the_limit_fails_the_request_not_the_worker() {
    let mut worker = Worker::start(&[]);
    let lock = lock_with(&[("/...", "probe")]);
    let url = worker.load(
        "memory",
        &lock,
        json!({"limits": {"memoryBytes": 64 << 20}}),
    );
    let small = get(&url, "/alloc?mb=4");
    assert_eq!(
        (small.status, small.text().as_str()),
        (200, "allocated 4 MiB\n")
    );
    let big = get(&url, "/alloc?mb=200");
    assert_eq!(big.status, 500, "{}", big.text());
    assert_eq!(
        get(&url, "/alloc?mb=4").status,
        200,
        "the next request has a fresh instance"
    );
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(
        stats["apps"]["memory"]["memoryRefusals"],
        json!(1),
        "{stats}"
    );

    let reply = worker.send(common::load_command(
        "huge",
        &lock,
        json!({"limits": {"memoryBytes": 8u64 << 30}}),
    ));
    assert_eq!(reply["ok"], json!(false), "above the pool's slot: {reply}");
}

#[test]
fn each_request_starts_from_the_image() {
    let mut worker = Worker::start(&[]);
    let url = worker.load("state", &lock_with(&[("/...", "probe")]), json!({}));
    let expect = |mb: u32| format!("seen 1 kept {mb} sum {}\n", mb * (mb + 1) / 2);
    // One after the other: the freed slot, its written pages reset in place, serves the next
    // instance; 3 MiB is past what a slot keeps resident, 0 after it shows nothing stayed.
    for mb in [3, 0, 1, 3, 0] {
        assert_eq!(get(&url, &format!("/state?mb={mb}")).text(), expect(mb));
    }
    // Side by side: several slots, each reused.
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                (0..5)
                    .map(|_| get(&url, "/state?mb=2").text())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for client in clients {
        for answer in client.join().unwrap() {
            assert_eq!(answer, expect(2));
        }
    }
}

#[test]
fn unloading_gives_the_memory_back() {
    let mut worker = Worker::start(&[]);
    let lock = lock_with(&[("/...", "probe")]);
    assert!(worker.log_has("worker ready"));
    let pid = worker_pid(&worker);
    let idle = anon_mb(pid);
    for app in ["a", "b", "c"] {
        let url = worker.load(app, &lock, json!({}));
        assert_eq!(get(&url, "/").status, 200);
    }
    let loaded = anon_mb(pid);
    for app in ["a", "b", "c"] {
        assert_eq!(
            worker.send(json!({"op": "unload", "app": app}))["ok"],
            json!(true)
        );
    }
    // The last hold on an app may go just after the reply (a connection task ending).
    // Without giving malloc's free memory back, about 24 MB of the component stayed; with
    // it about 12 MB (the top of a thread's malloc arena, which malloc_trim leaves).
    let mut unloaded = anon_mb(pid);
    for _ in 0..100 {
        if unloaded < idle + 18.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        unloaded = anon_mb(pid);
    }
    assert!(
        unloaded < idle + 18.0,
        "idle {idle} MB, loaded {loaded} MB, unloaded {unloaded} MB"
    );
}

#[test]
fn idle_frees_the_app_and_its_port_loads_it_again() {
    const APPS: [&str; 6] = ["u", "v", "w", "x", "y", "z"];
    let mut worker = Worker::start(&[]);
    let lock = lock_with(&[("/...", "probe")]);
    let mut urls = Vec::new();
    for app in APPS {
        let url = worker.load(app, &lock, json!({}));
        assert_eq!(get(&url, "/").status, 200);
        urls.push(url);
    }
    for app in APPS {
        let reply = worker.send(json!({"op": "idle", "app": app}));
        assert_eq!(reply["ok"], json!(true), "{reply}");
    }
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(
        (&stats["apps"]["x"]["idle"], &stats["apps"]["x"]["requests"]),
        (&json!(true), &json!(1)),
        "{stats}"
    );
    // What the apps held is freed once their last request is done (the memory it gives back:
    // bench/RESULTS.md; measured here it is noise of 12 MB steps, the tops of the threads'
    // malloc arenas, which malloc_trim leaves).
    let mut in_memory = json!(null);
    for _ in 0..100 {
        in_memory = worker.send(json!({"op": "stats"}))["appsInMemory"].clone();
        if in_memory == json!(0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(in_memory, json!(0), "every idle app freed");

    // The port stayed open: the first request loads the application again and is answered.
    for url in &urls {
        let answer = get(url, "/woken");
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(answer.json()["path"], json!("/woken"));
    }
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(
        (&stats["apps"]["x"]["idle"], &stats["apps"]["x"]["requests"]),
        (&json!(false), &json!(2)),
        "{stats}"
    );
    let mut woken: Vec<&str> = worker
        .events
        .iter()
        .map(|e| {
            assert_eq!(e["event"], json!("awake"), "{e}");
            e["app"].as_str().unwrap()
        })
        .collect();
    woken.sort();
    assert_eq!(woken, APPS, "one event per application woken");
    assert_eq!(
        worker.send(json!({"op": "stats"}))["appsInMemory"],
        json!(APPS.len())
    );
    let reply = worker.send(json!({"op": "idle", "app": "nobody"}));
    assert_eq!(reply["ok"], json!(false));
}

#[test]
fn an_idle_application_keeps_its_compiled_file() {
    // A cache of its own, filled from the shared one (nothing compiles again): pruning here
    // must not take other tests' compiled components.
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("idle-cache");
    std::fs::create_dir_all(&cache).unwrap();
    for entry in std::fs::read_dir(common::cache_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::copy(entry.path(), cache.join(entry.file_name()));
    }
    let mut worker = Worker::start_with_cache(&cache, &[]);
    let url = worker.load("sleepy", &lock_with(&[("/...", "probe")]), json!({}));
    let compiled = |worker: &Worker| worker.log().matches("\"component compiled\"").count();
    let before = compiled(&worker);
    assert_eq!(
        worker.send(json!({"op": "idle", "app": "sleepy"}))["ok"],
        json!(true)
    );
    assert_eq!(worker.send(json!({"op": "prune"}))["ok"], json!(true));
    let left: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        left.len(),
        1,
        "the idle application's compiled file stays: {left:?}"
    );
    assert_eq!(get(&url, "/").status, 200);
    assert_eq!(
        compiled(&worker),
        before,
        "loaded again from its file, not compiled"
    );
}

#[test]
fn an_idle_application_that_cannot_load_again_answers_503() {
    let mut worker = Worker::start(&[]);
    let wasm = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vanishing.wasm");
    std::fs::copy(common::probe_wasm(), &wasm).unwrap();
    let url = worker.load(
        "vanishing",
        &lock_with(&[("/...", "probe")]),
        json!({"components": {"probe": wasm}}),
    );
    assert_eq!(
        worker.send(json!({"op": "idle", "app": "vanishing"}))["ok"],
        json!(true)
    );
    std::fs::remove_file(&wasm).unwrap();
    let answer = get(&url, "/");
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (503, "the application could not be loaded\n")
    );
    assert!(
        worker.log_has("the idle application could not be loaded again"),
        "{}",
        worker.log()
    );
    // The next request tries again.
    std::fs::copy(common::probe_wasm(), &wasm).unwrap();
    assert_eq!(get(&url, "/").status, 200);
}

fn anon_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

/// A loopback server answering "pong" to anything; its port.
#[test]
fn outbound_http_only_to_allowed_hosts_and_private_ranges_by_flag() {
    let port = pong_server();
    let other = pong_server();
    let allowed = json!({"metadata": {"allowed_outbound_hosts": [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")]}});
    let lock = lock(&[("/...", "probe")], allowed);
    let fetch = |url: &str, target: String| get(url, &format!("/fetch?url={target}"));

    let mut strict = Worker::start(&[]);
    let url = strict.load("out", &lock, json!({}));
    let refused = fetch(&url, format!("http://127.0.0.1:{port}/"));
    assert_eq!(
        refused.status,
        502,
        "loopback refused by default: {}",
        refused.text()
    );
    let by_name = fetch(&url, format!("http://localhost:{port}/"));
    assert_eq!(
        by_name.status,
        502,
        "also when a name resolves to it: {}",
        by_name.text()
    );
    assert!(
        strict.log_has("resolves only to internal addresses"),
        "{}",
        strict.log()
    );

    let mut open = Worker::start(&["--allow-private-outbound", "127.0.0.0/8"]);
    let url = open.load("out", &lock, json!({}));
    let served = fetch(&url, format!("http://127.0.0.1:{port}/"));
    assert_eq!(
        (served.status, served.text().as_str()),
        (200, "fetched 200 pong")
    );
    let unlisted = fetch(&url, format!("http://127.0.0.1:{other}/"));
    assert_eq!(
        unlisted.status,
        502,
        "a port the lock does not list: {}",
        unlisted.text()
    );
    assert!(
        open.log_has("not in allowed_outbound_hosts"),
        "{}",
        open.log()
    );
}

#[test]
fn bodies_are_bounded_both_ways() {
    let mut worker = Worker::start(&[]);
    let lock = lock_with(&[("/...", "probe")]);
    let limits = json!({"limits": {"maxRequestBodyBytes": 1024, "maxResponseBodyBytes": 100000}});
    let url = worker.load("bodies", &lock, limits);
    let at_cap = request(&url, "POST", "/echo", &[], &[b'x'; 1024]);
    assert_eq!((at_cap.status, at_cap.text().as_str()), (200, "bytes 1024"));
    assert_eq!(
        request(&url, "POST", "/echo", &[], &[b'x'; 1025]).status,
        413
    );
    let chunked = chunked_body(64 * 1024);
    let grown = request(
        &url,
        "POST",
        "/echo",
        &[("Transfer-Encoding", "chunked")],
        &chunked,
    );
    assert_eq!(grown.status, 413, "{}", grown.text());
    let fits = get(&url, "/big?bytes=99999");
    assert!(fits.complete && fits.body.len() == 99999);
    let over = get(&url, "/big?bytes=500000");
    assert!(
        over.status == 502 || !over.complete,
        "cut: {} {}",
        over.status,
        over.body.len()
    );
    assert!(over.body.len() <= 100000);
}

fn chunked_body(bytes: usize) -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..bytes / 4096 {
        body.extend_from_slice(b"1000\r\n");
        body.extend_from_slice(&[b'y'; 4096]);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    body
}

#[test]
fn unload_frees_the_port_and_reload_keeps_it() {
    // A cache of its own: pruning here must not take other tests' compiled components.
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("prune-cache");
    let mut worker = Worker::start_with_cache(&cache, &[]);
    let lock = lock_with(&[("/...", "probe")]);
    let url = worker.load("cycle", &lock, json!({}));
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(get(&url, "/").status, 200);
    let reply = worker.send(json!({"op": "unload", "app": "cycle"}));
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the port is closed"
    );
    let again = worker.load("cycle", &lock, json!({"port": port}));
    assert_eq!(again, url);
    assert_eq!(get(&again, "/").status, 200);
    // Loading a loaded application replaces it on the same port.
    assert_eq!(worker.load("cycle", &lock, json!({"port": port})), url);
    let reply = worker.send(json!({"op": "unload", "app": "cycle", "prune": true}));
    assert_eq!(reply["removed"].as_array().unwrap().len(), 1, "{reply}");
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "the compiled file is gone"
    );
    let reply = worker.send(json!({"op": "unload", "app": "cycle"}));
    assert_eq!(reply["ok"], json!(false));
}

#[test]
fn bad_commands_are_answered_and_the_worker_goes_on() {
    let mut worker = Worker::start(&[]);
    let reply = worker.send_raw("not json");
    assert_eq!(reply["ok"], json!(false));
    let reply = worker.send(json!({"op": "launch"}));
    assert_eq!(reply["ok"], json!(false));
    let no_wasm = json!({"op": "load", "app": "x", "lock": lock_with(&[("/...", "probe")]), "components": {}});
    let reply = worker.send(no_wasm);
    assert!(
        reply["error"].as_str().unwrap().contains("no wasm file"),
        "{reply}"
    );
    let mut wrong_digest = lock_with(&[("/...", "probe")]);
    wrong_digest["components"][0]["source"]["digest"] = json!("sha256:00");
    let reply = worker.send(common::load_command("x", &wrong_digest, json!({})));
    assert!(
        reply["error"].as_str().unwrap().contains("the lock says"),
        "{reply}"
    );
    let mut unknown = lock_with(&[("/...", "probe")]);
    unknown["triggers"][0]["trigger_config"]["executor"] = json!({"type": "fastcgi"});
    let reply = worker.send(common::load_command("x", &unknown, json!({})));
    assert_eq!(reply["ok"], json!(false), "{reply}");
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(stats["apps"], json!({}));
}

#[test]
fn guest_output_goes_to_the_log_with_its_app() {
    let mut worker = Worker::start(&[]);
    let url = worker.load("printer", &lock_with(&[("/...", "probe")]), json!({}));
    assert_eq!(get(&url, "/print?text=hello-log").status, 200);
    assert!(worker.log_has("printed hello-log"), "{}", worker.log());
    let log = worker.log();
    let line = log
        .lines()
        .find(|l| l.contains("printed hello-log"))
        .unwrap_or_else(|| panic!("{log}"));
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        (line["app"].as_str(), line["stream"].as_str()),
        (Some("printer"), Some("stdout"))
    );
}

/// One connection kept alive across requests, as an HTTP client's pool keeps it.
struct KeptAlive {
    stream: std::net::TcpStream,
    authority: String,
}

impl KeptAlive {
    fn connect(url: &str) -> KeptAlive {
        let authority = url.trim_start_matches("http://").to_string();
        let stream = std::net::TcpStream::connect(&authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        KeptAlive { stream, authority }
    }

    /// One GET on the connection; its status and body.
    fn get(&mut self, path: &str) -> (u16, Value) {
        let head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.authority);
        self.stream.write_all(head.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let mut byte = [0u8; 1];
        while !raw.ends_with(b"\r\n\r\n") {
            assert_eq!(
                self.stream.read(&mut byte).unwrap(),
                1,
                "the connection ended"
            );
            raw.push(byte[0]);
        }
        let head = String::from_utf8(raw).unwrap().to_ascii_lowercase();
        let status: u16 = head[9..12].parse().unwrap();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map(|n| n.trim().parse::<usize>().unwrap());
        let mut body = Vec::new();
        if let Some(length) = length {
            body.resize(length, 0);
            self.stream.read_exact(&mut body).unwrap();
        } else {
            // Chunked: read to the last chunk, then take the chunks' data.
            while !body.ends_with(b"0\r\n\r\n") {
                assert_eq!(
                    self.stream.read(&mut byte).unwrap(),
                    1,
                    "the connection ended"
                );
                body.push(byte[0]);
            }
            let text = String::from_utf8(body).unwrap();
            let mut data = String::new();
            let mut rest = text.as_str();
            loop {
                let (size, after) = rest.split_once("\r\n").unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                if size == 0 {
                    break;
                }
                data.push_str(&after[..size]);
                rest = &after[size + 2..];
            }
            body = data.into_bytes();
        }
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }
}

#[test]
fn a_redeploy_swaps_in_place_keeping_the_port_its_connections_and_requests_in_flight() {
    // A server that holds its answer until told: the old version's request stays in flight.
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let held_port = held.local_addr().unwrap().port();
    let (arrived, has_arrived) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (mut stream, _) = held.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = stream.read(&mut buf);
        arrived.send(()).unwrap();
        released.recv().unwrap();
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong");
    });
    let allowed =
        json!({"metadata": {"allowed_outbound_hosts": [format!("http://127.0.0.1:{held_port}")]}});
    let mut worker = Worker::start(&["--allow-private-outbound", "127.0.0.0/8"]);
    let url = worker.load(
        "swap",
        &lock(&[("/...", "old")], allowed.clone()),
        json!({}),
    );
    let mut kept = KeptAlive::connect(&url);
    assert_eq!(kept.get("/").1["who"], "old");
    let in_flight = {
        let url = url.clone();
        std::thread::spawn(move || get(&url, &format!("/fetch?url=http://127.0.0.1:{held_port}/")))
    };
    has_arrived
        .recv_timeout(Duration::from_secs(60))
        .expect("the old version's request reached the held server");

    // Port 0 on a loaded application: the port it has.
    let again = worker.load("swap", &lock(&[("/...", "new")], allowed), json!({}));
    assert_eq!(again, url, "the same port");
    let (status, body) = kept.get("/");
    assert_eq!(
        (status, &body["who"]),
        (200, &json!("new")),
        "the kept-alive connection's next request is the new version's"
    );
    release.send(()).unwrap();
    let answer = in_flight.join().unwrap();
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "fetched 200 pong"),
        "the request in flight on the old version finished"
    );
    assert!(worker.log_has("application replaced"), "{}", worker.log());
}

#[test]
fn serves_on_one_thread_unless_told_otherwise() {
    let mut one = Worker::start(&[]);
    assert_eq!(
        one.send(json!({"op": "stats"}))["threads"],
        1,
        "the default"
    );
    let mut three = Worker::start(&["--threads", "3"]);
    assert_eq!(three.send(json!({"op": "stats"}))["threads"], 3);
    let url = three.load("threads", &lock_with(&[("/...", "all")]), json!({}));
    assert_eq!(get(&url, "/").status, 200);
    assert_eq!(one.close().code(), Some(0));
    assert_eq!(three.close().code(), Some(0));

    for bad in ["0", "257", "two"] {
        let refused = std::process::Command::new(env!("CARGO_BIN_EXE_worker"))
            .args(["--cache-dir", "/nonexistent", "--threads", bad])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(refused.status.code(), Some(2), "--threads {bad}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("--threads: 1 to 256") && stderr.contains("usage:"),
            "{stderr}"
        );
    }
}
