//! `POST /v1/compress`: return a thread that fits, with the older span summarized.

use super::access::Access;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::Ref;
use utoipa::openapi::schema::{
    Array, ArrayBuilder, Object, ObjectBuilder, RefBuilder, SchemaType, Type,
};

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
    /// A thread (`messages`, or `input` for a Responses API thread, which is
    /// answered in `input`), what to decide it with, and how to summarize it.
    /// Null means absent for every optional field but `force` and
    /// `precompute`. Checked beyond the schema: `config.min_recent_messages`
    /// may not exceed the number of messages; `summary.last_message_idx` must
    /// be below it; a `summary` object needs `content` unless the thread holds
    /// a summary message.
    pub struct CompressRequest {
        /// A profile name from `GET /v1/profiles` (default `default`); an
        /// unknown name is a 422 at `/profile`.
        pub profile: Option<String>,
        /// Single-field overrides of the profile.
        pub config: Option<ProfileOverrides>,
        /// The summary object of a previous compression, when the client
        /// keeps the full history; a summary message in the thread wins over
        /// it (with a warning).
        pub summary: Option<SummaryInput>,
        pub summarizer: Option<SummarizerInput>,
        /// Compress even when nothing is due (default false; null is
        /// rejected).
        #[serde(default)]
        pub force: bool,
        /// `iteration`: keep whole iterations (`metadata.iteration`) and
        /// summarize each older one in a few sentences (`summaries`,
        /// `context_injection`), with `summarizer.strategy` (`llm`, `hybrid` and
        /// `auto` call the upstream, cached like any summary, with
        /// `on_upstream_error` applying) and within the summary bound
        /// (`max_summary_tokens`, at most 30% of the budget) for the whole
        /// injection: each iteration gets an equal share, what a short one leaves
        /// goes to the longer ones, and when a share would fall under 40 tokens
        /// the oldest iterations are left out and counted in a `(N earlier
        /// iterations left out)` line. A heuristic summary keeps every user
        /// request of the iteration, failing commands with their exit status,
        /// errors, files, decisions, and says when the iteration produced no
        /// output.
        #[schema(inline)]
        pub group_by: Option<GroupBy>,
        /// How many newest iterations stay verbatim (default 3); only with
        /// `group_by: iteration`.
        #[schema(minimum = 1, maximum = 10000)]
        pub keep_recent_iterations: Option<u64>,
        /// Write the summary the due call will need ahead of time
        /// (docs/compression.md, "Precompute"; default false; null is
        /// rejected). When the thread has come the profile's `precompute_at`
        /// of the way to its nearest trigger, the summary a due compression
        /// would write now (same cut, writer and settings) is started in the
        /// background and the answer is 202 with the usual body (`precompute:
        /// started` or `running`). The call on which a summary falls due, with
        /// `precompute: true` too, swaps it in (`precompute: used`: it covers
        /// exactly the prefix it was written for, every newer message
        /// verbatim) without waiting for the upstream; not ready yet and the
        /// thread fits, it goes on without a new summary (`precompute:
        /// pending`, 202; the previous summary, or none, kept) and a later
        /// call swaps it in. Applies when a summary cache and an upstream LLM
        /// are configured, the caller may use it, the strategy is `auto`,
        /// `llm` or `hybrid` and `group_by` is not set.
        #[serde(default)]
        pub precompute: bool,
        /// Seconds since this conversation's previous request to the
        /// provider, by the caller's own clock (condense keeps none for
        /// this stateless endpoint). Past the profile's
        /// `provider_cache_ttl`, the provider's cache is cold: a summary
        /// past `precompute_at` of the way to its trigger is written now
        /// (`reason: cold_cache`; docs/compression.md, "A cold cache").
        /// Absent: the cache is taken as warm. At most ten years.
        #[schema(minimum = 0, maximum = 315_360_000)]
        pub idle_seconds: Option<u64>,
    }
}

/// How the older span is summarized. Unknown fields are rejected.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Summarizer)]
pub struct SummarizerInput {
    /// The profile's `strategy` (`auto` by default) when absent;
    /// `clear_tool_results` clears tool results alone, no summary (see the
    /// operation). Without an upstream LLM, `llm`, `hybrid` and `provider`
    /// answer 422 `Strategy unavailable`; `provider` (the upstream's
    /// `/responses/compact` item) takes a Responses thread only. Null is
    /// rejected.
    #[serde(default, deserialize_with = "super::input::not_null")]
    #[schema(inline, nullable = false)]
    pub strategy: Option<Strategy>,
    /// The upstream model that writes the summary (default
    /// `--upstream-model`); with an upstream it must be that model or one of
    /// `--upstream-allowed-models` (else a 422 at `/summarizer/model`);
    /// without one it is ignored, with a warning.
    #[serde(default, deserialize_with = "super::input::model_name")]
    #[schema(max_length = 256)]
    pub model: Option<String>,
    /// Extra instructions for an LLM summarizer, at most 4000 characters;
    /// part of the summary's `content_hash`.
    #[schema(max_length = 4000)]
    pub instructions: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompressResponse {
    /// False when the thread comes back unchanged.
    pub compressed: bool,
    #[schema(schema_with = reason, required = true)]
    pub reason: Option<Reason>,
    pub format: WireFormat,
    /// The thread in the caller's wire format; unchanged messages value for
    /// value. A Responses thread comes back in `input` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = messages)]
    pub messages: Option<Vec<Value>>,
    /// Anthropic's top-level system, unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = system)]
    pub system: Option<Value>,
    /// The Responses thread's items...
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = input)]
    pub input: Option<Vec<Value>>,
    /// ...and its instructions, unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = instructions)]
    pub instructions: Option<Value>,
    /// The summary written (null when unchanged or with `truncate`). Send it
    /// back as `summary` to extend it.
    #[schema(required = true)]
    pub summary: Option<SummaryObject>,
    /// The request thread's count (as `POST /v1/tokens` counts it).
    pub tokens_before: usize,
    /// The returned thread's count (what `POST /v1/tokens` says of it).
    pub tokens_after: usize,
    /// The window used (the profile's, else the model's).
    #[schema(minimum = 1)]
    pub context_window: u64,
    /// True when the summary is not what was asked for: the upstream LLM
    /// failed and a heuristic summary was used (`on_upstream_error: fallback`).
    pub degraded: bool,
    /// What the upstream LLM took for this summary; null without an LLM call.
    #[schema(required = true)]
    pub usage: Option<Usage>,
    /// Request indices of messages dropped without a summary (`truncate`, or
    /// to fit).
    pub messages_dropped: Vec<usize>,
    /// Request indices of kept messages whose long texts were cut in the
    /// middle to fit.
    pub messages_truncated: Vec<usize>,
    /// What tool-result and thinking clearing did (empty when it did
    /// nothing); `tokens_before` is the count before clearing.
    pub applied_edits: Vec<AppliedEdit>,
    /// Anthropic preserved thinking: kept thinking blocks follow a prefix
    /// that changed (or may have: a reused summary, a cut or cleared text).
    /// Send this thread with `thinking.block_binding.prefix_mismatch_behavior:
    /// "drop_block"` and the beta `thinking-binding-controls-2026-08-01`, so
    /// the API drops the blocks that are no longer valid instead of refusing
    /// the request. False when no kept block needs it (blocks after a summary
    /// written now are removed instead, see `remove_stale_thinking`). Always
    /// false on OpenAI's Responses API, which has no such opt-in: reasoning
    /// it would drop is removed and reported instead.
    pub thinking_drop_block: bool,
    /// With `group_by: iteration` and `compressed`: one summary per iteration
    /// in `context_injection` (those of a previous injection it extends
    /// first; the oldest may be left out to keep the bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub summaries: Option<Vec<IterationSummary>>,
    /// With `group_by: iteration` and a summary: the per-iteration summaries
    /// as one text for an agent's system prompt. It starts with the previous
    /// injection it extends, byte for byte, unless the size bound forced a
    /// re-fold (older iterations folded into the rolling entry): then
    /// `warnings` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub context_injection: Option<String>,
    /// What precompute did (request `precompute: true`, docs/compression.md,
    /// "Precompute"): `started`, `running` (a summary for the due call is
    /// being written in the background; the answer is 202), `ready` (it was
    /// written and waits), `used` (this thread carries it: the swap rule),
    /// `pending` (a summary is due, the one being written ahead is not ready,
    /// and the thread fits: no new summary this call; 202), `skipped` (no
    /// background slot or memory was free). Null when it did nothing.
    #[schema(inline, required = true)]
    pub precompute: Option<Precompute>,
    pub warnings: Vec<String>,
}

// The fields whose type does not say their schema: the thread as it goes
// back (the wire formats' bodies, written in `thread/schemas.yaml`), and
// the reasons this endpoint gives (a subset of its type's).

/// Why it was compressed: any [`Reason`] but `continued`, the proxy's
/// (continuity mode), never this endpoint's.
fn reason() -> Object {
    let all = serde_json::to_value(<Reason as utoipa::PartialSchema>::schema());
    let all = all.expect("a schema is JSON")["enum"].take();
    let continued = serde_json::to_value(Reason::Continued).expect("a reason is a string");
    let reasons = all
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| **r != continued);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(reasons.cloned().chain([Value::Null])))
        .description(Some(
            "Why it was compressed (the verdict's trigger; `forced`; `rules` when nothing was due but the profile's per-message truncation rules cut messages; `tool_results_cleared` when no summary was due, or the strategy is `clear_tool_results`, and clearing changed the thread); null when it was not.",
        ))
        .build()
}

/// A list of the written schema `item`, described.
fn list_of(item: &str, description: &str) -> Array {
    ArrayBuilder::new()
        .items(Ref::from_schema_name(item))
        .description(Some(description))
        .build()
}

fn messages() -> Array {
    list_of(
        "ThreadMessage",
        "The thread to send next, in the request's wire format; kept messages value for value. Absent for a Responses thread, which comes back in `input`.",
    )
}

fn system() -> RefBuilder {
    RefBuilder::new()
        .ref_location_from_schema_name("AnthropicSystem")
        .description(Some(
            "Anthropic's top-level `system`, unchanged; absent when the request had none.",
        ))
}

fn input() -> Array {
    list_of(
        "ResponsesItem",
        "A Responses thread to send next (`format: responses`): its items, kept ones value for value, the summary as a `{role, content}` message item.",
    )
}

fn instructions() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Array]))
        .description(Some(
            "The Responses thread's `instructions`, unchanged; absent when the request had none.",
        ))
        .build()
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
    let strategy = profile.strategy;
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
        strategy: summarizer.strategy.unwrap_or(strategy),
        summarizer_model: summarizer.model,
        instructions: summarizer.instructions,
        force: req.force,
        keep_recent_iterations,
        continuity: false,
        upstream_allowed,
        thinking_required: true,
        precompute: req.precompute,
        idle: req.idle_seconds.map(std::time::Duration::from_secs),
        compact_target: None,
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
