//! A component's stdout and stderr. They are the application's log, so they go to the
//! worker's stderr as structured lines naming the application; they are held per request and
//! bounded, so a component that prints without end costs neither memory nor the log.

use crate::log;
use serde_json::json;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes kept per stream and request; the rest is counted, not kept.
const CAPACITY: usize = 16 * 1024;

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

#[derive(Clone, Default)]
pub struct GuestOutput(Arc<Mutex<Captured>>);

impl GuestOutput {
    /// Writes what was captured as one log line per line of output, then forgets it.
    pub fn emit(&self, app: &str, component: &str, stream: &str) {
        let captured = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        if captured.bytes.is_empty() && captured.dropped == 0 {
            return;
        }
        for line in String::from_utf8_lossy(&captured.bytes).lines() {
            log::info(
                "guest output",
                json!({"app": app, "component": component, "stream": stream, "line": line}),
            );
        }
        if captured.dropped > 0 {
            log::warn(
                "guest output past the cap dropped",
                json!({"app": app, "component": component, "stream": stream, "droppedBytes": captured.dropped}),
            );
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut captured = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = CAPACITY.saturating_sub(captured.bytes.len());
        let kept = room.min(buf.len());
        captured.bytes.extend_from_slice(&buf[..kept]);
        captured.dropped += (buf.len() - kept) as u64;
        // Everything is accepted: a full buffer must not look like an error to the guest.
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
