//! Bounds on what an error answer repeats of the request (a million bad
//! entries once gave a 343 MB answer): quoted values and lists of errors.

use std::borrow::Cow;

use crate::thread::FieldError;

/// Longest quoted input value, in characters; longer ones are cut and end in `…`.
pub const MAX_ECHO_CHARS: usize = 64;

/// Most field errors in one answer; the rest are counted in one more entry.
pub const MAX_ERRORS: usize = 100;

/// `value` as an error message may quote it: cut to [`MAX_ECHO_CHARS`] and `…`.
pub fn echo(value: &str) -> Cow<'_, str> {
    match value.char_indices().nth(MAX_ECHO_CHARS) {
        None => Cow::Borrowed(value),
        Some((end, _)) => Cow::Owned(format!("{}…", &value[..end])),
    }
}

/// Field errors: the first [`MAX_ERRORS`] kept, the others only counted.
#[derive(Debug, Default)]
pub struct Bounded {
    kept: Vec<FieldError>,
    more: usize,
}

impl Bounded {
    /// Moves `errs` in (emptying it), keeping what fits.
    pub fn absorb(&mut self, errs: &mut Vec<FieldError>) {
        let room = MAX_ERRORS.saturating_sub(self.kept.len());
        if errs.len() > room {
            self.more += errs.len() - room;
            errs.truncate(room);
        }
        self.kept.append(errs);
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.more == 0
    }

    /// The kept errors, and one more entry counting the rest when any were left out.
    pub fn finish(mut self) -> Vec<FieldError> {
        if self.more > 0 {
            let s = if self.more == 1 { "" } else { "s" };
            let counted = format!("+{} more error{s}", self.more);
            self.kept.push(FieldError::new("", counted));
        }
        self.kept
    }
}

/// `errors` cut as [`Bounded`] cuts them; a list it already cut passes unchanged.
pub fn cap(mut errors: Vec<FieldError>) -> Vec<FieldError> {
    if errors.len() <= MAX_ERRORS + 1 {
        return errors;
    }
    let mut bounded = Bounded::default();
    bounded.absorb(&mut errors);
    bounded.finish()
}

/// A serde message with the input it quotes cut by [`echo`] (up to the last
/// quote before `, expected` or `, there are no`: the value may hold them).
pub fn clip_quoted(message: &str) -> Cow<'_, str> {
    let Some(open) = message.find(['`', '"']) else {
        return Cow::Borrowed(message);
    };
    let quote = &message[open..open + 1];
    let start = open + 1;
    let rest = &message[start..];
    let end = [", expected", ", there are no"]
        .iter()
        .filter_map(|tail| rest.rfind(&format!("{quote}{tail}")))
        .max()
        .or_else(|| rest.rfind(quote));
    let Some(end) = end else {
        return Cow::Borrowed(message);
    };
    match echo(&rest[..end]) {
        Cow::Borrowed(_) => Cow::Borrowed(message),
        Cow::Owned(cut) => Cow::Owned(format!("{}{cut}{}", &message[..start], &rest[end..])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_to_a_prefix() {
        assert_eq!(echo("user"), "user");
        let long = "é".repeat(MAX_ECHO_CHARS + 1);
        let cut = echo(&long);
        assert_eq!(cut.chars().count(), MAX_ECHO_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(echo(&"x".repeat(MAX_ECHO_CHARS)).len(), MAX_ECHO_CHARS);
    }

    #[test]
    fn bounded_keeps_the_first_errors_and_counts_the_rest() {
        let mut b = Bounded::default();
        for i in 0..250 {
            b.absorb(&mut vec![FieldError::new(format!("/messages/{i}"), "bad")]);
        }
        let errs = b.finish();
        assert_eq!(errs.len(), MAX_ERRORS + 1);
        assert_eq!(errs[0].pointer, "/messages/0");
        assert_eq!(errs[MAX_ERRORS].message, "+150 more errors");
        // Already cut: unchanged by the final cap.
        assert_eq!(cap(errs.clone()), errs);
    }

    #[test]
    fn cap_cuts_long_lists() {
        let errs: Vec<_> = (0..1000)
            .map(|i| FieldError::new(format!("/{i}"), "x"))
            .collect();
        let capped = cap(errs);
        assert_eq!(capped.len(), MAX_ERRORS + 1);
        assert_eq!(capped.last().unwrap().message, "+900 more errors");
    }

    #[test]
    fn serde_messages_quote_a_short_prefix() {
        let v = "a".repeat(1000);
        let m = format!("unknown variant `{v}`, expected `bpe` or `chars`");
        let clipped = clip_quoted(&m);
        assert!(clipped.len() < 150, "{clipped}");
        assert!(
            clipped.ends_with("…`, expected `bpe` or `chars`"),
            "{clipped}"
        );
        let m = format!("invalid type: string \"{v}\", expected u64");
        assert!(clip_quoted(&m).ends_with("…\", expected u64"));
        // A value that itself holds the delimiter and the tail.
        let sneaky = format!("x`, expected {v}");
        let m = format!("unknown field `{sneaky}`, expected one of `a`, `b`");
        let clipped = clip_quoted(&m);
        assert!(clipped.len() < 150, "{clipped}");
        let short = "unknown variant `x`, expected `bpe`";
        assert_eq!(clip_quoted(short), short);
        assert_eq!(
            clip_quoted("missing field `messages`"),
            "missing field `messages`"
        );
    }
}
