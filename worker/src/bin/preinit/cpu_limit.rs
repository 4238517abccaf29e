//! A build step's processes run under RLIMIT_CPU (builders/src/sandbox/bwrap.ts sets it, soft
//! and hard alike). A function whose top level never ends meets it inside preinit, and the
//! kernel ends a process at its hard limit with SIGKILL, without a word: componentize-js then
//! fails with an empty "Failed to initialize component" and j2w exits 0, so the build log
//! said only that no component was left. preinit lowers its own soft limit one second below
//! the hard one, and the SIGXCPU that comes there prints why before it exits.

use std::sync::OnceLock;

static MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();

extern "C" fn out_of_cpu(_: libc::c_int) {
    // Only async-signal-safe calls here: the message was made before the handler was set.
    if let Some(message) = MESSAGE.get() {
        unsafe { libc::write(2, message.as_ptr().cast(), message.len()) };
    }
    unsafe { libc::_exit(1) }
}

/// Says so, and exits 1, when this process is about to run out of CPU time.
pub fn explain_when_out() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    if unsafe { libc::getrlimit(libc::RLIMIT_CPU, &mut limit) } != 0
        || limit.rlim_max == libc::RLIM_INFINITY
        || limit.rlim_max < 2
    {
        return;
    }
    let soft = limit.rlim_cur.min(limit.rlim_max - 1);
    let text = format!(
        "preinit: out of CPU time ({} s, the build step's limit): the function's top level, \
         run once at build time, did not finish\n",
        limit.rlim_max
    );
    let _ = MESSAGE.set(text.into_bytes());
    let handler: extern "C" fn(libc::c_int) = out_of_cpu;
    unsafe {
        libc::signal(libc::SIGXCPU, handler as libc::sighandler_t);
        libc::setrlimit(
            libc::RLIMIT_CPU,
            &libc::rlimit {
                rlim_cur: soft,
                rlim_max: limit.rlim_max,
            },
        );
    }
}
