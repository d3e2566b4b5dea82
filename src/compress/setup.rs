//! What the [`Compressor`](super::Compressor) resolves before a plan. A leaf,
//! so that `continuity` and the module root do not import each other.

use std::sync::Arc;

use super::continuity::{Anchor, InUse};
use crate::cache::CachedSummary;
use crate::summarize::UpstreamModel;
use crate::tokens::{CachePrices, Counter};

/// How to count, the window and cache prices, the upstream model (None without one), what
/// earlier turns forwarded, and the mode of this plan.
#[derive(Clone)]
pub(crate) struct Setup {
    pub counter: Counter<'static>,
    pub context_window: u64,
    /// The model's prompt-cache prices (the verdict's payback rule).
    pub cache: CachePrices,
    pub model: Option<UpstreamModel>,
    pub warnings: Vec<String>,
    pub anchor: Hashes,
    pub history: History,
    pub mode: Mode,
}

/// What this request knows of what earlier turns forwarded. Only a known
/// history lets a due summary wait in a tool loop, and vouches for the
/// caller's own thinking (see [`binding`](super::binding)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum History {
    /// Not continuity mode: the caller's thread is what it sends on.
    Known,
    /// Continuity found a summary of a prefix (the request's `prior`, kept
    /// even when nothing is due), and where it came into use.
    Carried(InUse),
    /// Continuity mode, and the cache holds no summary of this conversation:
    /// a new one, or one condense forgot (a restart without its cache, an
    /// evicted row, another profile). Its thinking may be bound to a prefix
    /// condense rewrote; a summary written ahead may still be held for.
    Unrecorded,
    /// Continuity mode without a cache, or with one that failed.
    Unknown,
}

impl History {
    /// Condense knows what earlier turns forwarded: a due summary may wait
    /// to keep an active loop's final thinking valid.
    pub(super) fn known(&self) -> bool {
        matches!(self, History::Known | History::Carried(_))
    }
}

/// The history's hashes ([`Anchor`]), under which the summaries a request
/// writes are indexed.
#[derive(Clone)]
pub(crate) enum Hashes {
    /// No cache: nothing is indexed, so nothing is hashed.
    Off,
    /// Hashed only when a summary is written.
    Later,
    /// Hashed up front (continuity mode, precompute).
    Made(Arc<Anchor>),
}

impl Hashes {
    pub(super) fn made(&self) -> Option<&Arc<Anchor>> {
        match self {
            Hashes::Made(anchor) => Some(anchor),
            Hashes::Off | Hashes::Later => None,
        }
    }
}

/// How a plan is made, chosen by the [`Compressor`](super::Compressor).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mode {
    /// A caller's turn, as the verdict says.
    Now,
    /// A turn with [`precompute`](super::precompute) on: a due summary is
    /// `ready` if it is this turn's, else an upstream one waits while it fits.
    Hold { ready: Option<Ready> },
    /// As if due now: the background job, which writes nothing when `ready`
    /// already is the summary it needs.
    Ahead { ready: Option<Ready> },
}

impl Mode {
    /// The summary written ahead that the plan may take.
    pub(super) fn ready(&self) -> Option<&Ready> {
        match self {
            Mode::Now => None,
            Mode::Hold { ready } | Mode::Ahead { ready } => ready.as_ref(),
        }
    }
}

/// A summary written ahead for a prefix of this history (the swap rule).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ready {
    /// The first message it does not cover.
    pub cut: usize,
    pub entry: CachedSummary,
}
