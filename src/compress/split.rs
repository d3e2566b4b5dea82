//! Where to cut a thread: a cut only falls between units (a call and its
//! results), so no result loses its call.

use std::ops::Range;

use crate::thread::{Message, Role};

/// The units of `messages[from..]`. In the Responses format a reasoning
/// item goes with the item after it, and a unit runs on until every call it
/// opened has its output.
pub fn units(messages: &[Message], from: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = from;
    let n = messages.len();
    while i < n {
        let mut end = i + 1;
        while end < n && leads_into_next(&messages[end - 1]) {
            end += 1;
        }
        let mut open: isize = messages[i..end]
            .iter()
            .map(|m| m.tool_calls().count() as isize)
            .sum();
        if open > 0 {
            while end < n {
                let next = &messages[end];
                let results = next.tool_results().count() as isize;
                let result_message = next.role != Role::Assistant && results > 0;
                if !(result_message || (next.is_item() && open > 0)) {
                    break;
                }
                open += next.tool_calls().count() as isize - results;
                end += 1;
            }
        }
        out.push(i..end);
        i = end;
    }
    out
}

/// A Responses item that must not be separated from the item after it:
/// reasoning (and any other call-less assistant item).
fn leads_into_next(m: &Message) -> bool {
    m.is_item()
        && m.role == Role::Assistant
        && m.tool_calls().next().is_none()
        && m.tool_results().next().is_none()
}

/// Start of the unit holding `index` (or `index` itself past the end).
pub fn unit_start(units: &[Range<usize>], index: usize) -> usize {
    units
        .iter()
        .find(|u| u.contains(&index))
        .map_or(index, |u| u.start)
}

/// The tail keeps at least `min_recent` of the newest messages, moved back to a
/// unit boundary, and never reaches before `start`.
pub fn tail_start(units: &[Range<usize>], len: usize, start: usize, min_recent: usize) -> usize {
    let want = len.saturating_sub(min_recent).max(start);
    unit_start(units, want).max(start)
}

/// For threads grouped by iteration: the tail starts at the first message of
/// the `keep` most recent iterations. A message without `metadata.iteration`
/// belongs to the iteration of the message before it.
pub fn iteration_tail_start(
    messages: &[Message],
    units: &[Range<usize>],
    start: usize,
    keep: usize,
) -> usize {
    let its = iterations(messages, start);
    let mut distinct: Vec<u64> = its.clone();
    distinct.dedup();
    if distinct.len() <= keep {
        return start;
    }
    let first_kept = distinct[distinct.len() - keep];
    let at = its
        .iter()
        .position(|&it| it == first_kept)
        .map_or(messages.len(), |p| start + p);
    unit_start(units, at).max(start)
}

/// The iteration of each message of `messages[start..]`, inherited forward.
pub fn iterations(messages: &[Message], start: usize) -> Vec<u64> {
    let mut current = messages[..start]
        .iter()
        .rev()
        .find_map(|m| m.iteration)
        .unwrap_or(0);
    messages[start..]
        .iter()
        .map(|m| {
            if let Some(it) = m.iteration {
                current = it;
            }
            current
        })
        .collect()
}

/// True for a message that opens a user turn (user text, not tool results):
/// a thread without a summary message must start its conversation with one.
pub fn opens_user_turn(m: &Message) -> bool {
    m.role == Role::User && m.tool_results().next().is_none()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::{RawThread, parse};

    fn thread() -> Vec<Message> {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let messages = vec![
            json!({"role": "user", "content": "a"}), // 0
            json!({"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]}), // 1
            json!({"role": "tool", "tool_call_id": "1", "content": "r"}), // 2
            json!({"role": "tool", "tool_call_id": "2", "content": "r"}), // 3
            json!({"role": "assistant", "content": "done"}),              // 4
            json!({"role": "user", "content": "b"}),                      // 5
        ];
        parse(RawThread {
            messages: &messages,
            ..Default::default()
        })
        .unwrap()
        .messages
    }

    #[test]
    fn units_keep_calls_with_results() {
        assert_eq!(units(&thread(), 0), [0..1, 1..4, 4..5, 5..6]);
    }

    #[test]
    fn the_tail_moves_back_to_a_unit_boundary() {
        let m = thread();
        let u = units(&m, 0);
        assert_eq!(tail_start(&u, 6, 0, 2), 4);
        // Three newest would cut the tool unit after its call: take the whole unit.
        assert_eq!(tail_start(&u, 6, 0, 3), 1);
        assert_eq!(tail_start(&u, 6, 0, 5), 1);
        assert_eq!(tail_start(&u, 6, 0, 6), 0);
        assert_eq!(tail_start(&u, 6, 2, 60), 2);
    }
}
