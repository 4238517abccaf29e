//! The threads that load applications (compile or map their components, link them). A load
//! blocks for milliseconds (a compiled file mapped) to seconds (Cranelift compiling a 12 MB
//! component); it used tokio's blocking pool, which every blocking call of every request shares
//! as well, so a burst of those could hold up a deploy and a burst of loads the requests.
//! Here loads queue for their own few threads, in order.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// A load that did not run to its end.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("loading failed: it panicked")]
    Panicked,
    #[error("loading failed: no load thread")]
    NoThread,
    #[error("loading failed: the load thread ended")]
    ThreadEnded,
}

pub struct LoadPool {
    jobs: Mutex<Sender<Job>>,
}

impl LoadPool {
    /// `name`: its threads' name, numbered.
    pub fn new(name: &str, threads: usize) -> LoadPool {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || take_jobs(&queue))
                .expect("a thread for loads");
        }
        LoadPool {
            jobs: Mutex::new(jobs),
        }
    }

    /// Runs `job` on a load thread; an error when it panicked.
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, PoolError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = done.send(outcome.map_err(|_| PoolError::Panicked));
        });
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .map_err(|_| PoolError::NoThread)?;
        result.await.map_err(|_| PoolError::ThreadEnded)?
    }
}

fn take_jobs(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only to take the next job, not while it runs.
        let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_off_the_runtime_and_a_panic_is_an_error() {
        let pool = LoadPool::new("load", 2);
        let name = pool
            .run(|| std::thread::current().name().unwrap_or("").to_string())
            .await
            .unwrap();
        assert!(name.starts_with("load-"), "{name}");
        let panicked = pool.run(|| -> u8 { panic!("a bad load") }).await;
        assert_eq!(panicked, Err(PoolError::Panicked));
        assert_eq!(
            pool.run(|| 7).await,
            Ok(7),
            "the thread goes on after a panic"
        );
    }
}
