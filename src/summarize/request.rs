//! What the summary service is asked for: one object, decided once.

use std::sync::Arc;

use super::Strategy;
use super::canonical::{KeySettings, canonical, hashes};
use crate::thread::Message;
use crate::tokens::Counter;

/// An upstream model chosen for a summary, with the settings that shape
/// what it is shown (both are part of the cache key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamModel {
    pub name: String,
    /// The model's window (prompt + output): spans longer than it are chunked.
    pub context_window: usize,
    /// Longest tool result (and tool-call arguments) in the transcript, in characters.
    pub result_chars: usize,
}

/// Who writes a summary. Decided once, by the compression plan; the service
/// does not second-guess it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    Heuristic,
    Llm(UpstreamModel),
    /// Heuristic sections and an LLM narrative, half the room each.
    Hybrid(UpstreamModel),
}

impl Writer {
    pub fn strategy(&self) -> Strategy {
        match self {
            Writer::Heuristic => Strategy::Heuristic,
            Writer::Llm(_) => Strategy::Llm,
            Writer::Hybrid(_) => Strategy::Hybrid,
        }
    }

    pub fn model(&self) -> Option<&UpstreamModel> {
        match self {
            Writer::Heuristic => None,
            Writer::Llm(m) | Writer::Hybrid(m) => Some(m),
        }
    }
}

/// One summary to write.
///
/// Built on the blocking pool: building it canonicalizes and hashes the
/// span, once, and the summarizers read that same canonical form.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    /// The span in canonical form.
    pub span: Arc<[Message]>,
    /// Messages of the caller's span (the canonical form may split some).
    pub span_messages: usize,
    pub settings: SummarySettings,
    /// Where the summary is indexed for prefix reuse, when not under its
    /// own last prefix hash.
    pub index: Option<Index>,
    key: String,
    prefixes: Vec<String>,
}

/// An index entry for a summary that extends an earlier one: the rolling
/// hash of the whole conversation it stands for, and that conversation's
/// length, so a caller that resends its full history (the proxy) finds the
/// latest summary of its longest summarized prefix with one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub hash: String,
    /// Canonical messages the hash covers (the longest match wins).
    pub span_len: usize,
    /// The caller's messages the summary stands for.
    pub messages_summarized: usize,
}

/// Everything besides the span that a caller chooses.
#[derive(Debug, Clone)]
pub struct SummarySettings {
    /// The content of the summary this one extends.
    pub prior: Option<String>,
    /// Most tokens the summary may take.
    pub limit: usize,
    pub writer: Writer,
    pub instructions: Option<String>,
    /// How `limit` is measured.
    pub counter: Counter<'static>,
    /// On an upstream failure, a heuristic summary (marked degraded) rather
    /// than an error.
    pub fallback: bool,
}

impl SummaryRequest {
    pub fn new(span: &[Message], settings: SummarySettings) -> Self {
        let mut req = Self {
            span: canonical(span).into(),
            span_messages: span.len(),
            settings,
            index: None,
            key: String::new(),
            prefixes: Vec::new(),
        };
        req.rehash();
        req
    }

    /// The same request for another writer (the heuristic fallback).
    pub fn with_writer(&self, writer: Writer) -> Self {
        let mut req = self.clone();
        req.settings.writer = writer;
        req.rehash();
        req
    }

    /// The content hash the summary is stored under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Rolling hashes: entry `i` is the key of `span[..=i]` under the same settings.
    pub fn prefix_hashes(&self) -> &[String] {
        &self.prefixes
    }

    fn rehash(&mut self) {
        let s = &self.settings;
        let model = s.writer.model();
        let extra = model.map_or_else(String::new, |m| {
            format!(
                "window={};result_chars={}",
                m.context_window, m.result_chars
            )
        });
        let (key, prefixes) = hashes(
            &self.span,
            &KeySettings {
                writer: s.writer.strategy().as_str(),
                model: model.map(|m| m.name.as_str()),
                prior: s.prior.as_deref(),
                limit: s.limit,
                counting: counting(&s.counter),
                instructions: s.instructions.as_deref(),
                extra,
            },
        );
        self.key = key;
        self.prefixes = prefixes;
    }
}

/// How a counter measures, for the key: a summary fitted under one
/// tokenizer may not fit under another.
pub fn counting(c: &Counter<'_>) -> String {
    format!("{}/{:?}/{}", c.encoding, c.method, c.calibration)
}
