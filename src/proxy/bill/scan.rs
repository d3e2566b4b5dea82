//! The values of a few named keys, picked out of JSON as it streams past.
//!
//! A provider's answer is relayed chunk by chunk and never buffered whole,
//! yet its bill (`usage`) sits inside it: at the end of a JSON answer, in
//! one or two events of an SSE stream. [`Scan`] reads each byte once,
//! keeps no more than the wanted values (each at most [`MAX_VALUE`]), and
//! knows a string from a key, so text that merely mentions `"usage"` is
//! never taken for one. Only keys near the top count (at most
//! [`MAX_DEPTH`] deep): a tool's input that has a `usage` field sits deeper
//! (`{"content": [{"input": {"usage"}}]}` is 4), and is the model's, not
//! the bill.

/// How deep a wanted key's object may sit: `{"usage"}` is 1,
/// `{"message": {"usage"}}` (Anthropic's `message_start`) and
/// `{"response": {"usage"}}` (a Responses stream's last event) are 2.
pub const MAX_DEPTH: usize = 2;

/// A longer value is not kept (a bill is a few hundred bytes).
pub const MAX_VALUE: usize = 64 * 1024;

/// The longest key compared; a longer one is no wanted key.
const MAX_KEY: usize = 32;

/// One JSON document (or one per SSE `data:` line), scanned byte by byte.
#[derive(Debug)]
pub struct Scan {
    wanted: &'static [&'static str],
    /// Per open container: `true` for an object. Only the first
    /// `MAX_DEPTH + 1` are kept (no key deeper is wanted); `depth` counts
    /// them all.
    kinds: [bool; MAX_DEPTH + 1],
    depth: usize,
    string: Str,
    /// In an object, the next string is a key.
    expect_key: bool,
    key: Vec<u8>,
    /// The key just read is wanted, and its value is next.
    pending: Option<&'static str>,
    capture: Option<Capture>,
    /// Values taken since the caller last drained them, with their keys.
    pub found: Vec<(&'static str, Vec<u8>)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Str {
    Outside,
    Inside { escaped: bool, is_key: bool },
}

#[derive(Debug)]
struct Capture {
    key: &'static str,
    /// The value ends when the depth falls back to this.
    depth: usize,
    bytes: Vec<u8>,
    too_long: bool,
    /// A string (the model's name), which its closing quote ends.
    string: bool,
}

impl Scan {
    pub fn new(wanted: &'static [&'static str]) -> Self {
        Self {
            wanted,
            kinds: [false; MAX_DEPTH + 1],
            depth: 0,
            string: Str::Outside,
            expect_key: false,
            key: Vec::new(),
            pending: None,
            capture: None,
            found: Vec::new(),
        }
    }

    /// Forgets the document under way (an SSE line ended); keeps `found`.
    pub fn reset(&mut self) {
        let found = std::mem::take(&mut self.found);
        *self = Self {
            found,
            ..Self::new(self.wanted)
        };
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if let Some(c) = &mut self.capture {
            if c.bytes.len() < MAX_VALUE {
                c.bytes.push(b);
            } else {
                c.too_long = true;
            }
        }
        if let Str::Inside { escaped, is_key } = self.string {
            match (escaped, b) {
                (true, _) => {
                    self.string = Str::Inside {
                        escaped: false,
                        is_key,
                    }
                }
                (false, b'\\') => {
                    self.string = Str::Inside {
                        escaped: true,
                        is_key,
                    }
                }
                (false, b'"') => {
                    self.string = Str::Outside;
                    if is_key {
                        self.key_read();
                    } else if self.capture.as_ref().is_some_and(|c| c.string) {
                        // A taken string ends with its closing quote.
                        self.taken();
                    }
                }
                _ => {}
            }
            if is_key && self.key.len() <= MAX_KEY {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                let is_key = self.expect_key;
                self.expect_key = false;
                if is_key {
                    self.key.clear();
                } else {
                    self.value_starts(b);
                }
                self.string = Str::Inside {
                    escaped: false,
                    is_key,
                };
            }
            b'{' | b'[' => {
                self.value_starts(b);
                let object = b == b'{';
                if self.depth < self.kinds.len() {
                    self.kinds[self.depth] = object;
                }
                self.depth += 1;
                self.expect_key = object;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.expect_key = false;
                self.value_ends();
            }
            b',' => {
                self.expect_key = self.in_object();
                self.value_ends();
            }
            b':' | b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => self.value_starts(b),
        }
    }

    /// A key's closing quote: it is wanted if its object is near the top.
    fn key_read(&mut self) {
        let key = self.key.as_slice();
        self.pending = if self.depth <= MAX_DEPTH {
            self.wanted.iter().copied().find(|w| w.as_bytes() == key)
        } else {
            None
        };
    }

    /// A value's first byte: a wanted key's object, array or string is taken.
    fn value_starts(&mut self, b: u8) {
        let Some(key) = self.pending.take() else {
            return;
        };
        if matches!(b, b'{' | b'[' | b'"') && self.capture.is_none() {
            self.capture = Some(Capture {
                key,
                depth: self.depth,
                bytes: vec![b],
                too_long: false,
                string: b == b'"',
            });
        }
    }

    /// A `,` or a closing bracket: a taken object or array ends with the
    /// bracket that brings the depth back to its own.
    fn value_ends(&mut self) {
        self.pending = None;
        if self.capture.as_ref().is_some_and(|c| self.depth <= c.depth) {
            self.taken();
        }
    }

    /// The value under way is whole: found, unless it grew too long.
    fn taken(&mut self) {
        if let Some(c) = self.capture.take().filter(|c| !c.too_long) {
            self.found.push((c.key, c.bytes));
        }
    }

    fn in_object(&self) -> bool {
        self.depth > 0 && self.depth <= self.kinds.len() && self.kinds[self.depth - 1]
    }
}
