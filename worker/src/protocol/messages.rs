//! The protocol's messages as serde types. Their JSON is defined once, as JSON Schema, in
//! control/src/local/worker-client/protocol-schema.ts (the control plane derives its types
//! from it); tests/protocol.rs holds every command and line of a real worker to it.

use super::limits_input::LimitsInput;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub(super) enum Op {
    Load {
        app: String,
        lock: Value,
        components: HashMap<String, PathBuf>,
        #[serde(default)]
        variables: HashMap<String, String>,
        // Boxed: the other commands' lines should not all be the size of the largest.
        #[serde(default)]
        limits: Box<LimitsInput>,
        #[serde(default)]
        port: u16,
    },
    Unload {
        app: String,
        #[serde(default)]
        prune: bool,
    },
    Idle {
        app: String,
    },
    Stats,
    Prune,
}

/// What a command that succeeded answers, besides its `id` and `"ok": true`.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Reply {
    /// `load`: where the application answers.
    Loaded {
        url: String,
    },
    /// `unload` and `prune`: the digests of the compiled files deleted.
    Removed {
        removed: Vec<String>,
    },
    Stats(Box<StatsReply>),
    /// `idle`: nothing more to say.
    Done {},
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StatsReply {
    /// Per application, its counters (`stats.rs`) with its port, turns, memory and idleness.
    pub apps: serde_json::Map<String, Value>,
    pub apps_in_memory: usize,
    pub memory_budget: MemoryBudget,
    /// The runtime's threads serving requests (--threads), as the runtime counts them.
    pub threads: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemoryBudget {
    pub limit_bytes: u64,
    pub used_bytes: u64,
}
