//! `POST /v1/compress`: return a thread that fits, with the older span summarized.

use super::access::Access;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::ApiJson;
use super::input::{SummaryInput, method};
use crate::compress::{
    self, AppliedEdit, Compression, GroupBy, IterationSummary, Precompute, Reason, SummaryObject,
};
use crate::error::Result;
use crate::guard::Caller;
use crate::policy::ProfileOverrides;
use crate::state::AppState;
use crate::summarize::{Strategy, Usage};
use crate::thread::WireFormat;

super::access::routes! { Access::Api; post "/v1/compress" => compress_thread }

super::input::thread_request! {
    pub struct CompressRequest {
        pub profile: Option<String>,
        pub config: Option<ProfileOverrides>,
        /// The summary object of a previous compression.
        pub summary: Option<SummaryInput>,
        pub summarizer: Option<SummarizerInput>,
        /// Compress even when the verdict says nothing is due.
        #[serde(default)]
        pub force: bool,
        pub group_by: Option<GroupBy>,
        pub keep_recent_iterations: Option<u64>,
        /// Write the summary the due call will need ahead of time.
        #[serde(default)]
        pub precompute: bool,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarizerInput {
    #[serde(default)]
    pub strategy: Strategy,
    #[serde(default, deserialize_with = "super::input::model_name")]
    pub model: Option<String>,
    pub instructions: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CompressResponse {
    pub compressed: bool,
    pub reason: Option<Reason>,
    pub format: WireFormat,
    /// The thread in the caller's wire format; unchanged messages value for
    /// value. A Responses thread comes back in `input` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
    /// Anthropic's top-level system, unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// The Responses thread's items...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<Value>>,
    /// ...and its instructions, unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Value>,
    pub summary: Option<SummaryObject>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub context_window: u64,
    /// True when the summary is not what was asked for (an upstream failed).
    pub degraded: bool,
    /// What the upstream LLM took for this summary (null without an LLM call).
    pub usage: Option<Usage>,
    /// Request indices of messages dropped without a summary (`truncate`).
    pub messages_dropped: Vec<usize>,
    /// Request indices of kept messages whose long texts were cut to fit.
    pub messages_truncated: Vec<usize>,
    /// What tool-result (and thinking) clearing did; empty when nothing.
    pub applied_edits: Vec<AppliedEdit>,
    /// Anthropic: kept thinking blocks may follow a changed prefix: send the
    /// thread with `drop_block` (docs/compression.md "Preserved thinking").
    pub thinking_drop_block: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summaries: Option<Vec<IterationSummary>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_injection: Option<String>,
    /// What precompute did (with `precompute: true`; null when nothing).
    pub precompute: Option<Precompute>,
    pub warnings: Vec<String>,
}

/// 200, or 202 when a summary is being written ahead; the same body.
async fn compress_thread(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<CompressRequest>,
) -> Result<(StatusCode, Json<CompressResponse>)> {
    // Parsing a long thread is CPU work: on the blocking pool, like the rest.
    let compression = app.cpu(move |app| parse(app, req, caller.llm)).await?;
    let empty = super::input::empty_thread(&compression.thread);
    let mut outcome = app.compressor.run(compression).await?;
    outcome.warnings.extend(empty);
    let status = match outcome.precompute {
        Some(p) if p.accepted() => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    Ok((status, Json(respond(outcome))))
}

/// The request as the domain takes it; the rules its fields must meet
/// together are the domain's ([`Compression::check`]).
fn parse(app: &AppState, mut req: CompressRequest, upstream_allowed: bool) -> Result<Compression> {
    let profile = app
        .profiles
        .resolve(req.profile.as_deref(), req.config.as_ref())?;
    let thread = req.thread().parse(&app.config.limits.thread())?;
    let prior = req.summary.map(|s| s.into_prior(&thread)).transpose()?;
    let summarizer = req.summarizer.unwrap_or_default();
    let keep_recent_iterations =
        compress::keep_recent_iterations(req.group_by, req.keep_recent_iterations)?;
    let method = method(req.method, req.chars_per_token, Some(&profile))?;
    Ok(Compression {
        thread,
        profile,
        min_recent_overridden: req
            .config
            .as_ref()
            .is_some_and(|c| c.min_recent_messages.is_some()),
        model: req.model,
        encoding: req.encoding,
        method,
        prior,
        strategy: summarizer.strategy,
        summarizer_model: summarizer.model,
        instructions: summarizer.instructions,
        force: req.force,
        keep_recent_iterations,
        continuity: false,
        upstream_allowed,
        thinking_required: true,
        precompute: req.precompute,
    })
}

fn respond(outcome: compress::Outcome) -> CompressResponse {
    let context_injection = outcome
        .iterations
        .as_ref()
        .and(outcome.summary.as_ref())
        .map(|s| s.content.clone());
    let format = outcome.thread.format;
    let messages: Vec<Value> = outcome.thread.messages.into_iter().map(|m| m.raw).collect();
    let system = outcome.thread.system.map(|s| s.raw);
    // A Responses thread goes back under its own names.
    let (messages, system, input, instructions) = match format {
        WireFormat::Responses => (None, None, Some(messages), system),
        _ => (Some(messages), system, None, None),
    };
    CompressResponse {
        compressed: outcome.compressed,
        reason: outcome.reason,
        format,
        messages,
        system,
        input,
        instructions,
        context_injection,
        summary: outcome.summary,
        tokens_before: outcome.tokens_before,
        tokens_after: outcome.tokens_after,
        context_window: outcome.context_window,
        degraded: outcome.degraded,
        usage: outcome.usage,
        messages_dropped: outcome.messages_dropped,
        messages_truncated: outcome.messages_truncated,
        applied_edits: outcome.applied_edits,
        thinking_drop_block: outcome.thinking_drop_block,
        summaries: outcome.iterations,
        precompute: outcome.precompute,
        warnings: outcome.warnings,
    }
}
