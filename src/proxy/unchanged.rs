//! Why a request went to its provider as it came. A proxy that quietly
//! stops compressing looks healthy while every agent behind it runs into its
//! window, so each problem on condense's side is a kind of its own, logged
//! at WARN with the request id and counted by reason; the header note tells
//! the agent, the log line and the metric tell the operator.

use super::Call;
use crate::compress;
use crate::metrics::Metrics;

/// Why a request was forwarded unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchanged {
    /// Nothing for condense to do: the provider keeps the conversation
    /// (`previous_response_id`) or the input is a single message. Not a
    /// problem, so neither logged nor counted: an agent that works this way
    /// would otherwise fill the log with one warning per request.
    NothingToDo,
    /// The body, or its thread, is not one condense reads.
    Unreadable,
    /// `x-condense-profile` names no profile.
    UnknownProfile,
    /// The profile's summary settings are refused (a summarizer model the
    /// operator does not allow, a setting out of range).
    InvalidProfile,
    /// The profile's strategy needs a part that is not configured.
    StrategyUnavailable,
    /// The strategy needs the upstream LLM, which the caller's key may not use.
    Forbidden,
    /// The summarizer failed (and the profile says not to degrade).
    SummaryFailed,
    /// The thread cannot be made to fit its window.
    DoesNotFit,
    /// Compression took longer than the request time limit.
    Timeout,
    /// Every place among the requests at work was taken.
    Overloaded,
    /// Condense's own failure: a compressed thread that failed its checks,
    /// a body that could not be written.
    Internal,
}

impl Unchanged {
    /// The `reason` label of `condense_proxy_unchanged_requests_total`, or
    /// None when it is no problem.
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

    /// The kind of a compression failure and a short note for the header:
    /// which part stopped compression, never an upstream's own text.
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
    /// The note is condense's own short text (see [`Unchanged::of`]), so it
    /// carries no credentials and no thread content.
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
