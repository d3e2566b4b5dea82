//! A bounded in-process memo of per-message token counts.
//!
//! Agents send the same history every turn with one or two new messages.
//! Tokenizing is most of the cost of a request, and a message's count
//! depends only on the encoding and the message's contents, so the count
//! of every message tokenized recently is kept under a 128-bit hash of
//! exactly those, and a turn pays only for its new messages.
//! The hash is SipHash-1-3 with 128-bit output and a key drawn at start-up:
//! a wrong hit is as likely as a random 128-bit collision (never, in
//! practice), and a client cannot craft one without the key. Hashing is one
//! pass, much faster than tokenizing the same bytes.
//!
//! The memo is bounded: each shard keeps two generations and drops the older
//! one when the newer is full, so a message used every turn stays, and
//! memory is at most `2 × capacity` entries (about 24 bytes each).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::Mutex;

use siphasher::sip128::{Hasher128, SipHasher13};

/// Entries per memo (both generations of all shards together, at most twice this).
pub const CAPACITY: usize = 262_144;
const SHARDS: usize = 16;

/// Messages with fewer text bytes than this are counted, not memoized:
/// counting them costs about what hashing does.
pub const MIN_BYTES: usize = 64;

#[derive(Default)]
struct Shard {
    current: HashMap<u128, u32>,
    previous: HashMap<u128, u32>,
}

pub struct Memo {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
    keys: (u64, u64),
}

impl Default for Memo {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Memo {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            per_shard: (capacity / SHARDS).max(1),
            // Random per process (std's RandomState is seeded from the OS).
            keys: (
                RandomState::new().hash_one(0u8),
                RandomState::new().hash_one(1u8),
            ),
        }
    }

    /// The 128-bit key of `value`.
    pub fn key(&self, value: &impl Hash) -> u128 {
        let mut h = SipHasher13::new_with_keys(self.keys.0, self.keys.1);
        value.hash(&mut h);
        h.finish128().as_u128()
    }

    fn shard(&self, key: u128) -> &Mutex<Shard> {
        &self.shards[(key as usize) % SHARDS]
    }

    /// The memoized count of `key`, or `count()`'s, remembered.
    pub fn get_or(&self, key: u128, count: impl FnOnce() -> usize) -> usize {
        if let Some(n) = self.get(key) {
            return n;
        }
        let n = count();
        // A count made after its request was cancelled is wrong (nothing
        // was tokenized): never remember it. Counts beyond u32 (a 16 GiB
        // message) are not worth remembering.
        if super::cancel::cancelled() {
            return n;
        }
        if let Ok(small) = u32::try_from(n) {
            self.insert(key, small);
        }
        n
    }

    fn get(&self, key: u128) -> Option<usize> {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&n) = shard.current.get(&key) {
            return Some(n as usize);
        }
        // Used again: it moves to the newer generation.
        let n = shard.previous.remove(&key)?;
        self.put(&mut shard, key, n);
        Some(n as usize)
    }

    fn insert(&self, key: u128, n: u32) {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        self.put(&mut shard, key, n);
    }

    fn put(&self, shard: &mut Shard, key: u128, n: u32) {
        if shard.current.len() >= self.per_shard {
            shard.previous = std::mem::take(&mut shard.current);
        }
        shard.current.insert(key, n);
    }

    /// Entries held now (both generations).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(|p| p.into_inner());
                s.current.len() + s.previous.len()
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_stays_bounded() {
        let memo = Memo::with_capacity(SHARDS * 4);
        let mut calls = 0;
        let k = memo.key(&"a message");
        assert_eq!(
            memo.get_or(k, || {
                calls += 1;
                7
            }),
            7
        );
        assert_eq!(
            memo.get_or(k, || {
                calls += 1;
                8
            }),
            7
        );
        assert_eq!(calls, 1);
        for i in 0..10_000 {
            memo.get_or(memo.key(&i), || i);
        }
        assert!(memo.len() <= 2 * SHARDS * 4, "{}", memo.len());
        assert_ne!(memo.key(&"a"), memo.key(&"b"));
    }
}
