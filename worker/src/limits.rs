//! What bounds one request: the memory its instance may grow to, and the bodies it may read
//! and write. Each bound fails the request, never the worker.

use crate::budget::Charge;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use wasmtime::ResourceLimiter;

/// An application's bounds, as `load` gives them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    pub request_timeout: std::time::Duration,
    pub max_request_body_bytes: u64,
    pub max_response_body_bytes: u64,
    /// Requests holding an instance at once (`admission.rs`).
    pub max_concurrent_requests: usize,
    /// Requests waiting for a turn behind them; past it, 429.
    pub max_queued_requests: usize,
}

/// Per store: its linear memories together may not grow past the application's limit (a
/// component holds several), nor the worker's memory budget (`budget.rs`), which each growth
/// is charged to. A refused growth traps (rather than letting the guest see -1), so the
/// request fails and is counted, whatever the guest's allocator would have made of it: 500
/// past the application's limit, 503 naming the budget past the worker's.
pub struct MemoryLimiter {
    pub max_bytes: usize,
    pub refused: bool,
    /// The sum of the store's memories, as wasmtime reported their creation and growth.
    pub used: usize,
    /// The request's part of the worker's budget, given back when the store is dropped.
    pub charge: Arc<Charge>,
}

impl MemoryLimiter {
    pub fn new(max_bytes: usize, charge: Arc<Charge>) -> Self {
        MemoryLimiter {
            max_bytes,
            refused: false,
            used: 0,
            charge,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Past its own maximum the growth fails anyway, and must not be counted.
        if maximum.is_some_and(|m| desired > m) {
            return Ok(false);
        }
        // A new memory is reported as growing from 0.
        let total = self.used + desired.saturating_sub(current);
        if total > self.max_bytes {
            self.refused = true;
            wasmtime::bail!("memory limit of {} bytes reached", self.max_bytes);
        }
        if self.charge.take((total - self.used) as u64).is_err() {
            wasmtime::bail!(
                "the worker's memory budget of {} bytes is in use",
                self.charge.budget()
            );
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Table elements are host memory too; a million is far past any real component.
        Ok(desired <= 1_000_000)
    }
}

/// A store whose memories grew past this is dropped on a blocking thread: giving hundreds of
/// MB back to the kernel (the slot's reset) took tens of ms, on the serving thread, in front of
/// every other application's requests (bench:noisy's memory hog: p99 86 ms beside it).
const LARGE_STORE_BYTES: usize = 64 << 20;

/// Drops the request's store (`held`: it, or it with what must go after it), off the serving
/// threads when it holds much memory. Its budget charge goes with it, once the memory is given
/// back.
pub fn release<T: Send + 'static>(held: T, memory_bytes: usize) {
    if memory_bytes > LARGE_STORE_BYTES {
        tokio::task::spawn_blocking(move || drop(held));
    }
}

/// The request body as the guest reads it: past the cap the guest's read fails and `tripped`
/// says so, so the server can answer 413 whatever the guest made of the error.
pub struct CappedRequestBody {
    pub inner: hyper::body::Incoming,
    pub remaining: u64,
    pub cap: u64,
    pub tripped: Arc<AtomicBool>,
}

impl Body for CappedRequestBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                if len > self.remaining {
                    self.tripped.store(true, Ordering::Relaxed);
                    let cap = self.cap;
                    return Poll::Ready(Some(Err(wasmtime_wasi_http::Error::HttpRequestBodySize(
                        Some(cap),
                    ))));
                }
                self.remaining -= len;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            other => other.map(|_| None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The response body as the client gets it: it ends with an error once it passes the cap,
/// which makes hyper cut the connection, so a client never takes a cut body for a whole one.
pub struct CappedResponseBody<B> {
    pub inner: B,
    pub remaining: u64,
    /// Called once, when the body is cut.
    pub on_cut: Option<Box<dyn FnOnce() + Send>>,
}

impl<B> Body for CappedResponseBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                if len > self.remaining {
                    if let Some(on_cut) = self.on_cut.take() {
                        on_cut();
                    }
                    return Poll::Ready(Some(Err("response body larger than the cap".into())));
                }
                self.remaining -= len;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.to_string().into()))),
            other => other.map(|_| None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_of_a_store_count_together() {
        let budget = crate::budget::Budget::new(1 << 30);
        let charge = Charge::new(&budget, &Default::default());
        let mut limiter = MemoryLimiter::new(10 << 20, charge);
        assert!(limiter.memory_growing(0, 6 << 20, None).unwrap());
        assert!(limiter.memory_growing(0, 3 << 20, None).unwrap());
        assert!(limiter.memory_growing(6 << 20, 8 << 20, None).is_err());
        assert!(limiter.refused);
        assert!(
            !limiter
                .memory_growing(3 << 20, 4 << 20, Some(3 << 20))
                .unwrap()
        );
        assert_eq!(limiter.used, 9 << 20);
        assert_eq!(budget.used(), 9 << 20, "charged to the budget as they grew");
        drop(limiter);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_growth_past_the_budget_traps_and_is_not_counted() {
        let budget = crate::budget::Budget::new(8 << 20);
        let charge = Charge::new(&budget, &Default::default());
        let mut limiter = MemoryLimiter::new(100 << 20, charge.clone());
        assert!(limiter.memory_growing(0, 4 << 20, None).unwrap());
        assert!(limiter.memory_growing(4 << 20, 7 << 20, None).is_err());
        assert!(
            !limiter.refused,
            "the application's own limit was not reached"
        );
        assert!(charge.refused().is_some());
        assert_eq!(limiter.used, 4 << 20);
    }
}
