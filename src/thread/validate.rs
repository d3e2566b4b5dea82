//! What a provider would reject about tool calls (an orphan result, a repeated
//! id, a call not followed by its results). Calls at the end are allowed: the
//! agent is mid-loop. In Responses, only a `message` item closes open calls.

use std::collections::{HashMap, HashSet};

use super::outline::Checked;
use super::{FieldError, Role, Thread, WireFormat, cap, echo};

pub fn validate(thread: &Thread) -> Result<(), Vec<FieldError>> {
    check(thread.format, &thread.messages)
}

/// [`validate`] on messages parsed or outlined ([`Checked`]): one set of rules.
pub fn check<M: Checked>(format: WireFormat, messages: &[M]) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    // Every call id seen so far -> index of its assistant message.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    // Calls of the latest assistant message still waiting for a result.
    let mut open = Open::default();
    let mut answered: HashSet<&str> = HashSet::new();
    let at = |i: usize, tail: &str| pointer(format, i, tail);

    for (i, m) in messages.iter().enumerate() {
        if m.role() == Role::Assistant {
            if !m.is_item() {
                unanswered(&mut open, &mut errs, i, format);
            }
            for (id, tail) in m.calls() {
                if let Some(first) = seen.insert(id, i) {
                    errs.push(FieldError::new(
                        at(i, tail),
                        format!(
                            "duplicate tool call id `{}` (first used in message {first})",
                            echo(id)
                        ),
                    ));
                } else {
                    open.push(id, (i, tail));
                }
            }
            continue;
        }
        for (id, tail) in m.results() {
            if open.answer(id) {
                answered.insert(id);
            } else {
                let shown = echo(id);
                let why = if answered.contains(id) {
                    format!("tool call `{shown}` already has a result")
                } else if let Some(at) = seen.get(id) {
                    format!(
                        "tool result for `{shown}` must directly follow its call in message {at}"
                    )
                } else {
                    format!("no earlier assistant message has a tool call with id `{shown}`")
                };
                errs.push(FieldError::new(at(i, tail), why));
            }
        }
        // A tool message or item leaves room for more results.
        if m.role() != Role::Tool && !m.is_item() {
            unanswered(&mut open, &mut errs, i, format);
        }
    }
    // Calls still open here are trailing: valid. An Anthropic conversation
    // opens with a user turn, a system message included: the API takes the
    // initial system prompt only as the top-level `system`, and a
    // mid-conversation one after a turn.
    if format == WireFormat::Anthropic && messages.first().is_some_and(|m| m.role() != Role::User) {
        errs.push(FieldError::new(
            "/messages/0/role",
            "an Anthropic thread must start with a user message",
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(cap(errs))
    }
}

/// The pointer of a field `tail` of message `i` (a part's pointer is kept
/// under its message's: the same message sits at other indices).
fn pointer(format: WireFormat, i: usize, tail: &str) -> String {
    format!("{}/{i}{tail}", format.items_pointer())
}

/// Where a call is: its message's index and its id's pointer under it.
type Place<'a> = (usize, &'a str);

/// The calls still waiting for a result, in call order, answered in constant time.
#[derive(Default)]
struct Open<'a> {
    calls: Vec<Option<(&'a str, Place<'a>)>>,
    at: HashMap<&'a str, usize>,
}

impl<'a> Open<'a> {
    fn push(&mut self, id: &'a str, place: Place<'a>) {
        self.at.insert(id, self.calls.len());
        self.calls.push(Some((id, place)));
    }

    /// Marks `id` answered; false when it is not waiting.
    fn answer(&mut self, id: &str) -> bool {
        match self.at.remove(id) {
            Some(i) => {
                self.calls[i] = None;
                true
            }
            None => false,
        }
    }
}

fn unanswered(open: &mut Open<'_>, errs: &mut Vec<FieldError>, before: usize, format: WireFormat) {
    for (id, (i, tail)) in open.calls.drain(..).flatten() {
        errs.push(FieldError::new(
            pointer(format, i, tail),
            format!(
                "tool call `{}` has no result before message {before}",
                echo(id)
            ),
        ));
    }
    open.at.clear();
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::{FieldError, Thread, WireFormat, validate};
    use crate::thread::{anthropic, openai, wire};

    fn openai(messages: Value) -> Result<(), Vec<FieldError>> {
        check(WireFormat::OpenAi, messages)
    }

    fn check(format: WireFormat, messages: Value) -> Result<(), Vec<FieldError>> {
        let items = messages.as_array().unwrap().iter().map(Cow::Borrowed);
        let (items, at) = (items.collect(), "messages");
        let (_, messages) = match format {
            WireFormat::Anthropic => wire::parse_thread(
                None,
                anthropic::parse_system,
                items,
                at,
                anthropic::parse_message,
            ),
            _ => wire::parse_thread(None, openai::parse_system, items, at, openai::parse_message),
        }?;
        validate(&Thread {
            format,
            system: None,
            messages,
            tools: Vec::new(),
        })
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn an_anthropic_thread_never_opens_with_a_system_message() {
        let errs = check(
            WireFormat::Anthropic,
            json!([
                {"role": "system", "content": "reminder"},
                {"role": "user", "content": "hi"}
            ]),
        )
        .unwrap_err();
        assert_eq!(errs[0].pointer, "/messages/0/role");
        check(
            WireFormat::Anthropic,
            json!([
                {"role": "user", "content": "hi"},
                {"role": "system", "content": "reminder"}
            ]),
        )
        .unwrap();
    }

    #[test]
    fn orphan_result_names_its_field() {
        let errs = openai(json!([
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "nope", "content": "x"}
        ]))
        .unwrap_err();
        assert_eq!(errs[0].pointer, "/messages/1/tool_call_id");
        assert!(errs[0].message.contains("no earlier assistant"));
    }

    #[test]
    fn trailing_pending_calls_are_valid() {
        openai(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"}
        ]))
        .unwrap();
    }

    #[test]
    fn call_without_result_before_next_message_is_rejected() {
        let errs = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "user", "content": "and?"}
        ]))
        .unwrap_err();
        assert_eq!(errs[0].pointer, "/messages/0/tool_calls/0/id");
    }

    #[test]
    fn duplicate_ids_and_late_results_are_rejected() {
        let errs = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]}
        ]))
        .unwrap_err();
        assert_eq!(errs[0].pointer, "/messages/2/tool_calls/0/id");
        assert!(errs[0].message.contains("duplicate"));

        let errs = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "a", "content": "again"}
        ]))
        .unwrap_err();
        assert!(errs[0].message.contains("already has a result"));
    }
}
