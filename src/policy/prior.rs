//! Which summary a request extends (a summary message in the thread, or the
//! `summary` object), decided here so the verdict and compression agree.

use super::PriorSummary;
use crate::thread::{Message, SummaryMarker, Thread};

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
    use crate::thread::{Part, Role, WireFormat, summary_text};

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
