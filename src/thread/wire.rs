//! Shared helpers for the wire parsers.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{Bounded, FieldError, Message, Opaque, Part, Role, echo};
use serde_json::Value;

/// How one item of a thread is parsed: `(item, its pointer, errors)`.
pub type ParseItem<'a> = fn(Cow<'a, Value>, &str, &mut Vec<FieldError>) -> Option<Message>;

/// How a thread's system prompt is parsed: `(system, errors)`.
pub type ParseSystem<'a> = fn(Cow<'a, Value>, &mut Vec<FieldError>) -> Option<Message>;

/// The system prompt (null is none) and every item of `/{field}`, or their errors.
pub fn parse_thread<'a>(
    system: Option<Cow<'a, Value>>,
    parse_system: ParseSystem<'a>,
    items: Vec<Cow<'a, Value>>,
    field: &str,
    parse: ParseItem<'a>,
) -> Result<(Option<Message>, Vec<Message>), Vec<FieldError>> {
    let mut parser = Items::new(field, parse);
    let system = parser.system(system, parse_system);
    let parsed = items
        .into_iter()
        .enumerate()
        .filter_map(|(i, m)| parser.item(i, m))
        .collect();
    parser.finish().map(|()| (system, parsed))
}

/// Parses a thread's items one at a time, keeping their errors (a bounded
/// number: [`Bounded`]).
pub struct Items<'a> {
    parse: ParseItem<'a>,
    /// Each item's pointer is written over the last one's: one buffer for
    /// the thread, not an allocation per message.
    at: String,
    prefix: usize,
    errs: Bounded,
    scratch: Vec<FieldError>,
}

impl<'a> Items<'a> {
    pub fn new(field: &str, parse: ParseItem<'a>) -> Self {
        let at = format!("/{field}/");
        Self {
            parse,
            prefix: at.len(),
            at,
            errs: Bounded::default(),
            scratch: Vec::new(),
        }
    }

    /// The system prompt (null is none), or None with its errors kept.
    pub fn system(
        &mut self,
        system: Option<Cow<'a, Value>>,
        parse: ParseSystem<'a>,
    ) -> Option<Message> {
        let system = system
            .filter(|s| !s.is_null())
            .and_then(|s| parse(s, &mut self.scratch));
        self.errs.absorb(&mut self.scratch);
        system
    }

    /// Item `i`, or None with its errors kept. Its parts' pointers are kept
    /// under its own (it sits elsewhere in another request).
    pub fn item(&mut self, i: usize, m: Cow<'a, Value>) -> Option<Message> {
        self.at.truncate(self.prefix);
        let _ = write!(self.at, "{i}"); // a String's `write!` cannot fail
        let parsed = (self.parse)(m, &self.at, &mut self.scratch);
        self.errs.absorb(&mut self.scratch);
        let mut parsed = parsed?;
        let under = self.at.len();
        for p in &mut parsed.parts {
            match p {
                Part::ToolCall(c) => drop(c.pointer.drain(..under.min(c.pointer.len()))),
                Part::ToolResult(r) => drop(r.pointer.drain(..under.min(r.pointer.len()))),
                _ => {}
            }
        }
        Some(parsed)
    }

    /// An error of item `i` found before its parse.
    pub fn error(&mut self, i: usize, message: String) {
        self.scratch.push(FieldError::new(
            format!("{}{i}", &self.at[..self.prefix]),
            message,
        ));
        self.errs.absorb(&mut self.scratch);
    }

    /// Every item parsed, or their errors.
    pub fn finish(self) -> Result<(), Vec<FieldError>> {
        if self.errs.is_empty() {
            Ok(())
        } else {
            Err(self.errs.finish())
        }
    }
}

/// A message's parts as read so far, and whether it is still [`Message::plain`].
pub struct Content {
    pub parts: Vec<Part>,
    pub plain: bool,
}

/// A message of `role` holding `content`, kept as its `raw` (moved when owned).
pub fn message(
    role: Role,
    content: Content,
    iteration: Option<u64>,
    source: Cow<'_, Value>,
) -> Message {
    Message {
        role,
        name: None,
        parts: content.parts,
        plain: content.plain,
        iteration,
        raw: source.into_owned(),
    }
}

/// A block or item kept verbatim, estimated from its compact JSON.
pub fn opaque(kind: &str, v: &Value) -> Part {
    Part::Opaque(Opaque {
        kind: kind.to_string(),
        text: v.to_string(),
        encrypted: 0,
        compaction: false,
    })
}

/// The provider's compaction: its `content` or `encrypted_content`.
pub fn compaction(v: &Value) -> Part {
    let text = v.get("content").and_then(Value::as_str).unwrap_or_default();
    let encrypted = v
        .get("encrypted_content")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    Part::Opaque(Opaque {
        kind: "compaction".into(),
        text: text.to_string(),
        encrypted,
        compaction: true,
    })
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `v` found where `what` belongs.
pub fn not_a(at: impl Into<String>, what: &str, v: &Value) -> FieldError {
    FieldError::new(at, format!("must be {what}, not {}", type_name(v)))
}

/// Whether `v` is an object; the error names `what` must be one.
pub fn object(v: &Value, what: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<()> {
    if v.is_object() {
        return Some(());
    }
    errs.push(FieldError::new(
        at,
        format!("{what} must be an object, not {}", type_name(v)),
    ));
    None
}

pub fn string(obj: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<String> {
    let why = match obj.get(key) {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(other) => format!("must be a string, not {}", type_name(other)),
        None => "is required".into(),
    };
    errs.push(FieldError::new(format!("{at}/{key}"), why));
    None
}

/// An optional string field (absent or null is None).
pub fn opt_string(obj: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<String> {
    obj.get(key).filter(|v| !v.is_null())?;
    string(obj, key, at, errs)
}

/// The required `role`, one of `roles`; None ends the message (all else depends on it).
pub fn parse_role(m: &Value, at: &str, roles: &[Role], errs: &mut Vec<FieldError>) -> Option<Role> {
    let name = string(m, "role", at, errs)?;
    if let Some(&role) = roles.iter().find(|r| r.as_str() == name) {
        return Some(role);
    }
    let expected: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
    errs.push(FieldError::new(
        format!("{at}/role"),
        format!(
            "unknown role `{}`; expected one of {}",
            echo(&name),
            expected.join(", ")
        ),
    ));
    None
}

/// `metadata.iteration`, when present: a non-negative integer.
pub fn iteration(obj: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<u64> {
    let it = obj.get("metadata")?.get("iteration")?;
    match it.as_u64() {
        Some(n) => Some(n),
        None if it.is_null() => None,
        None => {
            errs.push(FieldError::new(
                format!("{at}/metadata/iteration"),
                "must be a non-negative integer",
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_role_is_one_of_the_wires_or_an_error_listing_them() {
        let roles = [Role::User, Role::Assistant, Role::System];
        let mut errs = Vec::new();
        let m = json!({"role": "assistant"});
        assert_eq!(
            parse_role(&m, "/m/0", &roles, &mut errs),
            Some(Role::Assistant)
        );
        // A role of another wire is unknown here.
        let m = json!({"role": "tool"});
        assert_eq!(parse_role(&m, "/m/1", &roles, &mut errs), None);
        assert_eq!(parse_role(&json!({}), "/m/2", &roles, &mut errs), None);
        let got: Vec<_> = errs.iter().map(|e| (&*e.pointer, &*e.message)).collect();
        assert_eq!(
            got,
            [
                (
                    "/m/1/role",
                    "unknown role `tool`; expected one of user, assistant, system"
                ),
                ("/m/2/role", "is required"),
            ]
        );
    }
}
