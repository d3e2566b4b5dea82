//! The summary message condense writes, and recognizing it when a client
//! sends a compressed thread back (so it is extended, not summarized as text).

use super::{Message, Part};

const PREFIX: &str = "[Context Summary - ";

/// The first line of every summary message.
pub fn summary_header(messages_summarized: usize) -> String {
    let noun = if messages_summarized == 1 {
        "message"
    } else {
        "messages"
    };
    format!("{PREFIX}{messages_summarized} previous {noun}]")
}

/// The full text of a summary message.
pub fn summary_text(messages_summarized: usize, content: &str) -> String {
    format!("{}\n\n{content}", summary_header(messages_summarized))
}

/// A summary message condense produced: how many messages it covers and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryMarker {
    pub messages_summarized: usize,
    pub content: String,
}

impl Message {
    /// Recognizes a summary message by its header line.
    pub fn summary_marker(&self) -> Option<SummaryMarker> {
        let [Part::Text(text)] = self.parts.as_slice() else {
            return None;
        };
        let rest = text.strip_prefix(PREFIX)?;
        let (header, content) = rest.split_once('\n').unwrap_or((rest, ""));
        let count = header
            .strip_suffix(" previous messages]")
            .or_else(|| header.strip_suffix(" previous message]"))?;
        Some(SummaryMarker {
            messages_summarized: count.parse().ok()?,
            content: content.trim_start_matches('\n').to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::Role;

    fn msg(text: &str) -> Message {
        Message {
            role: Role::User,
            name: None,
            parts: vec![Part::Text(text.into())],
            plain: true,
            iteration: None,
            raw: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_written_summary_is_recognized() {
        let m = msg(&summary_text(42, "### Files referenced\n- a/b.rs"));
        assert_eq!(
            m.summary_marker(),
            Some(SummaryMarker {
                messages_summarized: 42,
                content: "### Files referenced\n- a/b.rs".into()
            })
        );
        assert_eq!(
            msg(&summary_text(1, "x"))
                .summary_marker()
                .unwrap()
                .messages_summarized,
            1
        );
        assert_eq!(
            msg("[Context Summary - lots of messages]\n\nx").summary_marker(),
            None
        );
        assert_eq!(msg("hello").summary_marker(), None);
    }
}
