//! A WAGI program's stdout: its whole response, held until it exits. Each write is charged to
//! the worker's memory budget (`budget.rs`) as it comes, and past the application's response
//! cap writes fail, so neither a large answer nor a flood of them costs memory unaccounted.

use crate::budget::Charge;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

#[derive(Clone)]
pub struct Output {
    bytes: Arc<Mutex<Vec<u8>>>,
    cap: usize,
    charge: Arc<Charge>,
}

impl Output {
    pub fn new(cap: usize, charge: Arc<Charge>) -> Output {
        Output {
            bytes: Arc::default(),
            cap,
            charge,
        }
    }

    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl IsTerminal for Output {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Output {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        if bytes.len() + buf.len() > self.cap {
            return Poll::Ready(Err(std::io::Error::other(
                "the response is larger than allowed",
            )));
        }
        if self.charge.take(buf.len() as u64).is_err() {
            return Poll::Ready(Err(std::io::Error::other(
                "the worker's memory budget is in use",
            )));
        }
        bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
