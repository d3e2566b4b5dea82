//! Counting a thread as the OpenAI cookbook's `num_tokens_from_messages`:
//! exact for plain string contents, else estimated ([`approximations`]).

use std::sync::Arc;

use serde::Serialize;

use super::memo::{self, Counted, Memoized};
use super::{Encoders, Encoding};
use crate::thread::{Item, MediaKind, Message, Outlined, Part, Seen, Thread};

/// Tokens every message costs besides its fields (OpenAI cookbook).
pub const MESSAGE_OVERHEAD: usize = 3;
/// Extra token for a message's `name` (OpenAI cookbook).
pub const NAME_OVERHEAD: usize = 1;
/// Tokens that prime the assistant's reply, once per request (OpenAI cookbook).
pub const REPLY_PRIMING: usize = 3;

/// Documented estimates for what has no official formula.
pub mod approximations {
    /// A tool call: its name and arguments plus this wrapper.
    pub const TOOL_CALL_OVERHEAD: usize = 3;
    /// A tool result: its call id and content plus this wrapper.
    pub const TOOL_RESULT_OVERHEAD: usize = 3;
    /// All tool schemas of a request: their compact JSON plus this, once...
    pub const TOOLS_OVERHEAD: usize = 12;
    /// ...and this per tool.
    pub const TOOL_SCHEMA_OVERHEAD: usize = 8;
    /// An image at high/auto detail: OpenAI's cost of a 1024x1024 image (85 + 4 tiles x 170).
    /// Anthropic's ~(w*h)/750 gives ~1,400 for the same image; dimensions are not read.
    pub const IMAGE: usize = 765;
    /// An image at `detail: low` (OpenAI's flat rate).
    pub const IMAGE_LOW: usize = 85;
    /// An audio clip (about 30 seconds).
    pub const AUDIO: usize = 500;
    /// A file or document (about one page of PDF).
    pub const DOCUMENT: usize = 1500;
    /// Redacted (encrypted) thinking: its base64 length divided by this.
    pub const REDACTED_CHARS_PER_TOKEN: usize = 4;
}

use approximations::*;

/// How strings are turned into token counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// The model's BPE encoding (times its calibration factor).
    Bpe,
    /// `ceil(chars / chars_per_token)` per string: the seeds' cheap estimator.
    Chars { chars_per_token: f64 },
}

impl Method {
    /// `bpe` or `chars`, as responses and metrics name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Bpe => "bpe",
            Method::Chars { .. } => "chars",
        }
    }
}

/// A configured counter: one encoding, one method, one calibration.
#[derive(Clone, Copy, Debug)]
pub struct Counter<'a> {
    pub encoders: &'a Encoders,
    pub encoding: Encoding,
    pub method: Method,
    /// Multiplier for non-OpenAI tokenizers (1.0 for OpenAI models).
    pub calibration: f64,
    /// Whether the cookbook formula is exact for this model and encoding.
    pub exact_model: bool,
    /// Remember per-message counts across requests (off: count everything).
    pub memoize: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessageCount {
    pub tokens: usize,
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadCount {
    /// Anthropic's top-level system, counted as one message.
    pub system: Option<usize>,
    pub messages: Vec<usize>,
    pub tools: usize,
    pub total: usize,
    pub exact: bool,
}

/// Bytes of text a message's count reads (its role and name aside).
fn text_bytes(m: &Message) -> usize {
    let mut texts = Vec::new();
    m.parts.iter().for_each(|p| p.texts(&mut texts));
    texts.iter().map(|t| t.len()).sum()
}

impl Counter<'_> {
    /// Tokens of one string, uncalibrated.
    pub fn raw(&self, text: &str) -> usize {
        // The request is gone: nothing will read this count.
        if super::cancel::cancelled() {
            return 0;
        }
        match self.method {
            Method::Bpe => self.encoders.count(self.encoding, text),
            Method::Chars { chars_per_token } => {
                (text.chars().count() as f64 / chars_per_token).ceil() as usize
            }
        }
    }

    /// Tokens of a bare text (no message framing), calibrated.
    pub fn text(&self, text: &str) -> MessageCount {
        MessageCount {
            tokens: self.calibrate(self.raw(text)),
            exact: self.exact_model,
        }
    }

    fn calibrate(&self, n: usize) -> usize {
        if self.method == Method::Bpe && self.calibration != 1.0 {
            (n as f64 * self.calibration).ceil() as usize
        } else {
            n
        }
    }

    /// One message with its overhead.
    pub fn message(&self, m: &Message) -> MessageCount {
        self.framed(self.tokens(m), m.plain)
    }

    /// A message's count, calibrated, from its uncalibrated tokens.
    fn framed(&self, tokens: usize, plain: bool) -> MessageCount {
        MessageCount {
            tokens: self.calibrate(tokens),
            exact: self.exact_model && plain,
        }
    }

    /// One message's tokens, uncalibrated; a recent one costs a hash (BPE
    /// only: `chars` is cheaper).
    fn tokens(&self, m: &Message) -> usize {
        let memoize = self.memoize && self.method == Method::Bpe;
        if !memoize || text_bytes(m) < memo::MIN_BYTES {
            return self.uncalibrated(m);
        }
        let memo = &self.encoders.memo;
        let key = memo.key(&(self.encoding, m.role, &m.name, &m.parts));
        if let Some(Memoized::Count(n)) = memo.get(key) {
            return n as usize;
        }
        let n = self.uncalibrated(m);
        memo.keep(key, Memoized::Count(n as u64));
        n
    }

    fn uncalibrated(&self, m: &Message) -> usize {
        let mut n = MESSAGE_OVERHEAD + self.raw(m.role.as_str());
        if let Some(name) = &m.name {
            n += self.raw(name) + NAME_OVERHEAD;
        }
        n + m.parts.iter().map(|p| self.part(p)).sum::<usize>()
    }

    /// Tokens of one part, uncalibrated: what clearing it would save.
    pub fn part(&self, p: &Part) -> usize {
        match p {
            Part::Text(t) | Part::Refusal(t) | Part::Thinking(t) => self.raw(t),
            Part::RedactedThinking(data) => data.len().div_ceil(REDACTED_CHARS_PER_TOKEN),
            Part::Media(kind) => match kind {
                MediaKind::Image { low_detail: true } => IMAGE_LOW,
                MediaKind::Image { low_detail: false } => IMAGE,
                MediaKind::Audio => AUDIO,
                MediaKind::File | MediaKind::Document => DOCUMENT,
            },
            Part::ToolCall(c) => TOOL_CALL_OVERHEAD + self.raw(&c.name) + self.raw(&c.arguments),
            Part::FunctionCall { name, arguments } => {
                TOOL_CALL_OVERHEAD + self.raw(name) + self.raw(arguments)
            }
            Part::Opaque(o) => self.raw(&o.text) + o.encrypted.div_ceil(REDACTED_CHARS_PER_TOKEN),
            Part::ToolResult(r) => {
                TOOL_RESULT_OVERHEAD
                    + self.raw(&r.call_id)
                    + r.content.iter().map(|p| self.part(p)).sum::<usize>()
            }
        }
    }

    /// All tool schemas of a request (0 when there are none).
    pub fn tools(&self, tools: &[serde_json::Value]) -> usize {
        if tools.is_empty() {
            return 0;
        }
        let n = TOOLS_OVERHEAD
            + tools
                .iter()
                .map(|t| TOOL_SCHEMA_OVERHEAD + self.raw(&t.to_string()))
                .sum::<usize>();
        self.calibrate(n)
    }

    /// The whole thread: per-message counts + tools + reply priming = total.
    pub fn thread(&self, thread: &Thread) -> ThreadCount {
        let system = thread.system.as_ref().map(|s| self.message(s));
        let per: Vec<MessageCount> = thread.messages.iter().map(|m| self.message(m)).collect();
        self.total(system, per, &thread.tools)
    }

    /// [`Counter::thread`] of an outlined thread: its messages seen before
    /// are counted from their records, the others counted and remembered.
    pub fn outlined(&self, thread: Outlined<Arc<Counted>>) -> (Vec<Arc<Counted>>, ThreadCount) {
        let messages: Vec<Arc<Counted>> = thread
            .messages
            .into_iter()
            .map(|item| match item {
                Item::Before(counted) => counted,
                Item::New {
                    key,
                    message,
                    outline,
                } => {
                    // Its record supersedes a count by its parts: no second key.
                    let tokens = self.uncalibrated(&message);
                    drop(message);
                    let counted = Arc::new(Counted { outline, tokens });
                    if self.memoize {
                        let memo = &self.encoders.memo;
                        memo.keep(key, Memoized::Counted(counted.clone()));
                    }
                    counted
                }
            })
            .collect();
        let system = thread.system.as_ref().map(|s| self.message(s));
        let per = messages
            .iter()
            .map(|c| self.framed(c.tokens, c.outline.plain))
            .collect();
        let count = self.total(system, per, &thread.tools);
        (messages, count)
    }

    /// Per-message counts + tools + reply priming = total.
    fn total(
        &self,
        system: Option<MessageCount>,
        per: Vec<MessageCount>,
        tools: &[serde_json::Value],
    ) -> ThreadCount {
        let tools = self.tools(tools);
        let exact = self.exact_model
            && tools == 0
            && system.is_none_or(|s| s.exact)
            && per.iter().all(|m| m.exact);
        let messages: Vec<usize> = per.iter().map(|m| m.tokens).collect();
        let total =
            system.map_or(0, |s| s.tokens) + messages.iter().sum::<usize>() + tools + REPLY_PRIMING;
        ThreadCount {
            system: system.map(|s| s.tokens),
            messages,
            tools,
            total,
            exact,
        }
    }
}

/// A counter recognises the messages it counted before (when it memoizes),
/// by their JSON text, its encoding and its method.
impl Seen for Counter<'_> {
    type Record = Arc<Counted>;

    fn key(&self, json: &str) -> u128 {
        let method = match self.method {
            Method::Bpe => None,
            Method::Chars { chars_per_token } => Some(chars_per_token.to_bits()),
        };
        self.encoders.memo.key(&(self.encoding, method, json))
    }

    fn get(&self, key: u128) -> Option<Arc<Counted>> {
        if !self.memoize {
            return None;
        }
        match self.encoders.memo.get(key)? {
            Memoized::Counted(counted) => Some(counted),
            Memoized::Count(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use serde_json::value::RawValue;

    use super::*;
    use crate::thread::{self, OwnedThread};
    use crate::tokens::{CountSpec, ModelRegistry, cancel};

    /// A message counted after its request was cancelled is not remembered:
    /// its count (cut short) would answer the next request.
    #[test]
    fn a_cancelled_count_leaves_no_record() {
        let registry = ModelRegistry::embedded();
        let spec = CountSpec::resolve(&registry, "gpt-4o", None, None, Method::Bpe);
        let counter = spec.counter(Encoders::global());
        let text = format!(
            r#"{{"role":"user","content":"{} {}"}}"#,
            "word ".repeat(50),
            line!()
        );
        let sent = OwnedThread {
            messages: vec![std::borrow::Cow::Owned(
                RawValue::from_string(text).unwrap(),
            )],
            ..Default::default()
        };
        let outline = || thread::outline(sent.clone(), &counter).unwrap();
        let is_new = |t: &Outlined<Arc<Counted>>| matches!(t.messages[0], Item::New { .. });

        let gone = Arc::new(AtomicBool::new(true));
        let (_, cut) = cancel::scope(gone, || counter.outlined(outline()));
        assert!(is_new(&outline()), "not remembered");
        let (_, counted) = counter.outlined(outline());
        assert!(counted.total > cut.total);
        assert!(!is_new(&outline()), "remembered");
        assert_eq!(counter.outlined(outline()).1, counted);
    }
}
