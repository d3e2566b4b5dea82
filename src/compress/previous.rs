//! The summary a compression extends: one in the thread, or the request's
//! `summary` object.

use super::{Error, Previous};
use crate::policy;
use crate::thread::{FieldError, Thread};

/// The summary a compression extends: a summary message at the head of the
/// conversation wins over a `summary` object ([`policy::summary_in_thread`]).
pub(super) fn previous_summary(
    t: &Thread,
    prior: Option<policy::PriorSummary>,
    pinned: usize,
    warnings: &mut Vec<String>,
) -> Result<Option<Previous>, Error> {
    if let Some(marker) = policy::summary_in_thread(t, pinned, prior.as_ref(), warnings) {
        return Ok(Some(Previous {
            last: pinned,
            content: marker.content,
            messages_summarized: marker.messages_summarized,
            in_thread: true,
        }));
    }
    let Some(prior) = prior else {
        return Ok(None);
    };
    let content = prior.content.ok_or_else(|| {
        Error::Invalid(vec![FieldError::new(
            "/summary/content",
            "is required to extend a previous summary",
        )])
    })?;
    let last = prior.last_message_idx.max(pinned.saturating_sub(1));
    let covered = prior
        .messages_summarized
        .map_or((last + 1).saturating_sub(pinned), |n| n as usize);
    Ok(Some(Previous {
        last,
        content,
        messages_summarized: covered,
        in_thread: false,
    }))
}
