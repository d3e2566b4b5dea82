//! Why a request went to its provider as it came. A proxy that quietly stops
//! compressing looks healthy, so each problem is logged at WARN and counted.

use super::Call;
use crate::compress;
use crate::metrics::Metrics;

/// Why a request was forwarded unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchanged {
    /// The provider keeps the conversation, or the input is one message:
    /// no problem, so neither logged nor counted.
    NothingToDo,
    Unreadable,
    UnknownProfile,
    InvalidProfile,
    StrategyUnavailable,
    Forbidden,
    SummaryFailed,
    DoesNotFit,
    Timeout,
    /// No place among the requests at work, or no memory.
    Overloaded,
    Internal,
}

impl Unchanged {
    /// The `reason` label of `condense_proxy_unchanged_requests_total` (None: no problem).
    pub fn problem(self) -> Option<&'static str> {
        Some(match self {
            Unchanged::NothingToDo => return None,
            Unchanged::Unreadable => "unreadable",
            Unchanged::UnknownProfile => "unknown_profile",
            Unchanged::InvalidProfile => "invalid_profile",
            Unchanged::StrategyUnavailable => "strategy_unavailable",
            Unchanged::Forbidden => "forbidden",
            Unchanged::SummaryFailed => "summary_failed",
            Unchanged::DoesNotFit => "does_not_fit",
            Unchanged::Timeout => "timeout",
            Unchanged::Overloaded => "overloaded",
            Unchanged::Internal => "internal",
        })
    }

    /// The kind of a compression failure and a short note (never upstream text).
    pub(super) fn of(e: &compress::Error) -> (Self, String) {
        use compress::Error as E;
        match e {
            E::DoesNotFit(_) => (
                Unchanged::DoesNotFit,
                "the thread cannot be made to fit its window".into(),
            ),
            E::Upstream(e) => (
                Unchanged::SummaryFailed,
                format!("the summarizer failed ({})", e.short()),
            ),
            E::StrategyUnavailable(_) => (
                Unchanged::StrategyUnavailable,
                "the profile's strategy is unavailable".into(),
            ),
            E::Forbidden(_) => (
                Unchanged::Forbidden,
                "the strategy is not allowed for this API key".into(),
            ),
            E::Invalid(_) | E::ModelNotAllowed(_) => (
                Unchanged::InvalidProfile,
                "the request's summary settings are invalid".into(),
            ),
            E::Bug(_) => (Unchanged::Internal, "compression failed".into()),
        }
    }

    /// Logs and counts a request forwarded unchanged because of a problem.
    pub(super) fn record(self, metrics: &Metrics, call: &Call, note: Option<&str>) {
        let Some(reason) = self.problem() else {
            return;
        };
        let provider = call.endpoint.format().as_str();
        tracing::warn!(
            request_id = call.request_id.as_deref().unwrap_or("-"),
            provider,
            reason,
            note = note.unwrap_or_default(),
            "a proxied request was forwarded unchanged"
        );
        metrics.proxy_unchanged(provider, reason);
    }
}
