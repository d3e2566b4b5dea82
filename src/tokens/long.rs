//! Counting one over-long pre-tokenizer piece (a run of millions of `-` is
//! one piece) in windows, so that a request that is gone stops its count
//! between two windows instead of after the whole piece.
//!
//! Exact, by the validity rules of `bpe` (its README, corollaries II, III
//! and IIIa): a sequence of tokens is the BPE encoding of its text when each
//! pair of neighbours is (`BPE(t1 t2) == [t1, t2]`), any run of tokens cut
//! from an encoding is the encoding of its text, and valid runs joined by a
//! valid pair make a valid run. Each window is encoded alone and counted up
//! to its last token boundary a margin before its end (where the encoding of
//! a text can differ from that of a longer one); the next window starts
//! there, and its first token must pair with the last one counted. Every
//! seam checked, the tokens counted are the one encoding of the piece, so
//! the count is `bpe.count(piece)`'s.
//!
//! Linear: each byte is encoded once, and the margin once more. A seam that
//! does not pair (never seen: the encodings of a text and of a longer one
//! part only near their ends, over a few tokens) has the piece counted
//! whole, exactly, without the looks at the flag.

use bpe_openai::byte_pair_encoding::BytePairEncoding;

/// Bytes encoded between two looks at the cancellation flag: about 10 ms
/// of the slowest text (a run of `-`) in a release build.
pub const CHUNK: usize = 16 * 1024;

/// Pieces longer than this are counted in windows.
pub const LONG: usize = 2 * CHUNK;

/// The most bytes at a window's end left for the next window to count: 8
/// times the longest token of o200k and cl100k (128 bytes).
const MARGIN: usize = 1024;

/// `bpe.count(piece)`, or None when the request went away meanwhile.
/// `tally` hears of the bytes counted as they are.
pub fn count(bpe: &BytePairEncoding, piece: &[u8], tally: &mut dyn FnMut(usize)) -> Option<usize> {
    match windowed(bpe, piece, CHUNK, tally) {
        Windowed::Counted(n) => Some(n),
        Windowed::Stopped => None,
        Windowed::NoSeam { from } => {
            let n = bpe.count(piece);
            tally(piece.len() - from);
            Some(n)
        }
    }
}

#[derive(Debug, PartialEq)]
enum Windowed {
    Counted(usize),
    Stopped,
    /// The window from byte `from` does not pair with the tokens before it.
    NoSeam {
        from: usize,
    },
}

/// Counts `piece` in windows of `window` bytes (and the margin's).
fn windowed(
    bpe: &BytePairEncoding,
    piece: &[u8],
    window: usize,
    tally: &mut dyn FnMut(usize),
) -> Windowed {
    let margin = MARGIN.min(window / 4);
    let (mut total, mut counted_last, mut start) = (0, None::<u32>, 0);
    while start < piece.len() {
        if super::cancel::cancelled() {
            return Windowed::Stopped;
        }
        let mut end = (start + window + margin).min(piece.len());
        // No short last window.
        if piece.len() - end < window / 2 {
            end = piece.len();
        }
        let tokens = bpe.encode_via_backtracking(&piece[start..end]);
        let Some(&first) = tokens.first() else {
            return Windowed::NoSeam { from: start };
        };
        if counted_last.is_some_and(|before| !pairs(bpe, before, first)) {
            return Windowed::NoSeam { from: start };
        }
        if end == piece.len() {
            tally(end - start);
            return Windowed::Counted(total + tokens.len());
        }
        // The tokens that end before the margin.
        let mut at = start;
        let mut kept = 0;
        for &t in &tokens {
            if at + bpe.token_len(t) > end - margin {
                break;
            }
            at += bpe.token_len(t);
            kept += 1;
        }
        if kept == 0 {
            return Windowed::NoSeam { from: start };
        }
        total += kept;
        counted_last = Some(tokens[kept - 1]);
        tally(at - start);
        start = at;
    }
    Windowed::Counted(total)
}

/// Whether `first` then `second` is the BPE encoding of their bytes.
fn pairs(bpe: &BytePairEncoding, first: u32, second: u32) -> bool {
    let mut text = bpe.token_bytes(first).to_vec();
    text.extend_from_slice(bpe.token_bytes(second));
    bpe.encode_via_backtracking(&text) == [first, second]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Windowed, windowed};

    type Bpe = bpe_openai::byte_pair_encoding::BytePairEncoding;

    fn encoders() -> [&'static Bpe; 2] {
        [
            &bpe_openai::o200k_base().bpe,
            &bpe_openai::cl100k_base().bpe,
        ]
    }

    /// Counts `text` in windows of `window` bytes; every byte is tallied once.
    fn counted(bpe: &Bpe, text: &[u8], window: usize) -> Windowed {
        let mut tallied = 0;
        let out = windowed(bpe, text, window, &mut |n| tallied += n);
        if matches!(out, Windowed::Counted(_)) {
            assert_eq!(tallied, text.len());
        }
        out
    }

    #[test]
    fn long_runs_count_as_one_piece() {
        for bpe in encoders() {
            for unit in ["-", "=", "*", " ", "ab", "-=", "0", "é", "\u{1F600}", "x-"] {
                let text = unit.repeat(40_000 / unit.len());
                for window in [1000 + 7, super::CHUNK] {
                    assert_eq!(
                        counted(bpe, text.as_bytes(), window),
                        Windowed::Counted(bpe.count(text.as_bytes())),
                        "{unit:?} in windows of {window}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_gone_request_stops_between_windows() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let text = "-".repeat(1_000_000);
        let mut tallied = 0;
        let gone = Arc::new(AtomicBool::new(true));
        let out = crate::tokens::cancel::scope(gone, || {
            super::count(encoders()[0], text.as_bytes(), &mut |n| tallied += n)
        });
        assert_eq!(out, None);
        assert_eq!(tallied, 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Short windows put seams everywhere: the count is the whole piece's.
        #[test]
        fn windowed_counts_as_bpe_count(text in texts(3000, 6000), window in 1024usize..1500) {
            for bpe in encoders() {
                prop_assert_eq!(
                    counted(bpe, text.as_bytes(), window),
                    Windowed::Counted(bpe.count(text.as_bytes()))
                );
            }
        }

        /// Windows too short for their seams may count whole, never wrong.
        #[test]
        fn tiny_windows_count_right_or_not_at_all(text in texts(1, 600), window in 1usize..80) {
            for bpe in encoders() {
                let want = bpe.count(text.as_bytes());
                match counted(bpe, text.as_bytes(), window) {
                    Windowed::Counted(n) => prop_assert_eq!(n, want),
                    Windowed::NoSeam { .. } => {}
                    Windowed::Stopped => prop_assert!(false, "stopped uncancelled"),
                }
            }
        }
    }

    fn texts(min: usize, max: usize) -> impl Strategy<Value = String> {
        let chars = |class: &str| {
            prop::collection::vec(prop::string::string_regex(class).unwrap(), min..max)
                .prop_map(|v| v.concat())
        };
        prop_oneof![
            chars("[-=*_ ]"),
            chars("[a-z0-9 .,'-]"),
            chars("."),
            prop::collection::vec(any::<u8>(), min..max)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ]
    }
}
