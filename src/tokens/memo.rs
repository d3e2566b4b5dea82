//! A bounded memo of counts (per message: agents resend their history every
//! turn; and the provider's), keyed by a keyed SipHash-1-3 of 128 bits, so a
//! client cannot craft a collision. Each shard keeps two generations.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::Mutex;

use siphasher::sip128::{Hasher128, SipHasher13};

/// Entries per memo (both generations of all shards together, at most twice this).
pub const CAPACITY: usize = 262_144;
const SHARDS: usize = 16;

/// Messages with fewer text bytes are counted, not memoized (hashing costs as much).
pub const MIN_BYTES: usize = 64;

#[derive(Default)]
struct Shard {
    // (u128, u64) is no larger than (u128, u32): u128 aligns to 16.
    current: HashMap<u128, u64>,
    previous: HashMap<u128, u64>,
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
            return n as usize;
        }
        let n = count();
        // A count made after its request was cancelled is wrong.
        if !super::cancel::cancelled() {
            self.insert(key, n as u64);
        }
        n
    }

    pub fn get(&self, key: u128) -> Option<u64> {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&n) = shard.current.get(&key) {
            return Some(n);
        }
        // Used again: it moves to the newer generation.
        let n = shard.previous.remove(&key)?;
        self.put(&mut shard, key, n);
        Some(n)
    }

    pub fn insert(&self, key: u128, n: u64) {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        self.put(&mut shard, key, n);
    }

    fn put(&self, shard: &mut Shard, key: u128, n: u64) {
        if shard.current.len() >= self.per_shard {
            shard.previous = std::mem::take(&mut shard.current);
        }
        shard.current.insert(key, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries held now (both generations).
    fn len(memo: &Memo) -> usize {
        let len = |s: &Mutex<Shard>| {
            let s = s.lock().unwrap();
            s.current.len() + s.previous.len()
        };
        memo.shards.iter().map(len).sum()
    }

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
        assert!(len(&memo) <= 2 * SHARDS * 4, "{}", len(&memo));
        assert_ne!(memo.key(&"a"), memo.key(&"b"));
    }
}
