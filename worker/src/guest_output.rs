//! A component's stdout and stderr. They are the application's log, so they go to the
//! worker's stderr as structured lines naming the application; they are held per request and
//! bounded, so a component that prints without end costs neither memory nor the log.
//!
//! The guest writes straight into that buffer (`OutputStream` below). wasmtime-wasi's default
//! stream for an `AsyncWrite` spawns a task per stream and hands every write to it, so each
//! `console.log` cost a task and a wake-up on another thread (issue 43); a memory buffer is
//! always ready, so nothing needs to wait.

use crate::log;
use bytes::Bytes;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes kept per stream and request; the rest is counted, not kept.
const CAPACITY: usize = 16 * 1024;

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

impl Captured {
    fn keep(&mut self, buf: &[u8]) {
        let room = CAPACITY.saturating_sub(self.bytes.len());
        let kept = room.min(buf.len());
        self.bytes.extend_from_slice(&buf[..kept]);
        self.dropped += (buf.len() - kept) as u64;
    }
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
        // All of a request's lines in one write: a syscall per request, not per line.
        let mut text = String::new();
        for line in String::from_utf8_lossy(&captured.bytes).lines() {
            log::push_text_line(
                &mut text,
                "info",
                "guest output",
                &[
                    ("app", app),
                    ("component", component),
                    ("stream", stream),
                    ("line", line),
                ],
            );
        }
        if captured.dropped > 0 {
            log::push_line(
                &mut text,
                "warn",
                "guest output past the cap dropped",
                json!({"app": app, "component": component, "stream": stream, "droppedBytes": captured.dropped}),
            );
        }
        log::write_lines(&text);
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

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
        self.0.lock().unwrap_or_else(|e| e.into_inner()).keep(buf);
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

/// wasi:io's `output-stream` for the guest's stdout or stderr: every write is kept (or counted
/// past the cap) at once, so the stream is always ready and always flushed.
impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keep(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Any size: past the cap a write is counted, not kept, and never refused.
        Ok(64 * 1024)
    }
}

impl Pollable for GuestOutput {
    fn ready<'a, 'f>(&'a mut self) -> Pin<Box<dyn Future<Output = ()> + Send + 'f>>
    where
        'a: 'f,
        Self: 'f,
    {
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guests_stream_keeps_up_to_the_cap_counts_the_rest_and_never_waits() {
        let output = GuestOutput::default();
        let mut stream = output.p2_stream();
        assert!(stream.check_write().unwrap() > 0);
        stream.write(Bytes::from(vec![b'a'; CAPACITY - 1])).unwrap();
        stream.write(Bytes::from_static(b"bc")).unwrap();
        stream.flush().unwrap();
        assert!(
            stream.check_write().unwrap() > 0,
            "full, it still takes writes"
        );
        let captured = output.0.lock().unwrap();
        assert_eq!((captured.bytes.len(), captured.dropped), (CAPACITY, 1));
        assert_eq!(&captured.bytes[CAPACITY - 2..], b"ab");
    }
}
