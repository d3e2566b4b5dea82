//! Per-iteration summaries (`group_by: "iteration"`), written through the
//! summary service like any summary; the plan and finish ask [`Grouping`]
//! what differs, here only.

use std::ops::Range;

use super::split;
use crate::summarize::{SummaryRequest, SummarySettings};
use crate::thread::Message;

pub use crate::summarize::IterationSummary;

/// One running summary, or one per older iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grouping {
    Messages,
    /// `keep_recent_iterations`: how many recent iterations stay verbatim.
    Iterations(usize),
}

impl Grouping {
    /// Where the verbatim tail starts: at a unit boundary, keeping at least
    /// `min_recent` messages, or the recent iterations asked for.
    pub(super) fn tail_start(
        self,
        messages: &[Message],
        units: &[Range<usize>],
        start: usize,
        min_recent: usize,
    ) -> usize {
        match self {
            Grouping::Messages => split::tail_start(units, messages.len(), start, min_recent),
            Grouping::Iterations(keep) => split::iteration_tail_start(messages, units, start, keep),
        }
    }

    /// Whether the cut may still move (shrunk, or swapped); per iteration it is final.
    pub(super) fn cut_moves(self) -> bool {
        matches!(self, Grouping::Messages)
    }

    /// Whether the summary is the injection, a list read back (and shrunk as one).
    pub(super) fn lists(self) -> bool {
        matches!(self, Grouping::Iterations(_))
    }

    /// The summary job for `messages[start..cut]` (per iteration: none if empty).
    pub(super) fn request(
        self,
        messages: &[Message],
        start: usize,
        cut: usize,
        settings: SummarySettings,
    ) -> Option<SummaryRequest> {
        let span = &messages[start..cut];
        match self {
            Grouping::Messages => Some(SummaryRequest::new(span, settings)),
            Grouping::Iterations(_) if span.is_empty() => None,
            Grouping::Iterations(_) => {
                let its = split::iterations(messages, start);
                Some(SummaryRequest::by_iteration(
                    span,
                    &its[..cut - start],
                    settings,
                ))
            }
        }
    }
}

/// The summaries an injection holds.
pub(super) use crate::summarize::iteration_summaries as summaries;
