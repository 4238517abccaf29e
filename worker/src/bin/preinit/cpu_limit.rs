//! A build step's processes run under RLIMIT_CPU (builders/src/sandbox/bwrap.ts sets the soft
//! limit a second under the hard one). A function whose top level never ends meets it inside
//! preinit. Ended by the kernel, at the soft limit's SIGXCPU or the hard limit's SIGKILL,
//! preinit would leave componentize-js an empty "Failed to initialize component", and j2w
//! exits 0, so the build log would say only that no component was left. preinit handles the
//! SIGXCPU, printing why before it exits; given soft and hard limits alike (as prlimit sets
//! one number), it first lowers its soft limit a second under the hard one.

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
    // The limit as the step was given it: its soft limit, or the one number of both.
    let text = format!(
        "preinit: out of CPU time ({} s, the build step's limit): the function's top level, \
         run once at build time, did not finish\n",
        limit.rlim_cur
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
