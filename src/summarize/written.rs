//! What a summarizer (or the cache) hands back.

use serde::{Deserialize, Serialize};

use super::Strategy;

/// Version of the summarizers' prompt and output, part of the content hash.
pub const PROMPT_VERSION: u32 = 2;

/// Upstream LLM usage behind a summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Upstream requests made (chunks and retries included).
    pub calls: u32,
    /// Wall time spent waiting on the upstream, in milliseconds.
    pub upstream_ms: u64,
}

/// A written summary and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub content: String,
    /// What actually wrote it (`heuristic` after an upstream failure).
    pub strategy: Strategy,
    pub model: Option<String>,
    /// The content hash it is stored under.
    pub key: String,
    pub created_at: String,
    pub cached: bool,
    pub degraded: bool,
    pub usage: Option<Usage>,
    /// What it kept of its span's anchors (None: a cache entry without one).
    pub fidelity: Option<Fidelity>,
    pub warnings: Vec<String>,
}

/// What a summary kept of its span's anchors (see "Fidelity receipt" in
/// docs/compression.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    /// Anchors checked (at most 178; each kind is capped).
    pub anchors: usize,
    /// Held by the summary's own text.
    pub kept: usize,
    /// Held only thanks to the `### Also in the span` list the repair appended.
    pub added: usize,
    /// Held by neither; they did not fit `max_summary_tokens`.
    pub missing: usize,
    /// Anchors beyond the per-kind caps, not checked.
    pub left_out: usize,
}

impl Fidelity {
    /// The proxy's `x-condense-fidelity` header value.
    pub fn header(&self) -> String {
        format!(
            "anchors={} kept={} added={} missing={} left_out={}",
            self.anchors, self.kept, self.added, self.missing, self.left_out
        )
    }
}
