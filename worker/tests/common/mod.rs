//! The worker as the control plane drives it: a child process, JSON lines on stdin/stdout,
//! its stderr collected so tests can look at the log. Plain HTTP/1.1 over std sockets: the
//! tests check bytes on the wire, not a client library's reading of them.

#![allow(dead_code)]

pub mod held;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub log: Arc<Mutex<String>>,
    next_id: u64,
    /// The event lines (no `id`) read from stdout so far.
    pub events: Vec<Value>,
}

/// The compiled components of every test share one directory: the probe compiles once.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("worker-cache")
}

impl Worker {
    pub fn start(flags: &[&str]) -> Worker {
        Worker::start_with_cache(&cache_dir(), flags)
    }

    pub fn start_with_cache(cache: &Path, flags: &[&str]) -> Worker {
        Worker::spawn(
            Command::new(env!("CARGO_BIN_EXE_worker"))
                .arg("--cache-dir")
                .arg(cache)
                .args(flags),
        )
    }

    /// On `cache`, with nothing of this process's environment but `env`.
    pub fn start_with_cache_and_env(cache: &Path, flags: &[&str], env: &[(&str, &str)]) -> Worker {
        Worker::spawn_with(
            Command::new(env!("CARGO_BIN_EXE_worker"))
                .arg("--cache-dir")
                .arg(cache)
                .args(flags),
            env,
        )
    }

    /// With at most `nofile` file descriptors (RLIMIT_NOFILE), as a machine running out of them.
    pub fn start_with_nofile(flags: &[&str], nofile: u64) -> Worker {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_worker"));
        command.arg("--cache-dir").arg(cache_dir()).args(flags);
        // SAFETY: setrlimit is async-signal-safe, as code between fork and exec must be.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: nofile,
                    rlim_max: nofile,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Worker::spawn(&mut command)
    }

    /// With nothing of this process's environment but `env`.
    pub fn start_with_env(flags: &[&str], env: &[(&str, &str)]) -> Worker {
        Worker::spawn_with(
            Command::new(env!("CARGO_BIN_EXE_worker"))
                .arg("--cache-dir")
                .arg(cache_dir())
                .args(flags),
            env,
        )
    }

    fn spawn(command: &mut Command) -> Worker {
        Worker::spawn_with(command, &[])
    }

    fn spawn_with(command: &mut Command, env: &[(&str, &str)]) -> Worker {
        let mut child = command
            .env_clear()
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the worker starts");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Worker {
            child,
            stdin: Some(stdin),
            stdout,
            log,
            next_id: 1,
            events: Vec::new(),
        }
    }

    /// Sends one command and waits for its reply (commands of a test go one at a time).
    pub fn send(&mut self, mut command: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        command["id"] = json!(id);
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
        let reply = self.read_reply();
        assert_eq!(reply["id"], json!(id), "{reply}");
        reply
    }

    /// The next reply on stdout; the event lines before it go to `events`.
    fn read_reply(&mut self) -> Value {
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("a reply line");
            let reply: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("reply {line:?}: {e}; log:\n{}", self.log()));
            if reply.get("event").is_some() && reply.get("id").is_none() {
                self.events.push(reply);
                continue;
            }
            return reply;
        }
    }

    /// Sends every command at once (the worker runs them side by side); their replies in order.
    pub fn send_all(&mut self, commands: Vec<Value>) -> Vec<Value> {
        let first = self.next_id;
        let stdin = self.stdin.as_mut().unwrap();
        for mut command in commands.into_iter() {
            command["id"] = json!(self.next_id);
            self.next_id += 1;
            writeln!(stdin, "{command}").unwrap();
        }
        stdin.flush().unwrap();
        let mut replies: Vec<Value> = (first..self.next_id).map(|_| self.read_reply()).collect();
        replies.sort_by_key(|reply| reply["id"].as_u64());
        replies
    }

    pub fn send_raw(&mut self, line: &str) -> Value {
        writeln!(self.stdin.as_mut().unwrap(), "{line}").unwrap();
        self.read_reply()
    }

    /// Loads `lock` with every component from the probe's wasm; returns the app's URL.
    pub fn load(&mut self, app: &str, lock: &Value, extra: Value) -> String {
        let reply = self.send(load_command(app, lock, extra));
        assert_eq!(
            reply["ok"],
            json!(true),
            "load: {reply}\nlog:\n{}",
            self.log()
        );
        reply["url"].as_str().unwrap().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the log holds `needle` within a few seconds: stderr is read by another thread,
    /// so a line written before an HTTP answer may reach the test after it.
    pub fn log_has(&self, needle: &str) -> bool {
        for _ in 0..100 {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Closes stdin, as a parent that goes away does, and waits for the exit.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().unwrap();
        panic!("the worker did not exit when stdin closed");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn load_command(app: &str, lock: &Value, extra: Value) -> Value {
    let wasm = probe_wasm();
    let components: serde_json::Map<String, Value> = lock["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_string(), json!(wasm)))
        .collect();
    let mut command = json!({"op": "load", "app": app, "lock": lock, "components": components});
    if let Value::Object(fields) = extra {
        for (k, v) in fields {
            command[k] = v;
        }
    }
    command
}

/// A lock with one component per (route, component id), each reading its own `who`.
pub fn lock(routes: &[(&str, &str)], component: Value) -> Value {
    let triggers: Vec<Value> = routes
        .iter()
        .enumerate()
        .map(|(i, (route, id))| json!({"id": format!("t{i}"), "trigger_type": "http", "trigger_config": {"component": id, "route": route}}))
        .collect();
    let mut ids: Vec<&str> = routes.iter().map(|(_, id)| *id).collect();
    ids.dedup();
    let components: Vec<Value> = ids
        .iter()
        .map(|id| {
            let mut c = json!({"id": id, "source": {"content_type": "application/wasm"}, "config": {"who": id}});
            if let Value::Object(fields) = &component {
                for (k, v) in fields {
                    if k == "config" {
                        for (ck, cv) in v.as_object().unwrap() {
                            c["config"][ck] = cv.clone();
                        }
                    } else {
                        c[k] = v.clone();
                    }
                }
            }
            c
        })
        .collect();
    json!({"spin_lock_version": 1, "triggers": triggers, "components": components})
}

/// tests/fixtures/probe/component.wasm, built from its source when missing or older.
pub fn probe_wasm() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
            let wasm = fixtures.join("probe/component.wasm");
            let source = fixtures.join("probe/src/index.js");
            let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            if modified(&wasm).is_none() || modified(&wasm) < modified(&source) {
                let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../node_modules/.bin/node");
                let node = if node.exists() {
                    node
                } else {
                    PathBuf::from("node")
                };
                let status = Command::new(node)
                    .arg(fixtures.join("build-probe.mjs"))
                    .status()
                    .expect("node runs (npm ci at the repository root first)");
                assert!(status.success(), "building the probe component failed");
            }
            wasm
        })
        .clone()
}

pub struct Answer {
    pub status: u16,
    pub headers: String,
    pub body: Vec<u8>,
    /// False when the connection ended before the body did.
    pub complete: bool,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.status, self.text()))
    }
}

pub fn get(url: &str, path: &str) -> Answer {
    request(url, "GET", path, &[], b"")
}

pub fn request(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let authority = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(authority).expect("the app's port accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
    {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A worker that answers early (413) may close before the body is all written.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let clean_end = stream.read_to_end(&mut raw).is_ok();
    parse(&raw, clean_end)
}

fn parse(raw: &[u8], clean_end: bool) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head[9..12].parse().unwrap();
    let rest = &raw[split + 4..];
    let lower = head.to_ascii_lowercase();
    if lower.contains("transfer-encoding: chunked") {
        let (body, complete) = dechunk(rest);
        return Answer {
            status,
            headers: head,
            body,
            complete: complete && clean_end,
        };
    }
    let length = lower.lines().find_map(|l| {
        l.strip_prefix("content-length: ")?
            .trim()
            .parse::<usize>()
            .ok()
    });
    let complete = clean_end && length.is_none_or(|n| n == rest.len());
    Answer {
        status,
        headers: head,
        body: rest.to_vec(),
        complete,
    }
}

fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).trim(), 16).unwrap_or(0);
        rest = &rest[eol + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..rest.len().min(size)]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// A server on loopback that answers every request `pong`, each connection on its own thread
/// (a guest's outgoing requests may be many at once).
pub fn pong_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\npong",
                );
            });
        }
    });
    port
}

/// The numbers of /proc/`pid`/stat after the command's name, from its state (field 3) on.
fn stat_numbers(pid: u32) -> Vec<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .map(|field| field.parse::<u64>().unwrap_or(0))
        .collect()
}

/// The clock ticks of CPU (user and system) process `pid` has used.
pub fn cpu_ticks(pid: u32) -> u64 {
    let fields = stat_numbers(pid);
    fields[11] + fields[12]
}

/// The minor page faults process `pid` has taken.
pub fn minor_faults(pid: u32) -> u64 {
    stat_numbers(pid)[7]
}

/// A wasi:http handler component in the text format around `core_module`, the fields of its
/// `(core module $m ...)`, which export `handle` (param i32 i32): the frame every text-format
/// component of these tests shares, so each says only what its handler does.
pub fn http_component(core_module: &str) -> String {
    format!(
        r#"
(component
  (import "wasi:http/types@0.2.0" (instance $types
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $types "incoming-request" (type $request))
  (alias export $types "response-outparam" (type $outparam))
  (core module $m
    {core_module})
  (core instance $i (instantiate $m))
  (func $handle (param "request" (own $request)) (param "response-out" (own $outparam))
    (canon lift (core func $i "handle")))
  (instance $handler (export "handle" (func $handle)))
  (export "wasi:http/incoming-handler@0.2.0" (instance $handler)))
"#
    )
}
