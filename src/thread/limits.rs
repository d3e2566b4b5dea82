//! Limits on what a request body may hold, so hostile input costs bounded
//! memory and time: its JSON shape (before parsing) and its thread's size.

use serde_json::Value;

use crate::thread::{Checked, Thread, WireFormat};

/// Most JSON objects and arrays a body may hold: bounds its parsed memory (about
/// 130 MB) where the byte limit does not. 8 MiB of agent messages hold some 20,000.
pub const MAX_JSON_NODES: usize = 100_000;

/// Most values (counted by their commas) a body may hold: 8 MB of `1,1,…` is 4 million.
pub const MAX_JSON_VALUES: usize = 1_000_000;

/// What a JSON body holds, counted from its bytes before it is parsed (or
/// from a parsed value): what its parsed form costs follows these, not its
/// bytes alone (a number of two bytes takes a whole `Value`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    pub bytes: u64,
    /// Objects in the top-level arrays (messages, items, tools).
    pub messages: u64,
    /// Objects and arrays.
    pub nodes: u64,
    /// Values in objects and arrays (counted by their commas).
    pub values: u64,
}

impl Shape {
    /// The shape of `bytes`, for valid JSON: one pass, strings skipped a
    /// word at a time ([`string_end`]): scanned byte by byte, this pass took
    /// a quarter of a resent long thread's count (`bench/peers.py`'s turns).
    pub fn of(bytes: &[u8]) -> Self {
        let (mut nodes, mut commas, mut depth, mut messages) = (0, 0, 0u32, 0);
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            i += 1;
            match b {
                b'"' => i = string_end(bytes, i),
                b'{' | b'[' => {
                    nodes += 1;
                    depth += 1;
                    messages += u64::from(depth == 3 && b == b'{');
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                b',' => commas += 1,
                _ => {}
            }
        }
        Self {
            bytes: bytes.len() as u64,
            messages,
            nodes,
            values: commas,
        }
    }

    /// The shape of parsed values (what a thread held by a background job
    /// costs), each a message when it is an object: their strings' bytes,
    /// and a few for each other scalar.
    pub fn of_values<'a>(values: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut shape = Self::default();
        let mut stack: Vec<&Value> = values.into_iter().collect();
        shape.messages = stack.iter().filter(|v| v.is_object()).count() as u64;
        while let Some(v) = stack.pop() {
            match v {
                Value::Array(a) => {
                    shape.nodes += 1;
                    shape.values += a.len() as u64;
                    stack.extend(a);
                }
                Value::Object(o) => {
                    shape.nodes += 1;
                    shape.values += o.len() as u64;
                    shape.bytes += o.keys().map(|k| k.len() as u64 + 3).sum::<u64>();
                    stack.extend(o.values());
                }
                Value::String(s) => shape.bytes += s.len() as u64 + 2,
                _ => shape.bytes += 8,
            }
        }
        shape
    }

    /// The shape of a parsed thread: its messages as sent, and its tools.
    pub fn of_thread(t: &Thread) -> Self {
        let messages = t.system.iter().chain(&t.messages).map(|m| &m.raw);
        Self::of_values(messages.chain(&t.tools))
    }

    /// Why a body of this shape holds more than a request may, if it does.
    pub fn too_many(&self) -> Option<String> {
        if self.nodes > MAX_JSON_NODES as u64 {
            Some(format!(
                "the body holds more than {MAX_JSON_NODES} JSON objects and arrays; send fewer parts (merge adjacent text parts)"
            ))
        } else if self.values > MAX_JSON_VALUES as u64 {
            Some(format!(
                "the body holds more than {MAX_JSON_VALUES} JSON values; send fewer"
            ))
        } else {
            None
        }
    }
}

/// Where the string opened before `from` ends: past its closing quote (an
/// escaped byte skipped), or the end of `bytes` when it is not closed.
fn string_end(bytes: &[u8], mut from: usize) -> usize {
    loop {
        match quote_or_backslash(bytes, from) {
            Some(at) if bytes[at] == b'"' => return at + 1,
            Some(at) => from = at + 2,
            None => return bytes.len(),
        }
    }
}

/// The first `"` or `\` of `bytes` from `from` on, eight bytes a step (the
/// classic has-zero-byte test: its lowest flag is exact, and a string of
/// text holds few of either). Written here rather than taking `memchr` as a
/// dependency for one loop.
fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut at = from;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let found =
            zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = words.remainder();
    tail.iter()
        .position(|&b| b == b'"' || b == b'\\')
        .map(|i| at + i)
}

/// How much one thread may hold (0 lifts a limit): they bound a request's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most messages (`messages`, not counting Anthropic's `system`).
    pub max_messages: usize,
    /// Most characters of every text a tokenizer reads, the system's too.
    pub max_chars: usize,
}

/// A thread over a [`Limits`]: the field, and a sentence that names the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverLimit {
    /// A JSON pointer: `/messages` or `/text`.
    pub pointer: &'static str,
    pub detail: String,
}

impl Limits {
    /// Checked before parsing: the count of `messages` (or `input` items).
    pub fn check_messages(&self, format: WireFormat, n: usize) -> Result<(), OverLimit> {
        if self.max_messages > 0 && n > self.max_messages {
            let pointer = format.items_pointer();
            return Err(OverLimit {
                pointer,
                detail: format!(
                    "{pointer} holds {n} messages; the limit is {} (CONDENSE_MAX_MESSAGES): summarize or drop older ones first",
                    self.max_messages
                ),
            });
        }
        Ok(())
    }

    /// Checked on the parsed thread: its characters of text.
    pub fn check_thread(&self, thread: &Thread) -> Result<(), OverLimit> {
        self.check_items(thread.format, thread.system.as_ref(), &thread.messages)
    }

    /// [`Limits::check_thread`] on messages parsed or outlined ([`Checked`]).
    pub fn check_items<S: Checked, M: Checked>(
        &self,
        format: WireFormat,
        system: Option<&S>,
        messages: &[M],
    ) -> Result<(), OverLimit> {
        self.check_messages(format, messages.len())?;
        if self.max_chars == 0 {
            return Ok(());
        }
        let bytes =
            system.map_or(0, S::text_bytes) + messages.iter().map(M::text_bytes).sum::<usize>();
        // Bytes bound characters from above: most threads need no count.
        if bytes <= self.max_chars {
            return Ok(());
        }
        let chars =
            system.map_or(0, S::text_chars) + messages.iter().map(M::text_chars).sum::<usize>();
        self.check_chars(format.items_pointer(), chars)
    }

    /// Checked on a bare text.
    pub fn check_text(&self, text: &str) -> Result<(), OverLimit> {
        if self.max_chars == 0 || text.len() <= self.max_chars {
            // Bytes bound characters from above: no need to count.
            return Ok(());
        }
        self.check_chars("/text", text.chars().count())
    }

    fn check_chars(&self, pointer: &'static str, chars: usize) -> Result<(), OverLimit> {
        if self.max_chars > 0 && chars > self.max_chars {
            return Err(OverLimit {
                pointer,
                detail: format!(
                    "{pointer} holds {chars} characters of text; the limit is {} (CONDENSE_MAX_TOTAL_CHARS)",
                    self.max_chars
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Limits, MAX_JSON_VALUES, Shape};
    use crate::thread::{RawThread, WireFormat, parse};
    use serde_json::json;

    #[test]
    fn threads_over_the_limits_name_the_field_and_the_limit() {
        let raw = vec![
            json!({"role": "user", "content": "héllo"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "abc"}]}),
        ];
        let t = parse(RawThread {
            messages: &raw,
            system: Some(&json!("sys")),
            ..Default::default()
        })
        .unwrap();
        let fits = Limits {
            max_messages: 2,
            max_chars: 11,
        };
        assert_eq!(fits.check_thread(&t), Ok(()));
        let e = Limits {
            max_chars: 10,
            ..fits
        }
        .check_thread(&t)
        .unwrap_err();
        assert_eq!(e.pointer, "/messages");
        assert!(
            e.detail.contains("11 characters") && e.detail.contains("limit is 10"),
            "{}",
            e.detail
        );
        let e = Limits {
            max_messages: 1,
            ..fits
        }
        .check_thread(&t)
        .unwrap_err();
        assert!(e.detail.contains("2 messages") && e.detail.contains("CONDENSE_MAX_MESSAGES"));
        let none = Limits {
            max_messages: 0,
            max_chars: 0,
        };
        assert_eq!(none.check_thread(&t), Ok(()));
        let e = fits.check_messages(WireFormat::Responses, 3).unwrap_err();
        assert_eq!(e.pointer, "/input");
        assert!(e.detail.starts_with("/input holds 3"), "{}", e.detail);
        // Characters, not bytes: "é" is one.
        assert!(
            Limits {
                max_chars: 5,
                ..fits
            }
            .check_text("héllo")
            .is_ok()
        );
        assert_eq!(
            Limits {
                max_chars: 4,
                ..fits
            }
            .check_text("héllo")
            .unwrap_err()
            .pointer,
            "/text"
        );
    }

    /// The byte-by-byte scan [`Shape::of`] replaced: its oracle.
    fn byte_by_byte(bytes: &[u8]) -> Shape {
        let (mut nodes, mut commas, mut in_string, mut escaped) = (0, 0, false, false);
        let (mut depth, mut messages) = (0u32, 0);
        for &b in bytes {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => {
                        nodes += 1;
                        depth += 1;
                        messages += u64::from(depth == 3 && b == b'{');
                    }
                    b'}' | b']' => depth = depth.saturating_sub(1),
                    b',' => commas += 1,
                    _ => {}
                }
            }
        }
        Shape {
            bytes: bytes.len() as u64,
            messages,
            nodes,
            values: commas,
        }
    }

    proptest::proptest! {
        #[test]
        fn a_word_at_a_time_finds_what_byte_by_byte_finds(
            bytes in proptest::collection::vec(proptest::sample::select(
                b"\"\\{}[],a \xe9".to_vec()), 0..200),
        ) {
            proptest::prop_assert_eq!(Shape::of(&bytes), byte_by_byte(&bytes));
        }
    }

    #[test]
    fn long_strings_with_escapes_anywhere_in_a_word() {
        for at in 0..20 {
            for escape in [&b"\\\""[..], b"\\\\", b"\\n"] {
                let mut text = vec![b'x'; 40];
                text.splice(at..at, escape.iter().copied());
                let body = [
                    &br#"{"messages": [{"content": ""#[..],
                    &text,
                    br#""}, [1, 2]]}"#,
                ]
                .concat();
                assert_eq!(
                    Shape::of(&body),
                    byte_by_byte(&body),
                    "{}",
                    String::from_utf8_lossy(&body)
                );
                assert_eq!((Shape::of(&body).nodes, Shape::of(&body).values), (4, 2));
            }
        }
    }

    #[test]
    fn nodes_are_counted_outside_strings_only() {
        let shape = |b: &[u8]| {
            let s = Shape::of(b);
            assert_eq!(s.bytes, b.len() as u64);
            (s.messages, s.nodes, s.values)
        };
        assert_eq!(
            shape(br#"{"a": [1, {"b": "{[,\"]}"}], "c": []}"#),
            (1, 4, 2)
        );
        assert_eq!(shape(br#""{{{,""#), (0, 0, 0));
        assert_eq!(shape(br#"["\\", {}]"#), (0, 2, 1));
        let thread = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}, {"role": "assistant", "content": "b"}]});
        let bytes = serde_json::to_vec(&thread).unwrap();
        assert_eq!(shape(&bytes), (2, 6, 4));
        let parsed = Shape::of_values([&thread["messages"][0]]);
        assert_eq!((parsed.messages, parsed.nodes, parsed.values), (1, 3, 5));
        let scalars = format!("{{\"x\": [{}1]}}", "1,".repeat(MAX_JSON_VALUES + 1));
        assert!(Shape::of(scalars.as_bytes()).too_many().is_some());
        assert!(Shape::of(br#"{"messages": []}"#).too_many().is_none());
    }
}
