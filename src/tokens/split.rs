//! The o200k and cl100k pre-tokenizers written out by hand for ASCII text,
//! the regex (`regex_split.rs`) taking over for any piece whose
//! extent depends on a non-ASCII character's class.
//!
//! Exact by construction: the piece at a position is the one the anchored,
//! leftmost-first regex finds there, worked out below alternative by
//! alternative for ASCII (where `\p{L}` is `[A-Za-z]`, `\p{N}` is `[0-9]`,
//! the upper and lower letter classes are disjoint and `\s` is
//! `[\t\n\x0B\x0C\r ]`). Whenever the answer would need the class of a byte
//! at or above 0x80 (a letter run, a digit run, a punctuation run or a
//! whitespace run meeting one, a contraction's letter) the scan gives up and
//! the regex cuts that one piece, so the pieces are the regex's on every
//! text. A differential test holds the two together.

use regex_automata::meta::{Cache, Regex};

#[cfg(test)]
use super::regex_split::SPLIT;
use super::regex_split::next;

/// Which of the two patterns to follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    O200k,
    Cl100k,
}

const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;
/// `\s`.
const SPACE: u8 = 8;
/// `[\r\n]`.
const NEWLINE: u8 = 16;
/// `[^\s\p{L}\p{N}]`.
const PUNCT: u8 = 32;
/// `[^\r\n\p{L}\p{N}]`, the optional character before a word.
const PREFIX: u8 = 64;
/// The end of the text: no class at all.
const END: u8 = 128;

const CLASSES: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let mut class = if c.is_ascii_lowercase() {
            LOWER
        } else if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_digit() {
            DIGIT
        } else if matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ') {
            SPACE
        } else {
            PUNCT
        };
        if c == b'\r' || c == b'\n' {
            class |= NEWLINE;
        } else if class & (LOWER | UPPER | DIGIT) == 0 {
            class |= PREFIX;
        }
        t[b] = class;
        b += 1;
    }
    t
};

/// The class of byte `i` of `rest` ([`END`] past its end), or None for a
/// byte of a non-ASCII character.
#[inline(always)]
fn class(rest: &[u8], i: usize) -> Option<u8> {
    match rest.get(i) {
        None => Some(END),
        Some(&b) if b < 0x80 => Some(CLASSES[b as usize]),
        Some(_) => None,
    }
}

/// The end of the run of bytes from `from` whose class meets `mask`.
#[inline(always)]
fn run(rest: &[u8], from: usize, mask: u8) -> Option<usize> {
    let mut i = from;
    loop {
        if class(rest, i)? & mask == 0 {
            return Some(i);
        }
        i += 1;
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The bytes of `word` (eight of the text) in `lo..=hi` (ASCII, `lo` > 0),
/// as their high bits. No carry crosses a byte: each sum stays below 0x100.
#[inline(always)]
fn in_range(word: u64, lo: u8, hi: u8) -> u64 {
    let low7 = word & !HIGH;
    let from_lo = low7 + ONES * u64::from(0x80 - lo);
    let past_hi = low7 + ONES * u64::from(0x7F - hi);
    from_lo & !past_hi & !word & HIGH
}

/// [`run`] for a run of letters in `lo..=hi` (`fold` ORed into each byte
/// first: 0x20 makes upper case lower), eight bytes at a time: words are
/// most of a text, and a byte loop's exit is a branch missed per word.
#[inline(always)]
fn letters(rest: &[u8], from: usize, lo: u8, hi: u8, fold: u8, mask: u8) -> Option<usize> {
    let mut i = from;
    while let Some(chunk) = rest.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let outside = !in_range(word | (ONES * u64::from(fold)), lo, hi) & HIGH;
        if outside != 0 {
            i += outside.trailing_zeros() as usize / 8;
            return (rest[i] < 0x80).then_some(i);
        }
        i += 8;
    }
    run(rest, i, mask)
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` from `at`. A non-ASCII
/// character after the apostrophe gives up: `ſ` (U+017F) is an `s` to `(?i)`.
#[inline(always)]
fn contraction(rest: &[u8], at: usize) -> Option<usize> {
    if rest.get(at) != Some(&b'\'') {
        return Some(at);
    }
    let Some(&first) = rest.get(at + 1) else {
        return Some(at);
    };
    if first >= 0x80 {
        return None;
    }
    let second = rest.get(at + 2).map(u8::to_ascii_lowercase);
    Some(match first.to_ascii_lowercase() {
        b's' | b't' | b'm' | b'd' => at + 2,
        b'r' | b'v' if second == Some(b'e') => at + 3,
        b'l' if second == Some(b'l') => at + 3,
        _ => at,
    })
}

/// The length of the piece at the start of `rest` (not empty), or None when
/// it depends on a non-ASCII character's class.
pub fn piece(pattern: Pattern, rest: &[u8]) -> Option<usize> {
    let first = class(rest, 0)?;
    if pattern == Pattern::Cl100k && rest[0] == b'\'' {
        let end = contraction(rest, 0)?;
        if end > 0 {
            return Some(end);
        }
    }
    // A word, after an optional prefix character. o200k: `P?[A]*[B]+'x?`
    // then `P?[A]+[B]*'x?`, which for ASCII is upper then lower letters, at
    // least one; cl100k: `P?\p{L}+`.
    let start = usize::from(first & PREFIX != 0);
    match pattern {
        Pattern::O200k => {
            let upper = letters(rest, start, b'A', b'Z', 0, UPPER)?;
            let lower = letters(rest, upper, b'a', b'z', 0, LOWER)?;
            if lower > start {
                return contraction(rest, lower);
            }
        }
        Pattern::Cl100k => {
            let end = letters(rest, start, b'a', b'z', 0x20, UPPER | LOWER)?;
            if end > start {
                return Some(end);
            }
        }
    }
    // `\p{N}{1,3}`.
    if first & DIGIT != 0 {
        let mut end = 1;
        while end < 3 && class(rest, end)? & DIGIT != 0 {
            end += 1;
        }
        return Some(end);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*` (cl100k: `[\r\n]*`).
    let start = usize::from(rest[0] == b' ');
    let end = run(rest, start, PUNCT)?;
    if end > start {
        let tail = rest[end..]
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n' || (b == b'/' && pattern == Pattern::O200k))
            .count();
        return Some(end + tail);
    }
    // Whitespace: `\s*[\r\n]+` up to the run's last newline, else `\s+$`,
    // else `\s+(?!\S)` (the run less its last character), else `\s+`.
    if first & SPACE != 0 {
        let end = run(rest, 0, SPACE)?;
        return Some(
            match rest[..end].iter().rposition(|&b| b == b'\r' || b == b'\n') {
                Some(last) => last + 1,
                None if end == rest.len() || end == 1 => end,
                None => end - 1,
            },
        );
    }
    None
}

/// The hand-written pre-tokenizer's pattern for each slot of [`SPLIT`].
const PATTERNS: [Pattern; 2] = [Pattern::O200k, Pattern::Cl100k];

/// The piece of `text` from byte `last` on: cut by hand, or by the regex
/// where the hand-written scan gives up (see the module's doc).
#[inline]
pub(super) fn cut<'t>(
    slot: usize,
    split: &Regex,
    cache: &mut Cache,
    text: &'t str,
    last: &mut usize,
) -> Option<&'t str> {
    let rest = &text.as_bytes()[*last..];
    if rest.is_empty() {
        return None;
    }
    match piece(PATTERNS[slot], rest) {
        Some(n) => {
            let start = *last;
            *last += n;
            Some(&text[start..*last])
        }
        None => next(split, cache, text, last),
    }
}

/// `text` in pieces, cut as [`pieces`](super::pieces) cuts it (`by_hand`) or by the regex
/// alone, the oracle of the hand-written scan.
#[cfg(test)]
pub(super) fn split_all(slot: usize, text: &str, by_hand: bool) -> Vec<&str> {
    let split = &SPLIT[slot];
    let mut cache = split.create_cache();
    let (mut out, mut last) = (Vec::new(), 0);
    while let Some(piece) = if by_hand {
        cut(slot, split, &mut cache, text, &mut last)
    } else {
        next(split, &mut cache, text, &mut last)
    } {
        out.push(piece);
    }
    assert_eq!(last, text.len(), "{text:?} not cut whole");
    out
}

#[cfg(test)]
mod tests {
    use super::{Pattern, piece};
    use proptest::prelude::*;

    fn pieces(slot: usize, text: &str, by_hand: bool) -> Vec<&str> {
        super::split_all(slot, text, by_hand)
    }

    fn same_pieces(text: &str) -> Result<(), TestCaseError> {
        for slot in [0, 1] {
            prop_assert_eq!(
                pieces(slot, text, true),
                pieces(slot, text, false),
                "slot {}",
                slot
            );
        }
        Ok(())
    }

    /// Whitespace runs mixing `\r\n`, Unicode spaces and letters after them.
    const SPACES: &str = "[ \t\r\n\x0B\x0C\u{85}\u{A0}\u{2028}\u{3000}]{1,6}";
    /// Words in mixed case with contractions, marks and look-alikes (`ſ`,
    /// the Kelvin sign) after the apostrophe.
    const WORDS: &str = "(['’]|[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]|ſ|\u{212A}|[a-zA-Z]{1,5}|[A-Z]{1,3}|\u{301}|é|É|ǅ|ʰ|中文|[0-9])";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn hand_split_is_the_regex_split_on_any_text(text in ".{0,60}") {
            same_pieces(&text)?;
        }

        #[test]
        fn hand_split_is_the_regex_split_on_ascii(text in "[\\x00-\\x7F]{0,80}") {
            same_pieces(&text)?;
        }

        #[test]
        fn hand_split_is_the_regex_split_on_code(parts in prop::collection::vec(prop_oneof![
            "[ -~]{1,12}", SPACES, WORDS, "[0-9]{1,7}", "[-=*/#(){}\\[\\];:.,<>!?'\"`]{1,6}",
            "\r\n", "\n\n", " //", "/\r\n/", "[ \t]{1,9}\n", "[^\\x00-\\x7F]{1,2}",
        ], 0..24)) {
            same_pieces(&parts.concat())?;
        }

        #[test]
        fn hand_split_is_the_regex_split_on_contractions(parts in prop::collection::vec(
            "[ a-zA-Zé\u{301}0-9]{0,3}['’](s|S|ſ|t|T|re|rE|Re|RE|ve|VE|vE|m|M|ll|lL|Ll|LL|d|D|r|v|l|x|é|\u{301}|\u{212A}|'| |)[a-zé]{0,2}",
            1..8)) {
            same_pieces(&parts.concat())?;
        }

        #[test]
        fn hand_split_is_the_regex_split_on_long_repeats(
            unit in prop_oneof!["[ -~]{1,3}", SPACES, WORDS], times in 1..300usize, tail in ".{0,3}",
        ) {
            same_pieces(&format!("{}{tail}", unit.repeat(times)))?;
        }

        /// The fast path gives up only for what it cannot class.
        #[test]
        fn ascii_text_never_needs_the_regex(text in "[\\x00-\\x7F]{1,80}") {
            for pattern in [Pattern::O200k, Pattern::Cl100k] {
                let mut rest = text.as_bytes();
                while !rest.is_empty() {
                    let n = piece(pattern, rest);
                    prop_assert!(n.is_some_and(|n| n > 0), "{:?} at {:?}", pattern, rest);
                    rest = &rest[n.unwrap_or(rest.len())..];
                }
            }
        }
    }

    #[test]
    fn eight_bytes_at_a_time_class_as_one_at_a_time() {
        for (lo, hi, fold) in [(b'A', b'Z', 0), (b'a', b'z', 0), (b'a', b'z', 0x20)] {
            for b in 0..=255u8 {
                for at in 0..8 {
                    // The byte among neighbours that carry no borrow or carry.
                    let mut bytes = [0xFFu8, 0x00, 0x7F, 0x80, b'a', b'Z', 0x20, 0x61];
                    bytes[at] = b;
                    let word = u64::from_le_bytes(bytes) | (super::ONES * u64::from(fold));
                    let got = super::in_range(word, lo, hi) >> (8 * at + 7) & 1 == 1;
                    assert_eq!(
                        got,
                        (lo..=hi).contains(&(b | fold)) && b < 0x80,
                        "{b:#x} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn known_cuts() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "Hello WORLD's  don'T\n\n  x 1234 ",
                &[
                    "Hello", " WORLD's", " ", " don'T", "\n\n", " ", " x", " ", "123", "4", " ",
                ],
                &[
                    "Hello", " WORLD", "'s", " ", " don", "'T", "\n\n", " ", " x", " ", "123", "4",
                    " ",
                ],
            ),
            ("x'ſ 'ſ", &["x'ſ", " '", "ſ"], &["x", "'ſ", " '", "ſ"]),
            (
                "a/ b\r\n/\r\n",
                &["a", "/", " b", "\r\n", "/\r\n"],
                &["a", "/", " b", "\r\n", "/\r\n"],
            ),
        ];
        for (text, o200k, cl100k) in cases {
            assert_eq!(pieces(0, text, true), *o200k, "{text:?}");
            assert_eq!(pieces(1, text, true), *cl100k, "{text:?}");
            same_pieces(text).unwrap();
        }
    }
}
