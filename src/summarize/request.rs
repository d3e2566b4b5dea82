//! What the summary service is asked for: one object, decided once.

use std::sync::Arc;

use super::canonical::{KeySettings, canonical, canonical_with_ends, hashes};
use super::{Fidelity, Strategy};
use crate::thread::Message;
use crate::tokens::Counter;
use crate::upstream::{CompactTarget, Kind};

/// An upstream model and the settings that shape what it is shown (all keyed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamModel {
    pub name: String,
    /// The model's window (prompt + output): spans longer than it are chunked.
    pub context_window: usize,
    /// Longest tool result (and tool-call arguments) in the transcript, in characters.
    pub result_chars: usize,
    /// The upstream's API: only an OpenAI one offers `/responses/compact`.
    pub kind: Kind,
}

/// Who writes a summary: decided once, by the compression plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    Heuristic,
    Llm(UpstreamModel),
    /// Heuristic sections and an LLM narrative, half the room each.
    Hybrid(UpstreamModel),
    /// The provider's compaction item, from the upstream's `/responses/compact`.
    Provider(UpstreamModel),
}

impl Writer {
    pub fn strategy(&self) -> Strategy {
        match self {
            Writer::Heuristic => Strategy::Heuristic,
            Writer::Llm(_) => Strategy::Llm,
            Writer::Hybrid(_) => Strategy::Hybrid,
            Writer::Provider(_) => Strategy::Provider,
        }
    }

    pub fn model(&self) -> Option<&UpstreamModel> {
        match self {
            Writer::Heuristic => None,
            Writer::Llm(m) | Writer::Hybrid(m) | Writer::Provider(m) => Some(m),
        }
    }
}

/// One summary to write. Built on the blocking pool: it canonicalizes and
/// hashes the span once, and the summarizers read that canonical form.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    /// The span in canonical form.
    pub span: Arc<[Message]>,
    /// Messages of the caller's span (the canonical form may split some).
    pub span_messages: usize,
    pub settings: SummarySettings,
    /// Where the summary is indexed (None: under its key, found by no lookup).
    pub index: Option<Index>,
    /// Index hashes through each message of `span`, to extend a prefix's summary.
    pub prefixes: Vec<String>,
    pub form: Form,
    /// Where a `provider` summary is compacted instead of the configured
    /// upstream (the proxy's conversation's provider): not in the key, as
    /// it changes who is asked, not what.
    pub target: Option<CompactTarget>,
    /// The heuristic summary a compression wrote to weigh it, handed on so
    /// it is written once (used only under the key it was written for).
    pub weighed: Option<Weighed>,
    key: String,
}

/// A heuristic summary written before the service was asked for it (a
/// compression writes one to weigh it, see
/// [`heuristic_now`](super::receipt::heuristic_now)), with its receipt and
/// the key of the request it was written for: on a miss the service stores
/// it instead of writing the same bytes again.
#[derive(Debug, Clone)]
pub struct Weighed {
    pub(super) key: String,
    pub content: String,
    pub(super) fidelity: Fidelity,
}

impl Weighed {
    /// Its content and receipt, if it was written for `req` (the same key).
    pub(super) fn of(&self, req: &SummaryRequest) -> Option<(String, Fidelity)> {
        (self.key == req.key).then(|| (self.content.clone(), self.fidelity))
    }
}

/// What a summary is written as; it decides how the text is keyed and repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// One summary, extending the previous one (or a cached prefix's).
    Running,
    /// Per-iteration summaries ([`iterations`](super::iterations)): each message's iteration.
    Iterations(Arc<[u64]>),
}

impl Form {
    /// The iteration of each message of the span (none for a running summary).
    pub fn iterations(&self) -> &[u64] {
        match self {
            Form::Running => &[],
            Form::Iterations(its) => its,
        }
    }

    /// Whether the receipt's repair appends to the whole text (an injection
    /// is repaired entry by entry, so its list extends byte for byte).
    pub fn repairs_whole(&self) -> bool {
        matches!(self, Form::Running)
    }

    /// Whether a prefix's summary can be extended (an injection's cannot).
    pub fn extends_prefixes(&self) -> bool {
        matches!(self, Form::Running)
    }

    /// The key's writer, and what the form adds to its extra settings.
    fn key(&self, writer: &Writer, extra: &mut String) -> String {
        let strategy = writer.strategy().as_str();
        match self {
            Form::Running => strategy.to_string(),
            Form::Iterations(its) => {
                let its: Vec<String> = its.iter().map(u64::to_string).collect();
                extra.push_str(&format!(";iterations={}", its.join(",")));
                format!("iterations/{strategy}")
            }
        }
    }
}

/// The one index of summaries: the rolling hash of the conversation a summary
/// stands for. Continuity, prefix reuse and precompute all look it up.
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
    /// On an upstream failure, a degraded heuristic summary, not an error.
    pub fallback: bool,
}

impl SummaryRequest {
    pub fn new(span: &[Message], settings: SummarySettings) -> Self {
        Self::of(canonical(span), span.len(), Form::Running, settings)
    }

    /// Per-iteration summaries of `span`, whose message `i` is in iteration `its[i]`.
    pub fn by_iteration(span: &[Message], its: &[u64], settings: SummarySettings) -> Self {
        let (canonical, ends) = canonical_with_ends(span);
        // A canonical message belongs to the caller's message it came from.
        let its = ends.iter().map(|&end| its[end - 1]).collect();
        Self::of(canonical, span.len(), Form::Iterations(its), settings)
    }

    fn of(span: Vec<Message>, span_messages: usize, form: Form, settings: SummarySettings) -> Self {
        let mut req = Self {
            span: span.into(),
            span_messages,
            settings,
            index: None,
            prefixes: Vec::new(),
            form,
            target: None,
            weighed: None,
            key: String::new(),
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

    /// The same summary written ahead (precompute), keyed and indexed under
    /// [`ahead`] so only the due turn's lookup finds it.
    pub fn written_ahead(mut self, index: Option<Index>) -> Self {
        self.key = ahead(&self.key);
        self.index = index.map(|i| Index {
            hash: ahead(&i.hash),
            ..i
        });
        self
    }

    fn rehash(&mut self) {
        let s = &self.settings;
        let model = s.writer.model();
        let mut extra = model.map_or_else(String::new, |m| {
            format!(
                "window={};result_chars={}",
                m.context_window, m.result_chars
            )
        });
        let writer = self.form.key(&s.writer, &mut extra);
        let (key, _) = hashes(
            &self.span,
            &KeySettings {
                writer: &writer,
                model: model.map(|m| m.name.as_str()),
                prior: s.prior.as_deref(),
                limit: s.limit,
                counting: counting(&s.counter),
                instructions: s.instructions.as_deref(),
                extra,
            },
        );
        self.key = key;
    }
}

/// Marks a key or index hash as precomputed ([`SummaryRequest::written_ahead`]).
pub const AHEAD: &str = ":ahead";

/// `hash` as a precomputed summary's key or index hash.
pub fn ahead(hash: &str) -> String {
    format!("{hash}{AHEAD}")
}

/// How a counter measures, for the key: a fit under one tokenizer may not hold under another.
pub fn counting(c: &Counter<'_>) -> String {
    format!("{}/{}/{}", c.encoding, c.method.as_str(), c.calibration)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::{RawThread, parse};
    use crate::tokens::{CountSpec, Encoders, Method, ModelRegistry};

    #[test]
    fn per_iteration_keys_differ_from_plain_ones_and_by_writer() {
        let raw = vec![
            json!({"role": "user", "content": "a", "metadata": {"iteration": 1}}),
            json!({"role": "assistant", "content": "b"}),
        ];
        let span = parse(RawThread {
            messages: &raw,
            ..Default::default()
        })
        .unwrap()
        .messages;
        let models = ModelRegistry::embedded();
        let settings = SummarySettings {
            prior: None,
            limit: 500,
            writer: Writer::Heuristic,
            instructions: None,
            counter: CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe)
                .counter(Encoders::global()),
            fallback: true,
        };
        let plain = SummaryRequest::new(&span, settings.clone());
        let grouped = SummaryRequest::by_iteration(&span, &[1, 1], settings);
        let model = UpstreamModel {
            name: "m".into(),
            context_window: 8192,
            result_chars: 500,
            kind: Kind::OpenAi,
        };
        let llm = grouped.with_writer(Writer::Llm(model.clone()));
        // A provider's item and a text summary of one span never share a key.
        let provider = plain.with_writer(Writer::Provider(model.clone()));
        assert_ne!(provider.key(), plain.with_writer(Writer::Llm(model)).key());
        assert_ne!(plain.key(), grouped.key());
        assert_ne!(grouped.key(), llm.key());
        assert_eq!(llm.form, Form::Iterations([1, 1].into()));
        assert_eq!(grouped.with_writer(Writer::Heuristic).key(), grouped.key());
    }
}
