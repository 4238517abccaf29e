//! A `load`'s `limits` as the command gives them, and the application's limits they make.

use crate::limits::Limits;
use serde::Deserialize;
use std::time::Duration;

const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
const DEFAULT_MAX_REQUEST_BODY: u64 = 10 << 20;
const DEFAULT_MAX_RESPONSE_BODY: u64 = 32 << 20;
/// A tenth of the default pool (1,000 instances): ten applications flooding at once still
/// leave instances to every other one.
const DEFAULT_MAX_CONCURRENT: u64 = 100;
const DEFAULT_MAX_QUEUED: u64 = 100;
/// A queue longer than this only makes callers wait for deadlines in a row.
const MAX_QUEUED: u64 = 10_000;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsInput {
    pub memory_bytes: Option<u64>,
    pub request_timeout_ms: Option<u64>,
    pub max_request_body_bytes: Option<u64>,
    pub max_response_body_bytes: Option<u64>,
    pub max_concurrent_requests: Option<u64>,
    pub max_queued_requests: Option<u64>,
}

impl LimitsInput {
    /// The limits of a `load`: the defaults for those absent, each checked against the worker's.
    pub fn into_limits(self, max_memory_bytes: u64, max_instances: u64) -> Result<Limits, String> {
        let memory = self.memory_bytes.unwrap_or(DEFAULT_MEMORY_BYTES);
        if memory > max_memory_bytes {
            return Err(format!(
                "limits.memoryBytes {memory} is above the worker's --max-memory-bytes {max_memory_bytes}"
            ));
        }
        let timeout = self.request_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout == 0 {
            return Err("limits.requestTimeoutMs must be positive".into());
        }
        let concurrent = self
            .max_concurrent_requests
            .unwrap_or(DEFAULT_MAX_CONCURRENT.min(max_instances));
        if concurrent == 0 || concurrent > max_instances {
            return Err(format!(
                "limits.maxConcurrentRequests {concurrent} must be from 1 to the worker's --max-instances {max_instances}"
            ));
        }
        let queued = self.max_queued_requests.unwrap_or(DEFAULT_MAX_QUEUED);
        if queued > MAX_QUEUED {
            return Err(format!(
                "limits.maxQueuedRequests {queued} is above {MAX_QUEUED}"
            ));
        }
        Ok(Limits {
            memory_bytes: memory as usize,
            request_timeout: Duration::from_millis(timeout),
            max_request_body_bytes: self
                .max_request_body_bytes
                .unwrap_or(DEFAULT_MAX_REQUEST_BODY),
            max_response_body_bytes: self
                .max_response_body_bytes
                .unwrap_or(DEFAULT_MAX_RESPONSE_BODY),
            max_concurrent_requests: concurrent as usize,
            max_queued_requests: queued as usize,
        })
    }
}
