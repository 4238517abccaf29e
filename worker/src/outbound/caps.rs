//! Outgoing requests in flight, bounded per instance and per application (issue 40): a guest
//! that starts requests without waiting for them held a connection, a task and their buffers
//! each, with nothing to stop it short of the deadline. A request counts from its start until
//! its response body is read to the end or dropped; past a cap the next is refused at once
//! (the guest sees `internal-error` naming the cap), never queued.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};

/// In flight at once from one instance: more than a handler fanning out to a few services
/// needs, and the whole application's hundred instances stay under the application's cap.
pub const PER_INSTANCE: usize = 16;
/// In flight at once from all of an application's instances.
pub const PER_APP: usize = 256;

/// One counter of requests in flight against its cap.
pub struct Counter {
    in_flight: AtomicUsize,
    cap: usize,
}

impl Counter {
    pub fn new(cap: usize) -> Arc<Counter> {
        Arc::new(Counter {
            in_flight: AtomicUsize::new(0),
            cap,
        })
    }

    fn enter(self: &Arc<Self>) -> Option<Entered> {
        if self.in_flight.fetch_add(1, Relaxed) >= self.cap {
            self.in_flight.fetch_sub(1, Relaxed);
            return None;
        }
        Some(Entered(self.clone()))
    }
}

struct Entered(Arc<Counter>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

/// A request's place under both caps, held until its response body is done.
pub struct InFlight {
    _instance: Entered,
    _app: Entered,
}

/// Which cap refused a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Over {
    Instance,
    App,
}

pub fn enter(instance: &Arc<Counter>, app: &Arc<Counter>) -> Result<InFlight, Over> {
    let instance = instance.enter().ok_or(Over::Instance)?;
    let app = app.enter().ok_or(Over::App)?;
    Ok(InFlight {
        _instance: instance,
        _app: app,
    })
}

impl Over {
    pub fn message(&self) -> String {
        match self {
            Over::Instance => {
                format!("{PER_INSTANCE} outgoing requests in flight from this instance, its most")
            }
            Over::App => {
                format!("{PER_APP} outgoing requests in flight from this application, its most")
            }
        }
    }
}

/// A response body that keeps its request's place until it ends or is dropped.
pub struct Held<B> {
    pub inner: B,
    pub place: Option<InFlight>,
}

impl<B: Body<Data = Bytes> + Unpin> Body for Held<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.place.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cap_refuses_past_it_and_a_place_is_given_back() {
        let app = Counter::new(3);
        let first = Counter::new(2);
        let a = enter(&first, &app).unwrap();
        let _b = enter(&first, &app).unwrap();
        assert_eq!(enter(&first, &app).err(), Some(Over::Instance));
        let second = Counter::new(2);
        let _c = enter(&second, &app).unwrap();
        assert_eq!(enter(&second, &app).err(), Some(Over::App));
        assert_eq!(
            second.in_flight.load(Relaxed),
            1,
            "the refused one is not counted"
        );
        drop(a);
        assert!(enter(&second, &app).is_ok());
    }
}
