//! Which summary a request extends (a summary message in the thread, or the
//! `summary` object), and what its message costs, decided here so the
//! verdict and compression agree.

use crate::thread::{Message, Part, Role, SummaryMarker, Thread, summary_text};
use crate::tokens::Counter;

/// The summary a previous compression returned, as far as the verdict needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriorSummary {
    /// The last index of `messages` the summary covers.
    pub last_message_idx: usize,
    pub content: Option<String>,
    pub token_count: Option<u64>,
    /// How many messages it stands for (compression extends the count).
    pub messages_summarized: Option<u64>,
    /// When it was written, as the summary object said.
    pub created_at: Option<String>,
}

impl PriorSummary {
    /// The messages it replaced: as it said, else every message of
    /// `thread` it covers after the pinned prefix but the instructions
    /// (kept verbatim after a summary, so not replaced by it). The `N` of
    /// its header, for the verdict and compression alike.
    pub fn replaced(&self, thread: &Thread) -> usize {
        self.messages_summarized.map_or_else(
            || {
                let pinned = thread.pinned_len();
                let end = (self.last_message_idx + 1).min(thread.messages.len());
                thread.messages.get(pinned..end).map_or(0, |span| {
                    span.iter().filter(|m| !m.is_instruction()).count()
                })
            },
            |n| n as usize,
        )
    }

    /// What the summary costs as a message in the next request.
    pub(super) fn tokens(&self, counter: &Counter<'_>, thread: &Thread) -> u64 {
        let covered = self.replaced(thread);
        match (&self.content, self.token_count) {
            (Some(text), _) => summary_message_tokens(counter, covered, text),
            // Without the text, its reported size plus the header and a user message's framing.
            (None, Some(n)) => n + summary_message_tokens(counter, covered, ""),
            (None, None) => 0,
        }
    }
}

/// What the summary message (header and content, as a user message) costs in
/// the next request: the verdict and compression price it the same way.
pub fn summary_message_tokens(counter: &Counter<'_>, covered: usize, content: &str) -> u64 {
    let m = Message {
        role: Role::User,
        name: None,
        parts: vec![Part::Text(summary_text(covered, content))],
        plain: true,
        iteration: None,
        raw: serde_json::Value::Null,
    };
    counter.message(&m).tokens as u64
}

/// condense's summary message, when one follows the pinned prefix (`pinned` long).
pub fn summary_message(thread: &Thread, pinned: usize) -> Option<SummaryMarker> {
    thread
        .messages
        .get(pinned)
        .and_then(Message::summary_marker)
}

/// The summary message a request extends, if any. It wins over a `summary`
/// object, whose indices refer to the longer thread (a warning says so).
pub fn summary_in_thread(
    thread: &Thread,
    pinned: usize,
    object: Option<&PriorSummary>,
    warnings: &mut Vec<String>,
) -> Option<SummaryMarker> {
    let marker = summary_message(thread, pinned)?;
    if object.is_some() {
        warnings.push(
            "the thread holds a summary message; the `summary` object was ignored".to_string(),
        );
    }
    Some(marker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::WireFormat;

    fn message(role: Role, text: &str) -> Message {
        Message {
            role,
            name: None,
            parts: vec![Part::Text(text.to_string())],
            plain: true,
            iteration: None,
            raw: serde_json::Value::Null,
        }
    }

    fn thread(messages: Vec<Message>) -> Thread {
        Thread {
            format: WireFormat::OpenAi,
            system: None,
            messages,
            tools: Vec::new(),
        }
    }

    const IGNORED: &str = "the thread holds a summary message; the `summary` object was ignored";

    #[test]
    fn a_summary_message_after_the_pinned_prefix_wins_over_the_object() {
        let t = thread(vec![
            message(Role::System, "be brief"),
            message(Role::User, &summary_text(4, "they met")),
            message(Role::User, "and then?"),
        ]);
        let object = PriorSummary::default();
        let mut warnings = Vec::new();
        let marker = summary_in_thread(&t, t.pinned_len(), Some(&object), &mut warnings);
        assert_eq!(marker.map(|m| m.messages_summarized), Some(4));
        assert_eq!(warnings, [IGNORED]);

        let mut quiet = Vec::new();
        assert!(summary_in_thread(&t, t.pinned_len(), None, &mut quiet).is_some());
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    #[test]
    fn the_object_stands_when_no_summary_message_follows_the_prefix() {
        // A summary message further down is quoted text, not the head.
        let t = thread(vec![
            message(Role::User, "hello"),
            message(Role::User, &summary_text(2, "old")),
        ]);
        let object = PriorSummary::default();
        let mut warnings = Vec::new();
        assert_eq!(
            summary_in_thread(&t, t.pinned_len(), Some(&object), &mut warnings),
            None
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(summary_message(&thread(Vec::new()), 0), None);
    }
}
