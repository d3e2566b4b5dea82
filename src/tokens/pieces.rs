//! A per-thread memo of short pieces' token counts: `bpe-openai` builds an
//! encoder per piece, and words repeat. Exact: a count depends on the bytes alone.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

/// Longer pieces are rare and cost more to key than to count again.
const MAX_PIECE: usize = 15;
/// Entries per thread and encoding; the map is cleared when full.
const MAX_ENTRIES: usize = 1 << 14;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    len: u8,
    bytes: [u8; MAX_PIECE],
}

thread_local! {
    static PIECES: RefCell<[FxHashMap<Key, u32>; 2]> = RefCell::default();
}

/// Pieces counted between two looks at the cancellation flag.
const PIECES_PER_LOOK: usize = 4096;

/// `tokenizer.count(text)`, short pieces memoized in map `slot` (per encoding).
pub fn count(tokenizer: &bpe_openai::Tokenizer, slot: usize, text: &str) -> usize {
    PIECES.with_borrow_mut(|maps| {
        let map = &mut maps[slot];
        tokenizer
            .split(text)
            .enumerate()
            .take_while(|(i, _)| i % PIECES_PER_LOOK != 0 || *i == 0 || !super::cancel::cancelled())
            .map(|(_, piece)| {
                let bytes = piece.as_bytes();
                if bytes.len() > MAX_PIECE {
                    return tokenizer.bpe.count(bytes);
                }
                let mut key = Key {
                    len: bytes.len() as u8,
                    bytes: [0; MAX_PIECE],
                };
                key.bytes[..bytes.len()].copy_from_slice(bytes);
                if let Some(&n) = map.get(&key) {
                    return n as usize;
                }
                let n = tokenizer.bpe.count(bytes);
                if map.len() >= MAX_ENTRIES {
                    map.clear();
                }
                map.insert(key, n as u32);
                n
            })
            .sum()
    })
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

    proptest! {
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
