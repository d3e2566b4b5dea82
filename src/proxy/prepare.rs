//! The request on its way: its thread compressed when due (or, in shadow
//! mode, only measured), every other field untouched.

use axum::body::Bytes;
use serde_json::Value;

use super::{Provider, Proxy, ProxyError};
use crate::compress::{self, Compression, Reason};
use crate::summarize::cpu;
use crate::thread::{self, Limits, RawThread, Thread};

/// How condense treats one request, from its `x-condense-*` headers and
/// its caller.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `x-condense-profile` (None: `default`).
    pub profile: Option<String>,
    /// `x-condense-shadow`: forward unchanged, only report.
    pub shadow: bool,
    /// The caller may have the upstream LLM write summaries.
    pub upstream_allowed: bool,
}

/// The body to forward and what was done to it.
#[derive(Debug)]
pub struct Prepared {
    pub body: Bytes,
    /// An `anthropic-beta` the forwarded request needs (`drop_block`).
    pub beta: Option<&'static str>,
    pub report: Report,
}

/// What condense did to a request, for the `x-condense-*` headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The forwarded thread is the compressed one.
    pub compressed: bool,
    /// Compression would have changed the thread (shadow mode reports it).
    pub would_compress: bool,
    pub shadow: bool,
    pub tokens_before: Option<usize>,
    pub tokens_after: Option<usize>,
    /// Whether the summary in the thread came from the cache.
    pub summary_cached: Option<bool>,
    /// Why the request went unchanged, when something on condense's side
    /// stopped it (never an upstream's or a database's text).
    pub note: Option<String>,
    /// Kept turns whose stale thinking was removed (Anthropic).
    pub thinking_removed: usize,
    /// The request opted into Anthropic's `drop_block`.
    pub drop_block: bool,
}

impl Prepared {
    /// The body as it came, and why it was not compressed.
    pub fn unchanged(body: Bytes, note: impl Into<String>) -> Self {
        Self {
            body,
            beta: None,
            report: Report {
                note: Some(note.into()),
                ..Report::default()
            },
        }
    }
}

impl Proxy {
    /// Compresses the thread of `body` when due. Fails only for a thread
    /// over the configured limits; anything else that stops compression
    /// forwards the body as it came, with a note.
    pub async fn prepare(
        &self,
        provider: Provider,
        options: &Options,
        body: Bytes,
    ) -> Result<Prepared, ProxyError> {
        let shadow = options.shadow || self.config.shadow;
        let profile = match self.profiles.resolve(options.profile.as_deref(), None) {
            Ok(p) => p,
            Err(_) => return Ok(Prepared::unchanged(body, "unknown x-condense-profile")),
        };
        // Reading a long body is CPU work: on the blocking pool.
        let read = {
            let body = body.clone();
            let limits = self.config.limits;
            cpu(move || read(provider, &body, limits)).await
        };
        let (json, thread) = match read {
            Ok(read) => read,
            Err(Unread::TooLarge(detail)) => return Err(ProxyError::TooLarge(detail)),
            Err(Unread::Note(note)) => return Ok(Prepared::unchanged(body, note)),
        };
        let model = json
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        let req = Compression {
            model,
            continuity: true,
            upstream_allowed: options.upstream_allowed,
            thinking_required: thinking_on(&json),
            ..Compression::new(thread, profile)
        };
        let run = tokio::time::timeout(self.config.prepare_timeout, self.compressor.run(req));
        let out = match run.await {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Ok(Prepared::unchanged(body, note(&e))),
            Err(_) => return Ok(Prepared::unchanged(body, "compression took too long")),
        };
        let report = Report {
            compressed: out.compressed && !shadow,
            would_compress: out.compressed,
            shadow,
            tokens_before: Some(out.tokens_before),
            tokens_after: Some(out.tokens_after),
            // A continued thread carries the previous summary, from the cache.
            summary_cached: match (&out.summary, out.reason) {
                (Some(s), _) => Some(s.cached),
                (None, Some(Reason::Continued)) => Some(true),
                (None, _) => None,
            },
            note: None,
            thinking_removed: removed_thinking(&out.applied_edits),
            drop_block: out.thinking_drop_block,
        };
        if !report.compressed {
            return Ok(Prepared {
                body,
                beta: None,
                report,
            });
        }
        let drop_block = out.thinking_drop_block;
        let written = cpu(move || {
            let mut json = json;
            json[provider.fields().0] =
                Value::Array(out.thread.messages.into_iter().map(|m| m.raw).collect());
            if drop_block {
                opt_into_drop_block(&mut json);
            }
            serde_json::to_vec(&json)
        })
        .await;
        Ok(match written {
            Ok(bytes) => Prepared {
                body: bytes.into(),
                beta: drop_block.then_some(DROP_BLOCK_BETA),
                report,
            },
            Err(_) => Prepared::unchanged(body, "the compressed body could not be written"),
        })
    }
}

/// The beta that lets a request set `thinking.block_binding`.
pub const DROP_BLOCK_BETA: &str = "thinking-binding-controls-2026-08-01";

/// Thinking is on for this request (`thinking.type` `enabled` or
/// `adaptive`): an active loop's final thinking block must then stay.
fn thinking_on(json: &Value) -> bool {
    matches!(
        json.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    )
}

/// Kept thinking blocks may follow a changed prefix: the API drops the
/// invalid ones instead of refusing the request (see `compress::binding`).
fn opt_into_drop_block(json: &mut Value) {
    if let Some(thinking) = json.get_mut("thinking").and_then(Value::as_object_mut) {
        let binding = thinking
            .entry("block_binding")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(b) = binding.as_object_mut() {
            b.insert("prefix_mismatch_behavior".into(), "drop_block".into());
        }
    }
}

fn removed_thinking(edits: &[compress::AppliedEdit]) -> usize {
    edits
        .iter()
        .map(|e| match e {
            compress::AppliedEdit::RemoveStaleThinking {
                removed_thinking_turns,
                ..
            } => *removed_thinking_turns,
            _ => 0,
        })
        .sum()
}

/// Why a body was not read: a reason to forward it unchanged, or a thread
/// over the limits.
enum Unread {
    Note(&'static str),
    TooLarge(String),
}

impl From<&'static str> for Unread {
    fn from(note: &'static str) -> Self {
        Unread::Note(note)
    }
}

/// The body as JSON and its thread, or why condense does not read it.
fn read(provider: Provider, body: &[u8], limits: Limits) -> Result<(Value, Thread), Unread> {
    if thread::too_many_nodes(body).is_some() {
        return Err("the body holds more JSON objects and arrays than condense reads".into());
    }
    let json: Value = serde_json::from_slice(body).map_err(|_| "the body is not JSON")?;
    let (field, system) = provider.fields();
    if provider == Provider::Responses {
        if json
            .get("previous_response_id")
            .is_some_and(|v| !v.is_null())
        {
            return Err("the provider keeps this conversation (previous_response_id)".into());
        }
        if json.get(field).is_some_and(Value::is_string) {
            return Err("the input is a single message".into());
        }
    }
    let messages = json
        .get(field)
        .and_then(Value::as_array)
        .ok_or("the body has no messages")?;
    let too_large = |e: thread::OverLimit| Unread::TooLarge(e.detail);
    limits.check_messages(messages.len()).map_err(too_large)?;
    let thread = thread::parse(RawThread {
        format: Some(provider.format()),
        messages,
        system: system.and_then(|s| json.get(s)),
        tools: json.get("tools"),
    })
    .map_err(|_| "the thread is not one condense can read")?;
    limits.check_thread(&thread).map_err(too_large)?;
    Ok((json, thread))
}

/// A short reason for a header: which part stopped compression.
fn note(e: &compress::Error) -> String {
    match e {
        compress::Error::DoesNotFit(_) => "the thread cannot be made to fit its window".into(),
        compress::Error::Upstream(e) => format!("the summarizer failed ({})", e.short()),
        compress::Error::StrategyUnavailable(_) => "the profile's strategy is unavailable".into(),
        compress::Error::Forbidden(_) => "the strategy is not allowed for this API key".into(),
        compress::Error::Invalid(_) | compress::Error::ModelNotAllowed(_) => {
            "the request's summary settings are invalid".into()
        }
        compress::Error::Bug(_) => "compression failed".into(),
    }
}
