//! The rules a compression's settings must meet, checked once in
//! [`Compressor::run`](super::Compressor::run) so no entry point can skip
//! them; each error points at the `POST /v1/compress` field.

use serde::Deserialize;

use super::{Compression, Error};
use crate::thread::FieldError;

/// Longest `summarizer.instructions` accepted, in characters: they go into
/// every prompt of the summary and into its cache key.
pub const MAX_INSTRUCTIONS: usize = 4000;

/// Newest iterations kept verbatim with `group_by: "iteration"` when the
/// request does not say.
pub const KEEP_RECENT_ITERATIONS: usize = 3;

/// Most iterations `keep_recent_iterations` may keep: beyond it a value is
/// a mistake, not a setting.
const MAX_KEEP_RECENT_ITERATIONS: usize = 10_000;

/// Longest `idle_seconds` accepted (ten years): beyond it a value is a
/// mistake, and every provider's cache is as cold.
pub const MAX_IDLE_SECONDS: u64 = 315_360_000;

/// How a compression groups the thread before summarizing.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// By `metadata.iteration`: one summary per agent iteration.
    Iteration,
}

/// How many newest iterations stay verbatim (None without grouping). A
/// `keep` without `group_by` is an error, not silently ignored.
pub fn keep_recent_iterations(
    group_by: Option<GroupBy>,
    keep: Option<u64>,
) -> Result<Option<usize>, Error> {
    match (group_by, keep) {
        // Out of `usize`, it is out of range too: `check` says so.
        (Some(GroupBy::Iteration), Some(keep)) => {
            Ok(Some(usize::try_from(keep).unwrap_or(usize::MAX)))
        }
        (Some(GroupBy::Iteration), None) => Ok(Some(KEEP_RECENT_ITERATIONS)),
        (None, Some(_)) => Err(Error::Invalid(vec![FieldError::new(
            "/keep_recent_iterations",
            "only applies with `group_by: \"iteration\"`",
        )])),
        (None, None) => Ok(None),
    }
}

impl Compression {
    /// Every rule this request breaks. Cheap: no pass over the thread.
    pub fn check(&self) -> Result<(), Error> {
        let mut errs = Vec::new();
        // A profile's `min_recent_messages` above a short thread's length is
        // normal; a caller keeping more messages than it sent made a mistake.
        let (min, len) = (self.profile.min_recent_messages, self.thread.messages.len());
        if self.min_recent_overridden && min > len as u64 {
            errs.push(FieldError::new(
                "/config/min_recent_messages",
                format!("{min} is more than the {len} messages of the thread"),
            ));
        }
        // `nth` stops after the limit: a long string costs no more than that.
        let instructions = self.instructions.as_deref().unwrap_or_default();
        if instructions.chars().nth(MAX_INSTRUCTIONS).is_some() {
            errs.push(FieldError::new(
                "/summarizer/instructions",
                format!("must be at most {MAX_INSTRUCTIONS} characters"),
            ));
        }
        if let Some(keep) = self.keep_recent_iterations
            && !(1..=MAX_KEEP_RECENT_ITERATIONS).contains(&keep)
        {
            errs.push(FieldError::new(
                "/keep_recent_iterations",
                format!("must be between 1 and {MAX_KEEP_RECENT_ITERATIONS}"),
            ));
        }
        if self.idle.is_some_and(|i| i.as_secs() > MAX_IDLE_SECONDS) {
            errs.push(FieldError::new(
                "/idle_seconds",
                format!("must be at most {MAX_IDLE_SECONDS} (ten years)"),
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(errs))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::Profile;
    use crate::thread::{RawThread, parse};

    /// A compression of a thread of `n` messages under a profile keeping
    /// `min_recent` newest messages.
    fn compression(n: usize, min_recent: u64) -> Compression {
        let messages: Vec<_> = (0..n)
            .map(|i| json!({"role": "user", "content": format!("m{i}")}))
            .collect();
        let thread = parse(RawThread {
            messages: &messages,
            ..Default::default()
        })
        .unwrap();
        let profile = Profile {
            min_recent_messages: min_recent,
            ..Profile::default()
        };
        Compression::new(thread, profile)
    }

    fn pointers(r: Result<(), Error>) -> Vec<String> {
        match r {
            Ok(()) => Vec::new(),
            Err(Error::Invalid(errs)) => errs.into_iter().map(|e| e.pointer).collect(),
            Err(e) => panic!("not a field error: {e}"),
        }
    }

    #[test]
    fn a_callers_min_recent_messages_may_not_exceed_the_thread() {
        let asked = |min| Compression {
            min_recent_overridden: true,
            ..compression(4, min)
        };
        assert_eq!(pointers(asked(5).check()), ["/config/min_recent_messages"]);
        assert!(asked(4).check().is_ok());
        // The profile's own value above a short thread's length is normal.
        assert!(compression(4, 5).check().is_ok());
    }

    #[test]
    fn instructions_are_counted_in_characters() {
        let with = |s: String| Compression {
            instructions: Some(s),
            ..compression(2, 6)
        };
        // Two bytes a character: within the limit though over it in bytes.
        assert!(with("é".repeat(MAX_INSTRUCTIONS)).check().is_ok());
        let over = with("é".repeat(MAX_INSTRUCTIONS + 1)).check();
        assert_eq!(pointers(over), ["/summarizer/instructions"]);
    }

    #[test]
    fn keep_recent_iterations_needs_grouping_and_a_range() {
        let iteration = Some(GroupBy::Iteration);
        assert_eq!(
            keep_recent_iterations(iteration, None).unwrap(),
            Some(KEEP_RECENT_ITERATIONS)
        );
        assert_eq!(keep_recent_iterations(None, None).unwrap(), None);
        let alone = keep_recent_iterations(None, Some(2)).map(|_| ());
        assert_eq!(pointers(alone), ["/keep_recent_iterations"]);
        let keeping = |keep| {
            Compression {
                keep_recent_iterations: keep_recent_iterations(iteration, Some(keep)).unwrap(),
                ..compression(2, 6)
            }
            .check()
        };
        assert!(keeping(1).is_ok());
        assert!(keeping(10_000).is_ok());
        for bad in [0, 10_001, u64::MAX] {
            assert_eq!(pointers(keeping(bad)), ["/keep_recent_iterations"], "{bad}");
        }
    }

    #[test]
    fn every_broken_rule_is_reported_at_once() {
        let c = Compression {
            min_recent_overridden: true,
            instructions: Some("x".repeat(MAX_INSTRUCTIONS + 1)),
            keep_recent_iterations: Some(0),
            ..compression(1, 2)
        };
        assert_eq!(
            pointers(c.check()),
            [
                "/config/min_recent_messages",
                "/summarizer/instructions",
                "/keep_recent_iterations"
            ]
        );
    }
}
