//! The request on its way: its thread compressed when due (or, in shadow
//! mode, only measured), every other field untouched but for Anthropic's
//! `drop_block` opt-out where thinking may be stale.

use axum::body::Bytes;
use serde_json::Value;

use super::thinking::{
    opt_into_drop_block, opts_in, removed_thinking, spliced, thinking_on, unread_opted_out,
};
use super::{Proxy, ProxyError, Unchanged};
use crate::compress::{Compression, Outcome, Precompute, Reason, carries_thinking};
use crate::policy::{OnUpstreamError, Profile};
use crate::summarize::{Fidelity, Strategy, cpu};
use crate::thread::{self, Limits, RawThread, Shape, Thread, WireFormat};
use crate::upstream::{CompactTarget, Secret};

/// Request: the profile (default: `default`).
pub const PROFILE: &str = "x-condense-profile";
/// Request: `true` forwards unchanged and reports what compression would do.
pub const SHADOW: &str = "x-condense-shadow";

/// How condense treats one request, from its headers and its caller.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub profile: Option<String>,
    pub shadow: bool,
    /// The caller may have the upstream LLM write summaries.
    pub upstream_allowed: bool,
    /// What a `provider` compaction goes with ([`Proxy::credentials`]).
    pub credentials: Vec<(String, Secret)>,
}

/// The body to forward and what was done to it.
#[derive(Debug)]
pub struct Prepared {
    pub body: Bytes,
    pub report: Report,
}

/// What condense did to a request, for the `x-condense-*` headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub compressed: bool,
    /// Shadow mode reports it.
    pub would_compress: bool,
    pub shadow: bool,
    pub tokens_before: Option<usize>,
    pub tokens_after: Option<usize>,
    pub summary_cached: Option<bool>,
    /// The summarizer LLM's tokens on this request (None: no summary).
    pub summary_call_tokens: Option<u64>,
    /// The thread carries earlier turns' summary byte for byte.
    pub prefix_reused: Option<bool>,
    pub precompute: Option<Precompute>,
    pub fidelity: Option<Fidelity>,
    pub unchanged: Option<Unchanged>,
    /// Why, in words (never an upstream's or a database's text).
    pub note: Option<String>,
    /// Kept turns whose stale thinking was removed (Anthropic).
    pub thinking_removed: usize,
    /// Opted into Anthropic's `drop_block` (needs its beta).
    pub drop_block: bool,
    /// The conversation's name (`conversation::id`), once its thread was read.
    pub conversation: Option<String>,
    /// Why the thread was compressed (`cold_cache`), for the ledger; None
    /// when it goes as it came.
    pub reason: Option<Reason>,
}

impl Prepared {
    /// The body forwarded unread, condense being overloaded. With Anthropic's
    /// thinking on it goes with the `drop_block` opt-out (as [`as_sent`]
    /// would), spliced in by one scan of its bytes.
    pub fn overloaded(format: WireFormat, body: Bytes, note: &str) -> Self {
        let opted = (format == WireFormat::Anthropic)
            .then(|| unread_opted_out(&body))
            .flatten();
        let drop_block = opted.is_some();
        let body = opted.map_or(body, Bytes::from);
        let mut prepared = Self::unchanged(body, Unchanged::Overloaded, note);
        prepared.report.drop_block = drop_block;
        prepared
    }

    /// The body as it came, and why it was not compressed.
    pub fn unchanged(body: Bytes, why: Unchanged, note: impl Into<String>) -> Self {
        Self {
            body,
            report: Report {
                unchanged: Some(why),
                note: Some(note.into()),
                ..Report::default()
            },
        }
    }
}

impl Proxy {
    /// Compresses the thread of `body` (of this `shape`) when due. Fails only
    /// for a thread over the limits; anything else forwards the body as it
    /// came, with a note.
    pub async fn prepare(
        &self,
        format: WireFormat,
        options: &Options,
        body: Bytes,
        shape: Shape,
    ) -> Result<Prepared, ProxyError> {
        let shadow = options.shadow || self.config.shadow;
        let read = {
            let body = body.clone();
            let limits = self.config.limits;
            cpu(move || read(format, &body, shape, limits))
        };
        let Ok(mut profile) = self.profiles.resolve(options.profile.as_deref(), None) else {
            let note = "unknown x-condense-profile";
            let unchanged = Prepared::unchanged(body, Unchanged::UnknownProfile, note);
            // Under another profile, condense may have rewritten its history.
            let read = read.await.ok();
            let json = read.filter(|(json, t)| unvouched(format, json, t));
            return Ok(as_sent(unchanged, json.map(|(json, _)| json)).await);
        };
        let (json, thread) = match read.await {
            Ok(read) => read,
            Err(Unread::TooLarge(detail)) => return Err(ProxyError::TooLarge(detail)),
            Err(Unread::Skip(why, note)) => return Ok(Prepared::unchanged(body, why, note)),
        };
        let opt_out = unvouched(format, &json, &thread);
        let (strategy, fell_back) = match strategy(format, &profile) {
            Ok(chosen) => chosen,
            Err(note) => {
                let unchanged = Prepared::unchanged(body, Unchanged::StrategyUnavailable, note);
                return Ok(as_sent(unchanged, opt_out.then_some(json)).await);
            }
        };
        let conversation = super::conversation::id(format, &json, &thread);
        super::idle::lifetime(format, &json, &mut profile);
        let idle = self.idle(&conversation, &profile).await;
        let conversation = Some(conversation);
        let model = json.get("model").and_then(Value::as_str);
        // The conversation's provider compacts it, through the proxy's client.
        let compact_target = match (strategy, model, &self.compactor) {
            (Strategy::Provider, Some(model), Some(via)) => Some(CompactTarget {
                via: via.clone(),
                model: model.to_string(),
                headers: options.credentials.clone(),
            }),
            _ => None,
        };
        let req = Compression {
            model: json
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            continuity: true,
            upstream_allowed: options.upstream_allowed,
            thinking_required: thinking_on(&json),
            precompute: true,
            idle,
            strategy,
            compact_target,
            ..Compression::new(thread, profile)
        };
        let run = tokio::time::timeout(self.config.prepare_timeout, self.compressor.run(req));
        let (prepared, out) = match run.await {
            Ok(Ok(out)) => {
                let report = Report::of(&out, shadow);
                (Prepared { body, report }, Some(out))
            }
            Ok(Err(e)) => {
                let (why, note) = Unchanged::of(&e);
                (Prepared::unchanged(body, why, note), None)
            }
            Err(_) => {
                let note = "compression took too long";
                (Prepared::unchanged(body, Unchanged::Timeout, note), None)
            }
        };
        let mut prepared = prepared;
        prepared.report.conversation = conversation;
        if fell_back {
            prepared
                .report
                .note
                .get_or_insert_with(|| PROVIDER_FALLBACK.into());
        }
        match out {
            Some(out) if prepared.report.compressed => {
                let Prepared { body, report } = prepared;
                Ok(self.write(format, json, out, body, report).await)
            }
            _ => Ok(as_sent(prepared, opt_out.then_some(json)).await),
        }
    }

    /// `json` with the compressed thread (or `original` if it cannot be written).
    async fn write(
        &self,
        format: WireFormat,
        json: Value,
        out: Outcome,
        original: Bytes,
        mut report: Report,
    ) -> Prepared {
        let drop_block = opts_in(format, &json, out.thinking_drop_block);
        let carried = out.carried;
        let written = cpu(move || {
            let mut json = json;
            let field = fields(format).0;
            json[field] = Value::Array(out.thread.messages.into_iter().map(|m| m.raw).collect());
            if drop_block {
                opt_into_drop_block(&mut json);
            }
            serde_json::to_vec(&json)
        })
        .await;
        let Ok(bytes) = written else {
            let note = "the compressed body could not be written";
            return Prepared::unchanged(original, Unchanged::Internal, note);
        };
        // Later turns may trust the thinking after this one (`compress::binding`).
        if let Some(c) = &carried {
            self.compressor.mark_carried(c).await;
        }
        report.drop_block = drop_block;
        Prepared {
            body: bytes.into(),
            report,
        }
    }
}

/// Why a non-Responses thread is not compacted by its provider.
const NOT_RESPONSES: &str = "strategy `provider` needs a Responses thread";
/// ...and what stood in (`on_upstream_error: fallback`).
const PROVIDER_FALLBACK: &str =
    "strategy `provider` needs a Responses thread: condense's own summarizer (`auto`) stood in";

/// The profile's strategy for a thread in `format`, and whether it fell
/// back: the provider's compaction item stands only in a Responses thread,
/// so any other goes per `on_upstream_error` (`auto`, or as it came with
/// the note), never an error to the client.
fn strategy(format: WireFormat, profile: &Profile) -> Result<(Strategy, bool), &'static str> {
    match profile.strategy {
        Strategy::Provider if format != WireFormat::Responses => match profile.on_upstream_error {
            OnUpstreamError::Fallback => Ok((Strategy::Auto, true)),
            OnUpstreamError::Fail => Err(NOT_RESPONSES),
        },
        chosen => Ok((chosen, false)),
    }
}

/// A body that goes as it came needs the `drop_block` opt-out: thinking
/// on, and blocks condense cannot vouch for (`compress::binding`).
fn unvouched(format: WireFormat, json: &Value, thread: &Thread) -> bool {
    opts_in(format, json, carries_thinking(thread))
}

/// `prepared` goes as it came (not compressed, shadow mode, a fallback).
/// Its thinking may be bound to a prefix condense rewrote on a turn it does
/// not remember, so when `json` is Some (thinking on, and it carries blocks)
/// it goes with the `drop_block` opt-out: the only change made to it.
async fn as_sent(mut prepared: Prepared, json: Option<Value>) -> Prepared {
    let Some(mut json) = json else {
        return prepared;
    };
    let body = prepared.body.clone();
    let written = cpu(move || match spliced(&body) {
        Some(bytes) => Ok(bytes),
        None => {
            opt_into_drop_block(&mut json);
            serde_json::to_vec(&json)
        }
    })
    .await;
    if let Ok(bytes) = written {
        prepared.body = bytes.into();
        prepared.report.drop_block = true;
    }
    prepared
}

impl Report {
    fn of(out: &Outcome, shadow: bool) -> Self {
        // A continued thread carries the previous summary, from the cache.
        let continued = out.summary.is_none() && out.reason == Some(Reason::Continued);
        let with_summary = out.summary.is_some() || continued;
        Self {
            compressed: out.compressed && !shadow,
            would_compress: out.compressed,
            shadow,
            tokens_before: Some(out.tokens_before),
            tokens_after: Some(out.tokens_after),
            summary_cached: out
                .summary
                .as_ref()
                .map(|s| s.cached)
                .or(continued.then_some(true)),
            fidelity: out.summary.as_ref().and_then(|s| s.fidelity),
            summary_call_tokens: with_summary.then(|| {
                out.usage
                    .map_or(0, |u| u.prompt_tokens + u.completion_tokens)
            }),
            // A new summary changes the prefix; a continued one keeps it.
            prefix_reused: with_summary.then_some(continued),
            precompute: out.precompute,
            unchanged: None,
            // A re-fold changes the prefix the provider has cached.
            note: out.refold_warning().filter(|_| !shadow).map(str::to_string),
            thinking_removed: removed_thinking(&out.applied_edits),
            drop_block: false,
            conversation: None,
            reason: out.reason.filter(|_| out.compressed && !shadow),
        }
    }

    /// The `x-condense-*` headers, each name once (a `None` is not sent).
    pub fn headers(&self) -> [(&'static str, Option<String>); 14] {
        let text = |v: Option<usize>| v.map(|n| n.to_string());
        let removed = self.tokens_before.zip(self.tokens_after);
        let thinking = (self.thinking_removed > 0 || self.drop_block).then(|| {
            let drop_block = if self.drop_block { "; drop_block" } else { "" };
            format!("removed={}{drop_block}", self.thinking_removed)
        });
        [
            ("x-condense-compressed", Some(self.compressed.to_string())),
            (SHADOW, self.shadow.then(|| "true".into())),
            (
                "x-condense-would-compress",
                self.shadow.then(|| self.would_compress.to_string()),
            ),
            ("x-condense-tokens-before", text(self.tokens_before)),
            ("x-condense-tokens-after", text(self.tokens_after)),
            (
                "x-condense-tokens-removed",
                text(removed.map(|(before, after)| before.saturating_sub(after))),
            ),
            (
                "x-condense-summary-cached",
                self.summary_cached.map(|c| c.to_string()),
            ),
            (
                "x-condense-summary-call-tokens",
                self.summary_call_tokens.map(|n| n.to_string()),
            ),
            (
                "x-condense-prefix-reused",
                self.prefix_reused.map(|r| r.to_string()),
            ),
            (
                "x-condense-precompute",
                self.precompute.map(|p| p.as_str().into()),
            ),
            (
                "x-condense-fidelity",
                self.fidelity.as_ref().map(Fidelity::header),
            ),
            ("x-condense-thinking", thinking),
            ("x-condense-conversation", self.conversation.clone()),
            ("x-condense-note", self.note.clone()),
        ]
    }
}

/// Every report header (CORS exposes them, the README explains them).
pub fn report_names() -> impl Iterator<Item = &'static str> {
    Report::default()
        .headers()
        .into_iter()
        .map(|(name, _)| name)
}

/// The body's fields that hold the thread's messages and its instructions.
fn fields(format: WireFormat) -> (&'static str, Option<&'static str>) {
    match format {
        WireFormat::OpenAi => ("messages", None),
        WireFormat::Responses => ("input", Some("instructions")),
        WireFormat::Anthropic => ("messages", Some("system")),
    }
}

enum Unread {
    Skip(Unchanged, &'static str),
    TooLarge(String),
}

/// A body condense cannot read, and why.
impl From<&'static str> for Unread {
    fn from(note: &'static str) -> Self {
        Unread::Skip(Unchanged::Unreadable, note)
    }
}

/// The body as JSON and its thread, or why condense does not read it.
fn read(
    format: WireFormat,
    body: &[u8],
    shape: Shape,
    limits: Limits,
) -> Result<(Value, Thread), Unread> {
    if shape.too_many().is_some() {
        return Err("the body holds more JSON objects and arrays than condense reads".into());
    }
    let json: Value = thread::compact::from_slice(body).map_err(|_| "the body is not JSON")?;
    let (field, system) = fields(format);
    if format == WireFormat::Responses {
        if json
            .get("previous_response_id")
            .is_some_and(|v| !v.is_null())
        {
            let note = "the provider keeps this conversation (previous_response_id)";
            return Err(Unread::Skip(Unchanged::NothingToDo, note));
        }
        if json.get(field).is_some_and(Value::is_string) {
            let note = "the input is a single message";
            return Err(Unread::Skip(Unchanged::NothingToDo, note));
        }
    }
    let messages = json
        .get(field)
        .and_then(Value::as_array)
        .ok_or("the body has no messages")?;
    let too_large = |e: thread::OverLimit| Unread::TooLarge(e.detail);
    limits
        .check_messages(format, messages.len())
        .map_err(too_large)?;
    let thread = thread::parse(RawThread {
        format: Some(format),
        messages,
        system: system.and_then(|s| json.get(s)),
        tools: json.get("tools"),
    })
    .map_err(|_| "the thread is not one condense can read")?;
    limits.check_thread(&thread).map_err(too_large)?;
    Ok((json, thread))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The README's table of the headers the proxy adds names each report
    /// header, and no other.
    #[test]
    fn the_readme_lists_every_report_header() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let listed: BTreeSet<&str> = readme
            .lines()
            .filter(|l| l.starts_with("| `x-condense-"))
            .flat_map(|l| l.split('|').nth(1).unwrap().split('`'))
            .filter(|n| n.starts_with("x-condense-"))
            .collect();
        assert_eq!(listed, super::report_names().collect());
    }
}
