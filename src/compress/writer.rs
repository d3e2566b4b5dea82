//! Who writes the summary, decided once as a [`Decision`]. A leaf of the plan.

use super::Error;
use crate::policy::Profile;
use crate::summarize::{Strategy, UpstreamModel, Writer};
use crate::thread::{FieldError, WireFormat};
use crate::upstream::Kind;

/// What replaces the span.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// Dropped without a summary.
    Truncate,
    /// Summarized by this writer.
    Write(Writer),
}

impl Decision {
    /// The upstream LLM writes (some of) the summary.
    pub(super) fn upstream(&self) -> bool {
        matches!(self, Decision::Write(Writer::Llm(_) | Writer::Hybrid(_)))
    }
}

/// The upstream model (None without one), and whether this caller may use it.
pub(super) struct Upstream {
    pub model: Option<UpstreamModel>,
    pub allowed: bool,
}

/// What the thread allows of a writer: the provider's compaction item
/// stands only in a Responses thread, and is not an iteration list.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub format: WireFormat,
    /// Per-iteration summaries (continuity's list).
    pub lists: bool,
}

/// `auto` is `llm` when an upstream is configured, the caller may use it
/// and the span and thread reach `llm_min_tokens`/`llm_min_total_tokens`,
/// else `heuristic`; `llm`, `hybrid` and `provider` need an upstream and
/// the permission, `provider` a Responses thread too (on the proxy its
/// upstream is the conversation's provider, `upstream.model` its model).
pub(super) fn decide(
    s: Strategy,
    shape: Shape,
    upstream: Upstream,
    (span_tokens, total_tokens): (u64, u64),
    p: &Profile,
    warnings: &mut Vec<String>,
) -> Result<Decision, Error> {
    let worth_an_llm = span_tokens >= p.llm_min_tokens && total_tokens >= p.llm_min_total_tokens;
    let Upstream { model, allowed } = upstream;
    let would = || {
        format!(
            "strategy `auto` would have the upstream LLM write this summary (span {span_tokens} tokens, thread {total_tokens})"
        )
    };
    Ok(match (s, model) {
        (Strategy::Truncate, _) => Decision::Truncate,
        (Strategy::ClearToolResults, _) => {
            unreachable!("`clear_tool_results` is answered before a writer is decided")
        }
        (Strategy::Heuristic, _) => Decision::Write(Writer::Heuristic),
        (Strategy::Auto, Some(_)) if worth_an_llm && !allowed => {
            warnings.push(format!(
                "{}, but this API key may not use it (it is not marked `llm`): the heuristic wrote it",
                would()
            ));
            Decision::Write(Writer::Heuristic)
        }
        (Strategy::Auto, Some(m)) if worth_an_llm => Decision::Write(Writer::Llm(m)),
        (Strategy::Auto, _) => Decision::Write(Writer::Heuristic),
        (Strategy::Provider, _) if shape.format != WireFormat::Responses || shape.lists => {
            let why = match shape.lists {
                true => "writes one item, not per-iteration summaries",
                false => {
                    "writes an OpenAI Responses compaction item, and this thread is not in the Responses format"
                }
            };
            return Err(Error::Invalid(vec![FieldError::new(
                "/summarizer/strategy",
                format!("strategy `provider` {why}; use `heuristic`, `llm`, `hybrid` or `auto`"),
            )]));
        }
        (Strategy::Llm | Strategy::Hybrid | Strategy::Provider, Some(_)) if !allowed => {
            return Err(Error::Forbidden(format!(
                "strategy `{}` has the upstream LLM write the summary, and this API key may not use it (the operator marks such keys `llm`); use `heuristic`, `truncate` or `auto`",
                s.as_str()
            )));
        }
        (Strategy::Llm, Some(m)) => Decision::Write(Writer::Llm(m)),
        (Strategy::Hybrid, Some(m)) => Decision::Write(Writer::Hybrid(m)),
        (Strategy::Provider, Some(m)) if m.kind != Kind::OpenAi => {
            return Err(Error::StrategyUnavailable(
                "strategy `provider` needs an OpenAI-compatible upstream (its `/responses/compact`), and the configured one speaks Anthropic's API; use `heuristic`, `llm`, `hybrid` or `auto`".into(),
            ));
        }
        (Strategy::Provider, Some(m)) => Decision::Write(Writer::Provider(m)),
        (Strategy::Llm | Strategy::Hybrid | Strategy::Provider, None) => {
            return Err(Error::StrategyUnavailable(format!(
                "strategy `{}` needs an upstream LLM and none is configured (set CONDENSE_UPSTREAM_URL); use `heuristic`, `truncate` or `auto`",
                s.as_str()
            )));
        }
    })
}
