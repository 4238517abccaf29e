//! The pre-initializer (src/bin/preinit), run as componentize-js runs it: the module's state
//! after its init function becomes the output's starting state, WASI works while it runs (as
//! wizer gives it), other imports are traps, errors are printed in wizer's words, and the
//! compiled module is kept in `$HOME/.cache/preinit`, its sum checked before use, and the
//! module's applied data segments are left out where no code can name them. Asked for it, it
//! writes wasmtime's WASI preview 1 adapter for the builder.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wasmtime::{Engine, Instance, Module, Store};

const PREINIT: &str = env!("CARGO_BIN_EXE_preinit");

/// Counts its environment (WASI) into a global, writes 42 at memory[16] and sets another
/// global to 7. It imports a function it never calls, as the js engine imports its
/// component's interfaces.
const MODULE: &str = r#"(module
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes (param i32 i32) (result i32)))
  (import "spin:app/never" "call" (func $never))
  (memory (export "memory") 1)
  (global $seven (export "seven") (mut i32) (i32.const 0))
  (global $vars (export "vars") (mut i32) (i32.const -1))
  (func (export "init")
    (drop (call $environ_sizes (i32.const 0) (i32.const 4)))
    (global.set $vars (i32.load (i32.const 0)))
    (i32.store8 (i32.const 16) (i32.const 42))
    (global.set $seven (i32.const 7)))
  (data (i32.const 100) "abc")
  (func (export "trap") unreachable)
  (func (export "read") (result i32) (i32.load8_u (i32.const 16))))"#;

struct Run {
    dir: PathBuf,
}

impl Run {
    fn new(name: &str) -> Run {
        Run::with(name, MODULE)
    }

    fn with(name: &str, module: &str) -> Run {
        let dir = std::env::temp_dir().join(format!("preinit-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("home")).unwrap();
        fs::write(dir.join("in.wasm"), wat::parse_str(module).unwrap()).unwrap();
        Run { dir }
    }

    fn preinit(&self, args: &[&str]) -> Output {
        Command::new(PREINIT)
            .args(args)
            .env_clear()
            .env("HOME", self.dir.join("home"))
            .env("ONE_VARIABLE", "1")
            .output()
            .unwrap()
    }

    fn init(&self, init: &str, inherit_env: bool) -> Output {
        let out = format!("-o={}", self.dir.join("out.wasm").display());
        let input = self.dir.join("in.wasm");
        let env = format!("--inherit-env={inherit_env}");
        self.preinit(&[
            "--allow-wasi",
            "--init-func",
            init,
            &env,
            "--wasm-bulk-memory=true",
            &out,
            input.to_str().unwrap(),
        ])
    }

    fn cache(&self) -> Vec<PathBuf> {
        let dir = self.dir.join("home/.cache/preinit");
        let mut entries: Vec<PathBuf> = fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        entries
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The output's exports as they start, with no init run and no imports at all.
fn started(path: &Path) -> (i32, i32, i32, bool) {
    let engine = Engine::default();
    let module = Module::from_file(&engine, path).unwrap();
    assert_eq!(module.imports().len(), 2, "the imports stay as they were");
    let mut store = Store::new(&engine, ());
    // Neither import is called from here on: a dummy of each type lets it instantiate.
    let mut linker = wasmtime::Linker::new(&engine);
    linker.define_unknown_imports_as_traps(&module).unwrap();
    let instance: Instance = linker.instantiate(&mut store, &module).unwrap();
    let seven = instance
        .get_global(&mut store, "seven")
        .unwrap()
        .get(&mut store)
        .unwrap_i32();
    let vars = instance
        .get_global(&mut store, "vars")
        .unwrap()
        .get(&mut store)
        .unwrap_i32();
    let read = instance
        .get_typed_func::<(), i32>(&mut store, "read")
        .unwrap();
    let byte = read.call(&mut store, ()).unwrap();
    (
        seven,
        vars,
        byte,
        instance.get_func(&mut store, "init").is_some(),
    )
}

#[test]
fn the_state_after_init_is_the_start() {
    let run = Run::new("state");
    let output = run.init("init", true);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        started(&run.dir.join("out.wasm")),
        (7, 2, 42, false),
        "HOME and ONE_VARIABLE seen; init gone"
    );

    let output = run.init("init", false);
    assert!(output.status.success());
    assert_eq!(
        started(&run.dir.join("out.wasm")).1,
        0,
        "no environment unless inherited"
    );
}

#[test]
fn a_trap_is_told_in_wizers_words() {
    let run = Run::new("trap");
    let output = run.init("trap", false);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // componentize-js finds the user's error by this prefix (componentize.js, WIZER_ERROR_CAUSE_PREFIX).
    assert!(
        stderr.starts_with("Error: the `trap` function trapped\n\nCaused by:"),
        "{stderr}"
    );
    assert!(!run.dir.join("out.wasm").exists());
}

#[test]
fn a_command_line_it_does_not_know_is_refused() {
    let run = Run::new("flags");
    let output = run.preinit(&["--preload=a=b", "-o=x", "in.wasm"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "preinit: unknown flag --preload\n"
    );
}

/// A top level that never ends, under the step's RLIMIT_CPU: preinit says why it stops, where
/// the kernel's SIGXCPU or SIGKILL said nothing. As the sandbox sets it (soft 2 s, hard 3), and
/// with soft and hard alike (2 s both), where it stops one second early.
#[test]
fn a_top_level_that_never_ends_is_told_when_the_cpu_limit_comes() {
    for (soft, hard) in [(2, 3), (2, 2)] {
        endless_init_under(soft, hard);
    }
}

fn endless_init_under(soft: libc::rlim_t, hard: libc::rlim_t) {
    use std::os::unix::process::CommandExt;
    let run = Run::with(
        "endless",
        r#"(module (memory (export "memory") 1) (func (export "init") (loop $l (br $l))))"#,
    );
    let mut command = Command::new(PREINIT);
    command
        .args(["--init-func", "init", "-o", "out.wasm", "in.wasm"])
        .current_dir(&run.dir)
        .env_clear()
        .env("HOME", run.dir.join("home"));
    // SAFETY: setrlimit is async-signal-safe, the only call between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_CPU, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{soft}:{hard}: {output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "preinit: out of CPU time (2 s, the build step's limit): the function's top level, \
         run once at build time, did not finish\n",
        "{soft}:{hard}"
    );
    assert!(!run.dir.join("out.wasm").exists());
}

/// The adapter the builder links in the place of jco's: the provider crate's, byte for byte,
/// which copies with `memory.copy` where jco's copies byte loop by byte loop.
#[test]
fn it_writes_wasmtimes_preview1_adapter() {
    let run = Run::new("adapter");
    let path = run.dir.join("adapter.wasm");
    let output = run.preinit(&["--write-adapter", path.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let written = fs::read(&path).unwrap();
    assert_eq!(
        written,
        wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER
    );
    let (mut exports, mut copies) = (Vec::new(), 0);
    for payload in wasmparser::Parser::new(0).parse_all(&written) {
        match payload.unwrap() {
            wasmparser::Payload::ExportSection(section) => {
                exports.extend(section.into_iter().map(|e| e.unwrap().name.to_string()))
            }
            wasmparser::Payload::CodeSectionEntry(body) => {
                let mut reader = body.get_operators_reader().unwrap();
                while !reader.eof() {
                    if let wasmparser::Operator::MemoryCopy { .. } = reader.read().unwrap() {
                        copies += 1;
                    }
                }
            }
            _ => {}
        }
    }
    for name in ["fd_write", "fd_fdstat_get", "environ_get", "clock_time_get"] {
        assert!(
            exports.iter().any(|e| e == name),
            "no {name} in {exports:?}"
        );
    }
    assert!(copies > 0, "no memory.copy in the adapter");

    for args in [&["--write-adapter"][..], &["--write-adapter", "a", "b"]] {
        let output = run.preinit(args);
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "preinit: --write-adapter takes one path\n"
        );
    }
}

#[test]
fn the_compiled_module_is_kept_and_a_damaged_one_compiled_again() {
    let run = Run::new("cache");
    assert!(run.init("init", false).status.success());
    let entries = run.cache();
    assert_eq!(entries.len(), 1, "one entry");
    let written = fs::metadata(&entries[0]).unwrap().modified().unwrap();

    assert!(run.init("init", false).status.success());
    assert_eq!(run.cache(), entries);
    assert_eq!(
        fs::metadata(&entries[0]).unwrap().modified().unwrap(),
        written,
        "read, not written again"
    );

    // A byte of its code changed, still a file wasmtime would map: refused by its sum.
    let mut bytes = fs::read(&entries[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&entries[0], &bytes).unwrap();
    let output = run.init("init", false);
    assert!(output.status.success());
    assert_eq!(started(&run.dir.join("out.wasm")), (7, 0, 42, false));
    assert_ne!(
        fs::read(&entries[0]).unwrap(),
        bytes,
        "compiled again and replaced"
    );

    // A stale entry (another module's) goes when the next one is written.
    fs::write(run.dir.join("home/.cache/preinit/0000.cwasm"), b"old").unwrap();
    fs::remove_file(&entries[0]).unwrap();
    assert!(run.init("init", false).status.success());
    assert_eq!(run.cache(), entries, "the one entry");
}

/// The output's data segments: (passive, length) each, and the DataCount section's count.
fn data_segments(path: &Path) -> (Vec<(bool, usize)>, Option<u32>) {
    let wasm = fs::read(path).unwrap();
    let (mut segments, mut count) = (Vec::new(), None);
    for payload in wasmparser::Parser::new(0).parse_all(&wasm) {
        match payload.unwrap() {
            wasmparser::Payload::DataCountSection { count: n, .. } => count = Some(n),
            wasmparser::Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.unwrap();
                    segments.push((
                        matches!(data.kind, wasmparser::DataKind::Passive),
                        data.data.len(),
                    ));
                }
            }
            _ => {}
        }
    }
    (segments, count)
}

#[test]
fn applied_data_segments_go_where_no_code_names_one() {
    let run = Run::new("trim");
    assert!(run.init("init", false).status.success());
    let (segments, count) = data_segments(&run.dir.join("out.wasm"));
    assert!(
        segments.iter().all(|&(passive, _)| !passive),
        "no empty passive segment: {segments:?}"
    );
    assert_eq!(count, None);
    assert_eq!(started(&run.dir.join("out.wasm")), (7, 0, 42, false));

    // With `memory.init` naming a segment by its index, every index must stay: the module is
    // kept whole (wasmtime-wizer refuses `data.drop`, the other instruction that names one).
    let named = MODULE.replace(
        r#"(func (export "trap") unreachable)"#,
        r#"(func (export "trap") unreachable)
           (data $kept "xyz")
           (func (export "copy") (memory.init $kept (i32.const 0) (i32.const 0) (i32.const 3)))"#,
    );
    let run = Run::with("trim-named", &named);
    let output = run.init("init", false);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (segments, count) = data_segments(&run.dir.join("out.wasm"));
    assert_eq!(
        segments[..2],
        [(true, 0), (true, 3)],
        "the applied segment, kept empty, and the passive one"
    );
    assert_eq!(count, Some(u32::try_from(segments.len()).unwrap()));
}
