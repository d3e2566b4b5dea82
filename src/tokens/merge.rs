//! Counting one pre-tokenizer piece's tokens: tiktoken's own merge, over a
//! rank table of our own. `bpe-openai`'s count allocates two buffers and
//! runs an Aho-Corasick automaton per piece, most of a cold count's time;
//! yet most pieces are one token (a word with its space), found here by one
//! lookup, and the rest are short.
//!
//! Exact by construction: a piece that is a token is that token (tiktoken
//! looks it up first too), and a short piece is merged as tiktoken's
//! `_byte_pair_merge` merges it (the adjacent pair whose bytes have the
//! lowest rank, the leftmost on a tie), a token's rank being its id in
//! `bpe-openai` (the rank files' order). Longer pieces, where that merge is
//! quadratic, go to `bpe-openai`'s linear count.

use std::sync::LazyLock;

use bpe_openai::byte_pair_encoding::BytePairEncoding;

/// Pieces up to this long are merged here; longer ones by `bpe-openai`.
pub const SHORT: usize = 64;

/// A slot holds a token id in its low bits, and bits of its bytes' hash
/// above them that most mismatches fail on before the bytes are compared.
const ID_BITS: u32 = 18;
const ID_MASK: u32 = (1 << ID_BITS) - 1;
/// No token: its id bits are past every id.
const EMPTY: u32 = u32::MAX;

/// Every token's id by its bytes: an open-addressed table of 4-byte slots,
/// at most half full (2 MiB for o200k, 1 MiB for cl100k); the bytes
/// themselves stay in `bpe-openai`'s table, so no key is held twice.
pub struct Ranks {
    bpe: &'static BytePairEncoding,
    slots: Box<[u32]>,
    /// 64 less the bits of a slot's index, taken from the top of the hash.
    shift: u32,
}

/// o200k (slot 0) and cl100k (slot 1), as in [`pieces`](super::pieces).
pub static RANKS: LazyLock<[Ranks; 2]> = LazyLock::new(|| {
    [
        Ranks::new(&bpe_openai::o200k_base().bpe),
        Ranks::new(&bpe_openai::cl100k_base().bpe),
    ]
});

impl Ranks {
    fn new(bpe: &'static BytePairEncoding) -> Self {
        let n = bpe.num_tokens();
        assert!(n < ID_MASK as usize, "{n} tokens do not fit {ID_BITS} bits");
        let bits = (2 * n).next_power_of_two().trailing_zeros();
        let mut slots = vec![EMPTY; 1 << bits].into_boxed_slice();
        let mask = slots.len() - 1;
        let shift = 64 - bits;
        for id in 0..n as u32 {
            let h = hash(bpe.token_bytes(id));
            let mut i = (h >> shift) as usize;
            while slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            slots[i] = id | tag(h);
        }
        Self { bpe, slots, shift }
    }

    /// The rank (id) of the token whose bytes are `bytes`, if one is.
    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let h = hash(bytes);
        let tag = tag(h);
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return None;
            }
            if slot & !ID_MASK == tag && self.bpe.token_bytes(slot & ID_MASK) == bytes {
                return Some(slot & ID_MASK);
            }
            i = (i + 1) & mask;
        }
    }

    /// The number of tokens of `piece`: `bpe.count(piece)`, faster.
    pub fn count(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        if n <= 1 {
            return n;
        }
        if self.rank(piece).is_some() {
            return 1;
        }
        if n > SHORT {
            return self.bpe.count(piece);
        }
        self.merge(piece)
    }

    /// tiktoken's `_byte_pair_merge` of a piece of 2 to [`SHORT`] bytes:
    /// part `i` starts at `start[i]`, and `rank[i]` is the rank of the bytes
    /// of parts `i` and `i + 1` together (`u32::MAX`: no token).
    fn merge(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        debug_assert!((2..=SHORT).contains(&n));
        let mut start = [0u8; SHORT + 1];
        let mut rank = [u32::MAX; SHORT + 1];
        let mut min = (u32::MAX, 0);
        for i in 0..n - 1 {
            let r = self.rank(&piece[i..i + 2]).unwrap_or(u32::MAX);
            if r < min.0 {
                min = (r, i);
            }
            start[i] = i as u8;
            rank[i] = r;
        }
        start[n - 1] = (n - 1) as u8;
        start[n] = n as u8;
        // Parts and the end: `len` entries, the last two ranked MAX.
        let mut len = n + 1;
        while min.0 != u32::MAX {
            let i = min.1;
            let joined = |start: &[u8], at: usize| {
                if at + 3 < len {
                    let bytes = &piece[usize::from(start[at])..usize::from(start[at + 3])];
                    self.rank(bytes).unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                }
            };
            if i > 0 {
                rank[i - 1] = joined(&start, i - 1);
            }
            rank[i] = joined(&start, i);
            start.copy_within(i + 2..len, i + 1);
            rank.copy_within(i + 2..len, i + 1);
            len -= 1;
            min = (u32::MAX, 0);
            for (j, &r) in rank[..len - 1].iter().enumerate() {
                if r < min.0 {
                    min = (r, j);
                }
            }
        }
        len - 1
    }
}

/// The hash bits a slot keeps beside its id.
#[inline(always)]
fn tag(h: u64) -> u32 {
    h as u32 & !ID_MASK
}

const K0: u64 = 0x243F_6A88_85A3_08D3;
const K1: u64 = 0x1319_8A2E_0370_7344;
const K2: u64 = 0xA409_3822_299F_31D0;

/// The high and low halves of a full product, folded: one multiplication
/// mixes every bit of both words (as foldhash does).
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ (p >> 64) as u64
}

/// A hash of a token's bytes, read as whole words (the first and last
/// eight, overlapping when shorter than 16), not byte by byte. Equal hashes
/// are compared by bytes, so only its spread matters.
#[inline(always)]
fn hash(b: &[u8]) -> u64 {
    let n = b.len();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("eight"));
    let half = |at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().expect("four")));
    let (mut first, last) = match n {
        8.. => (word(0), word(n - 8)),
        4.. => (half(0), half(n - 4)),
        1.. => (
            u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
            0,
        ),
        0 => (0, 0),
    };
    let mut at = 8;
    while at + 8 < n {
        first = fold(first ^ word(at), K2);
        at += 8;
    }
    fold(first ^ K0, last ^ K1 ^ n as u64)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{RANKS, SHORT};

    fn encoders() -> [&'static bpe_openai::byte_pair_encoding::BytePairEncoding; 2] {
        [
            &bpe_openai::o200k_base().bpe,
            &bpe_openai::cl100k_base().bpe,
        ]
    }

    #[test]
    fn every_token_is_found_by_its_bytes() {
        for (ranks, bpe) in RANKS.iter().zip(encoders()) {
            for id in 0..bpe.num_tokens() as u32 {
                assert_eq!(ranks.rank(bpe.token_bytes(id)), Some(id));
            }
        }
    }

    #[test]
    fn pieces_of_every_length_count_as_bpe_openai() {
        for (ranks, bpe) in RANKS.iter().zip(encoders()) {
            for unit in [
                "ab",
                "-=",
                " x",
                "é",
                "\u{1F600}",
                "0",
                "zq",
                "the ",
                "\0\u{7f}",
            ] {
                for n in 0..=SHORT * 2 {
                    let text: Vec<u8> = unit.bytes().cycle().take(n).collect();
                    assert_eq!(ranks.count(&text), bpe.count(&text), "{text:?}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn a_piece_counts_as_bpe_openai(piece in prop_oneof![
            ".{0,20}",
            "[ -~]{0,30}",
            " ?[a-zA-Z]{1,24}",
            "[\u{400}-\u{4FF}\u{4E00}-\u{4E2F}\u{1F600}-\u{1F60F}]{1,12}",
            "[-=*_ /]{1,70}",
        ]) {
            for (ranks, bpe) in RANKS.iter().zip(encoders()) {
                prop_assert_eq!(ranks.count(piece.as_bytes()), bpe.count(piece.as_bytes()));
            }
        }

        #[test]
        fn any_bytes_count_as_bpe_openai(piece in prop::collection::vec(any::<u8>(), 0..80)) {
            for (ranks, bpe) in RANKS.iter().zip(encoders()) {
                prop_assert_eq!(ranks.count(&piece), bpe.count(&piece));
            }
        }

        #[test]
        fn not_a_token_is_not_found(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            for (ranks, bpe) in RANKS.iter().zip(encoders()) {
                if let Some(id) = ranks.rank(&bytes) {
                    prop_assert_eq!(bpe.token_bytes(id), bytes.as_slice());
                }
            }
        }
    }
}
