//! What the thread's checks read of a message ([`Checked`]), and the
//! [`Outline`] that keeps only that: a message seen before is recognised from
//! its JSON text and checked from its outline, without building its model
//! (`tokens` keeps the outlines with their counts; [`super::parse::outline`]).

use serde_json::Value;

use super::{Message, Role, WireFormat};

/// What tool pairing ([`super::validate`]) and the limits read of a message:
/// a parsed [`Message`] or the [`Outline`] one left.
pub trait Checked {
    fn role(&self) -> Role;
    /// A Responses item other than a `message`.
    fn is_item(&self) -> bool;
    /// Each tool call's id, with the pointer of the id under its message's.
    fn calls(&self) -> impl Iterator<Item = (&str, &str)>;
    /// Each tool result's call id, with its pointer under its message's.
    fn results(&self) -> impl Iterator<Item = (&str, &str)>;
    /// Bytes of the texts a tokenizer reads.
    fn text_bytes(&self) -> usize;
    /// Characters of the same texts.
    fn text_chars(&self) -> usize;
}

impl<T: Checked> Checked for &T {
    fn role(&self) -> Role {
        (*self).role()
    }
    fn is_item(&self) -> bool {
        (*self).is_item()
    }
    fn calls(&self) -> impl Iterator<Item = (&str, &str)> {
        (*self).calls()
    }
    fn results(&self) -> impl Iterator<Item = (&str, &str)> {
        (*self).results()
    }
    fn text_bytes(&self) -> usize {
        (*self).text_bytes()
    }
    fn text_chars(&self) -> usize {
        (*self).text_chars()
    }
}

impl Message {
    fn texts(&self) -> Vec<&str> {
        let mut texts = Vec::new();
        self.parts.iter().for_each(|p| p.texts(&mut texts));
        texts
    }
}

impl Checked for Message {
    fn role(&self) -> Role {
        self.role
    }
    fn is_item(&self) -> bool {
        Message::is_item(self)
    }
    fn calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tool_calls().map(|c| (&*c.id, &*c.pointer))
    }
    fn results(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tool_results().map(|r| (&*r.call_id, &*r.pointer))
    }
    fn text_bytes(&self) -> usize {
        self.texts().iter().map(|t| t.len()).sum()
    }
    fn text_chars(&self) -> usize {
        self.texts().iter().map(|t| t.chars().count()).sum()
    }
}

/// A message as the checks, the format's detection and a count's answer read
/// it; the same for the same JSON text in the same format, wherever it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    /// The format it was parsed in: read in another, it is parsed again.
    pub format: WireFormat,
    pub role: Role,
    /// [`Message::plain`].
    pub plain: bool,
    /// [`Message::is_instruction`].
    pub instruction: bool,
    /// [`Message::is_item`].
    pub item: bool,
    /// [`Message::is_compaction`].
    pub compaction: bool,
    /// Holds a block only Anthropic has ([`anthropic_only`]).
    pub anthropic: bool,
    pub text_bytes: usize,
    pub text_chars: usize,
    /// (id, pointer under the message) of each tool call, then of each result.
    ids: Box<[(Box<str>, Box<str>)]>,
    /// How many of `ids` are calls.
    calls: usize,
}

impl Outline {
    /// The outline of `m`, parsed in `format`.
    pub fn of(m: &Message, format: WireFormat) -> Self {
        let texts = m.texts();
        let ids: Box<[_]> = Checked::calls(m)
            .chain(Checked::results(m))
            .map(|(id, at)| (id.into(), at.into()))
            .collect();
        Self {
            format,
            role: m.role,
            plain: m.plain,
            instruction: m.is_instruction(),
            item: m.is_item(),
            compaction: m.is_compaction(),
            anthropic: anthropic_only(&m.raw),
            text_bytes: texts.iter().map(|t| t.len()).sum(),
            text_chars: texts.iter().map(|t| t.chars().count()).sum(),
            calls: m.tool_calls().count(),
            ids,
        }
    }

    /// Bytes it holds on the heap, itself included.
    pub fn size(&self) -> usize {
        let ids = self.ids.iter().map(|(id, at)| id.len() + at.len());
        size_of::<Self>() + self.ids.len() * size_of::<(Box<str>, Box<str>)>() + ids.sum::<usize>()
    }
}

impl Checked for Outline {
    fn role(&self) -> Role {
        self.role
    }
    fn is_item(&self) -> bool {
        self.item
    }
    fn calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ids[..self.calls].iter().map(|(id, at)| (&**id, &**at))
    }
    fn results(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ids[self.calls..].iter().map(|(id, at)| (&**id, &**at))
    }
    fn text_bytes(&self) -> usize {
        self.text_bytes
    }
    fn text_chars(&self) -> usize {
        self.text_chars
    }
}

/// A message holding a block only Anthropic has: its thread is Anthropic.
pub fn anthropic_only(m: &Value) -> bool {
    const ANTHROPIC_ONLY: [&str; 10] = [
        "tool_use",
        "tool_result",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "search_result",
        "compaction",
    ];
    m.get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks.iter().any(|b| {
                b.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| ANTHROPIC_ONLY.contains(&t))
            })
        })
}

/// Messages seen before, by a keyed hash of their JSON text (`tokens` keeps
/// each one's outline with its count).
pub trait Seen {
    type Record: AsRef<Outline>;
    /// The key of a message's JSON text.
    fn key(&self, json: &str) -> u128;
    fn get(&self, key: u128) -> Option<Self::Record>;
}

/// A message of an outlined thread: seen before, or parsed now.
#[derive(Debug)]
pub enum Item<R> {
    Before(R),
    /// Parsed now; its key remembers it once it is counted.
    New {
        key: u128,
        message: Box<Message>,
        outline: Outline,
    },
}

impl<R: AsRef<Outline>> Item<R> {
    pub fn outline(&self) -> &Outline {
        match self {
            Item::Before(r) => r.as_ref(),
            Item::New { outline, .. } => outline,
        }
    }
}

/// A thread parsed to what a count reads: its system prompt and tools as
/// usual, its messages outlined ([`super::parse::outline`]).
#[derive(Debug)]
pub struct Outlined<R> {
    pub format: WireFormat,
    pub system: Option<Message>,
    pub messages: Vec<Item<R>>,
    pub tools: Vec<Value>,
}
