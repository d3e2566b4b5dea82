//! What the [`Compressor`](super::Compressor) resolves before a plan: how
//! to count, the window, the upstream model, what earlier turns forwarded,
//! and the mode the plan is made in. A leaf of its own, so that
//! `continuity` (which reads a `Setup`) and the module root do not import
//! each other.

use std::sync::Arc;

use super::continuity::{Anchor, InUse};
use crate::cache::CachedSummary;
use crate::summarize::UpstreamModel;
use crate::tokens::Counter;

/// What the service resolved before planning: how to count, the window,
/// the upstream model (None without an upstream), what earlier turns
/// forwarded, and the mode this plan is made in.
#[derive(Clone)]
pub(crate) struct Setup {
    pub counter: Counter<'static>,
    pub context_window: u64,
    pub model: Option<UpstreamModel>,
    pub warnings: Vec<String>,
    pub anchor: Hashes,
    pub history: History,
    pub mode: Mode,
}

/// What this request knows of what earlier turns forwarded. Only a known
/// history lets a due summary wait (the previous one is then what was sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum History {
    /// Not continuity mode (the request is all there is), or a continuity
    /// cache that answered and holds no summary of this conversation.
    Known,
    /// Continuity mode found a summary of a prefix: it is the request's
    /// `prior` and stays in place even when nothing is due; where it came
    /// into use (see [`binding`](super::binding)).
    Carried(InUse),
    /// Continuity mode without a cache, or with one that failed.
    Unknown,
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

/// How a plan is made. One value, chosen by the [`Compressor`](super::Compressor) per plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mode {
    /// A caller's turn, as the verdict says.
    Now,
    /// A caller's turn with precompute on (see [`precompute`](super::precompute)): when the
    /// summary is due, the one written ahead (`ready`) stands in if it is
    /// this turn's; else a summary the upstream would write waits for it
    /// while the thread fits.
    Hold { ready: Option<Ready> },
    /// As if a summary were due now: the background job of [`precompute`](super::precompute),
    /// which writes nothing when `ready` already is the summary it needs.
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

/// A summary written ahead for a prefix of this history (the swap rule:
/// it stands for exactly that prefix, every newer message verbatim, if that
/// fits and it is the summary this plan would write for that prefix).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ready {
    /// The first message it does not cover.
    pub cut: usize,
    pub entry: CachedSummary,
}
