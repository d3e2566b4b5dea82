//! Counting a text by pieces, per thread: the pre-tokenizer's match cache
//! and a memo of short pieces' counts (words repeat), each new piece merged
//! by [`merge`](super::merge). Exact: a count depends on the bytes alone.
//!
//! Pieces are cut by hand ([`split`](super::split)), the regex cutting only
//! those the hand-written scan gives up on: the regex alone took about 80%
//! of a count with a warm memo (`tokens::probe`'s measurement).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use regex_automata::meta::Cache;
use rustc_hash::FxHashMap;

use super::regex_split::{SPLIT, next};
use super::split::cut;

static TOKENIZED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes tokenized by this process, counted as they are done (a count that
/// stops early tallies only what it read): the tests that keep compression
/// linear and stop the work of a gone request read it.
pub fn tokenized_bytes() -> u64 {
    TOKENIZED_BYTES.load(Ordering::Relaxed)
}

/// Adds `n` bytes to [`tokenized_bytes`].
pub(super) fn tokenized(n: usize) {
    TOKENIZED_BYTES.fetch_add(n as u64, Ordering::Relaxed);
}

/// Longer pieces are rare and cost more to key than to count again.
const MAX_PIECE: usize = 15;
/// Entries per thread and encoding; the map is cleared when full.
const MAX_ENTRIES: usize = 1 << 14;

/// A short piece: its first eight bytes, then the rest with its length in
/// the last byte (one piece per key: the length tells where the bytes end).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key([u8; 16]);

impl Key {
    /// Read as whole words, not copied byte by byte: a store of a variable
    /// length read back as words stalls the hash that follows (a third of a
    /// count's time, measured).
    fn new(bytes: &[u8]) -> Self {
        let n = bytes.len();
        debug_assert!(n <= MAX_PIECE);
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight"));
        let half = |at: usize| {
            u64::from(u32::from_le_bytes(
                bytes[at..at + 4].try_into().expect("four"),
            ))
        };
        // Bytes past the eighth (past the fourth) are the top ones of the
        // word (half) that ends the piece.
        let (head, rest) = match n {
            8.. => (word(0), (word(n - 8) >> 1) >> (8 * (16 - n) - 1)),
            4.. => (half(0) | (half(n - 4) >> (8 * (8 - n))) << 32, 0),
            _ => (bytes.iter().rev().fold(0, |k, &b| k << 8 | u64::from(b)), 0),
        };
        let mut key = [0; 16];
        key[..8].copy_from_slice(&head.to_le_bytes());
        key[8..].copy_from_slice(&(rest | (n as u64) << 56).to_le_bytes());
        Self(key)
    }
}

/// What a thread keeps per encoding.
#[derive(Default)]
struct Local {
    memo: FxHashMap<Key, u32>,
    cache: Option<Cache>,
}

thread_local! {
    static LOCAL: RefCell<[Local; 2]> = RefCell::default();
}

/// Pieces counted between two looks at the cancellation flag...
const PIECES_PER_LOOK: usize = 4096;
/// ...or bytes, whichever comes first (a piece longer than this looks
/// inside itself: [`long`](super::long)).
const BYTES_PER_LOOK: usize = super::long::CHUNK;

/// `tokenizer.count(text)`, cut as `bpe-openai` cuts it (by hand, else by
/// [`SPLIT`]`[slot]`), short pieces memoized.
pub fn count(tokenizer: &bpe_openai::Tokenizer, slot: usize, text: &str) -> usize {
    count_as(tokenizer, slot, text, Way::default())
}

/// How [`count_as`] cuts and counts: production's way is the default; the
/// others are for the benchmarks that tell where the time goes
/// ([`probe`](super::probe)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Way {
    /// Cut by the regex alone, as before the hand-written scan.
    pub regex_only: bool,
    /// Count every piece with the BPE, the memo unused.
    pub no_memo: bool,
    /// Count the pieces, not their tokens.
    pub split_only: bool,
    /// Count a piece with `bpe-openai`'s merge, as before [`merge`](super::merge).
    pub library_merge: bool,
}

/// [`count`], cut and counted `way`.
pub fn count_as(tokenizer: &bpe_openai::Tokenizer, slot: usize, text: &str, way: Way) -> usize {
    let split = &SPLIT[slot];
    let ranks = &super::merge::RANKS[slot];
    let merge = |piece: &[u8]| {
        if way.library_merge {
            tokenizer.bpe.count(piece)
        } else {
            ranks.count(piece)
        }
    };
    LOCAL.with_borrow_mut(|locals| {
        let Local { memo, cache } = &mut locals[slot];
        let cache = cache.get_or_insert_with(|| split.create_cache());
        let (mut sum, mut last) = (0, 0);
        // Pieces and bytes since the last look, bytes not yet tallied.
        let (mut pieces, mut bytes, mut untallied) = (0, 0, 0);
        loop {
            if pieces == PIECES_PER_LOOK || bytes >= BYTES_PER_LOOK {
                tokenized(std::mem::take(&mut untallied));
                if super::cancel::cancelled() {
                    break;
                }
                (pieces, bytes) = (0, 0);
            }
            let piece = if way.regex_only {
                next(split, cache, text, &mut last)
            } else {
                cut(slot, split, cache, text, &mut last)
            };
            let Some(piece) = piece else {
                break;
            };
            let piece = piece.as_bytes();
            if way.split_only {
                sum += 1;
                continue;
            }
            if piece.len() > super::long::LONG {
                tokenized(std::mem::take(&mut untallied));
                let Some(n) = super::long::count(&tokenizer.bpe, piece, &mut tokenized) else {
                    break;
                };
                sum += n;
                continue;
            }
            sum += if way.no_memo {
                merge(piece)
            } else {
                memoized(memo, piece, merge)
            };
            pieces += 1;
            bytes += piece.len();
            untallied += piece.len();
        }
        tokenized(untallied);
        sum
    })
}

fn memoized(memo: &mut FxHashMap<Key, u32>, bytes: &[u8], merge: impl Fn(&[u8]) -> usize) -> usize {
    if bytes.len() > MAX_PIECE {
        return merge(bytes);
    }
    let key = Key::new(bytes);
    if let Some(&n) = memo.get(&key) {
        return n as usize;
    }
    let n = merge(bytes);
    if memo.len() >= MAX_ENTRIES {
        memo.clear();
    }
    memo.insert(key, n as u32);
    n
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    #[test]
    fn a_cancelled_count_stops_inside_one_long_text() {
        use std::sync::atomic::AtomicBool;
        let tokenizer = bpe_openai::o200k_base();
        let text = "word ".repeat(1_000_000);
        let whole = super::count(tokenizer, 0, &text);
        assert_eq!(whole, tokenizer.count(text.as_str()));
        let gone = std::sync::Arc::new(AtomicBool::new(true));
        let partial = crate::tokens::cancel::scope(gone, || super::count(tokenizer, 0, &text));
        assert!(
            partial <= super::PIECES_PER_LOOK * 2,
            "{partial} of {whole}"
        );
    }

    #[test]
    fn long_pieces_among_short_ones_count_as_bpe_openai() {
        let dashes = "-".repeat(100_000);
        let text = format!(
            "a {dashes} b {} c\n{}x",
            "=".repeat(70_001),
            " ".repeat(40_000)
        );
        for (slot, tokenizer) in [bpe_openai::o200k_base(), bpe_openai::cl100k_base()]
            .into_iter()
            .enumerate()
        {
            assert_eq!(
                super::count(tokenizer, slot, &text),
                tokenizer.count(text.as_str())
            );
        }
    }

    #[test]
    fn a_cancelled_count_stops_inside_one_long_piece() {
        use std::sync::atomic::AtomicBool;
        let tokenizer = bpe_openai::o200k_base();
        let text = format!("x {}", "-".repeat(4_000_000));
        let gone = std::sync::Arc::new(AtomicBool::new(true));
        let partial = crate::tokens::cancel::scope(gone, || super::count(tokenizer, 0, &text));
        // Not the process-wide tally of bytes read: the other tests of this
        // binary count megabytes beside it (`tests/solo/cancel.rs` reads it alone).
        assert!(partial < 100, "{partial} tokens");
    }

    proptest! {
        #[test]
        fn a_key_is_its_piece(a in prop::collection::vec(any::<u8>(), 0..=super::MAX_PIECE),
                              b in prop::collection::vec(any::<u8>(), 0..=super::MAX_PIECE)) {
            prop_assert_eq!(super::Key::new(&a) == super::Key::new(&b), a == b);
            // One byte changed, or one more: another key.
            for i in 0..a.len() {
                let mut c = a.clone();
                c[i] ^= 1 << (i % 8);
                prop_assert!(super::Key::new(&a) != super::Key::new(&c));
            }
            if a.len() < super::MAX_PIECE {
                let longer = [a.as_slice(), &[0]].concat();
                prop_assert!(super::Key::new(&a) != super::Key::new(&longer));
            }
        }

        #[test]
        fn memoized_pieces_count_as_bpe_openai(texts in prop::collection::vec(
            prop_oneof![".{0,40}", "[a-z ]{0,60}", "[ -~]{0,60}", "[-=*]{0,40}"], 1..20)) {
            for (slot, tokenizer) in [bpe_openai::o200k_base(), bpe_openai::cl100k_base()].into_iter().enumerate() {
                // Twice: the second pass reads the memo.
                for _ in 0..2 {
                    for t in &texts {
                        prop_assert_eq!(super::count(tokenizer, slot, t), tokenizer.count(t.as_str()));
                    }
                }
            }
        }
    }
}
