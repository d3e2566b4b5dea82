//! A bounded memo of counts (per message: agents resend their history every
//! turn; and the provider's), keyed by a keyed SipHash-1-3 of 128 bits, so a
//! client cannot craft a collision. Each shard keeps two generations. A
//! message's record ([`Counted`]) is kept beside the counts, weighed in
//! counts by its size ([`Weigh`]): the memo's bound is in bytes, whatever it holds.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Arc, Mutex};

use siphasher::sip128::{Hasher128, SipHasher13};

use crate::thread::Outline;

/// Entries per memo, in counts' weight (both generations of all shards
/// together, at most twice this, and a record per shard).
pub const CAPACITY: usize = 262_144;

/// Bytes a count takes in a shard's map (its key, its value, their alignment).
const ENTRY_BYTES: usize = 32;

/// What an entry weighs, in counts ([`ENTRY_BYTES`] each).
pub trait Weigh {
    fn weight(&self) -> usize;
}

impl Weigh for u64 {
    fn weight(&self) -> usize {
        1
    }
}

/// A message recognised from its JSON text (`thread::Seen`): what the checks read
/// of it, and its count.
#[derive(Debug)]
pub struct Counted {
    pub outline: Outline,
    /// Its tokens, uncalibrated, its overhead included.
    pub tokens: usize,
}

impl AsRef<Outline> for Arc<Counted> {
    fn as_ref(&self) -> &Outline {
        &self.outline
    }
}

/// What the count memo keeps under a key: a message's count (keyed by its
/// parts), or its record (keyed by its JSON text).
#[derive(Debug, Clone)]
pub enum Memoized {
    Count(u64),
    Counted(Arc<Counted>),
}

impl Weigh for Memoized {
    fn weight(&self) -> usize {
        match self {
            Memoized::Count(_) => 1,
            Memoized::Counted(c) => 1 + c.outline.size().div_ceil(ENTRY_BYTES),
        }
    }
}
const SHARDS: usize = 16;

/// Messages with fewer text bytes are counted, not memoized (hashing costs as much).
pub const MIN_BYTES: usize = 64;

struct Shard<V> {
    // (u128, u64) is no larger than (u128, u32): u128 aligns to 16.
    current: HashMap<u128, V>,
    previous: HashMap<u128, V>,
    /// What `current` weighs.
    weight: usize,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Self {
            current: HashMap::new(),
            previous: HashMap::new(),
            weight: 0,
        }
    }
}

pub struct Memo<V = u64> {
    shards: Vec<Mutex<Shard<V>>>,
    per_shard: usize,
    keys: (u64, u64),
}

impl<V: Clone + Weigh> Default for Memo<V> {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl<V: Clone + Weigh> Memo<V> {
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

    fn shard(&self, key: u128) -> &Mutex<Shard<V>> {
        &self.shards[(key as usize) % SHARDS]
    }

    /// The memoized value of `key`, or `make()`'s, remembered.
    pub fn get_or(&self, key: u128, make: impl FnOnce() -> V) -> V {
        if let Some(v) = self.get(key) {
            return v;
        }
        let v = make();
        self.keep(key, v.clone());
        v
    }

    pub fn get(&self, key: u128) -> Option<V> {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = shard.current.get(&key) {
            return Some(v.clone());
        }
        // Used again: it moves to the newer generation.
        let v = shard.previous.remove(&key)?;
        self.put(&mut shard, key, v.clone());
        Some(v)
    }

    pub fn insert(&self, key: u128, v: V) {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        self.put(&mut shard, key, v);
    }

    /// [`Memo::insert`], unless the request is gone: a count made after its
    /// request was cancelled is wrong.
    pub fn keep(&self, key: u128, v: V) {
        if !super::cancel::cancelled() {
            self.insert(key, v);
        }
    }

    fn put(&self, shard: &mut Shard<V>, key: u128, v: V) {
        if shard.weight >= self.per_shard {
            shard.previous = std::mem::take(&mut shard.current);
            shard.weight = 0;
        }
        shard.weight += v.weight();
        shard.current.insert(key, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries held now (both generations).
    fn len<V>(memo: &Memo<V>) -> usize {
        let len = |s: &Mutex<Shard<V>>| {
            let s = s.lock().unwrap();
            s.current.len() + s.previous.len()
        };
        memo.shards.iter().map(len).sum()
    }

    #[test]
    fn remembers_and_stays_bounded() {
        let memo = Memo::<u64>::with_capacity(SHARDS * 4);
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
            memo.get_or(memo.key(&i), || i as u64);
        }
        assert!(len(&memo) <= 2 * SHARDS * 4, "{}", len(&memo));
        assert_ne!(memo.key(&"a"), memo.key(&"b"));
    }

    /// What the memo's entries weigh now (both generations).
    fn weight<V: Weigh>(memo: &Memo<V>) -> usize {
        let weight = |s: &Mutex<Shard<V>>| {
            let s = s.lock().unwrap();
            s.current
                .values()
                .chain(s.previous.values())
                .map(V::weight)
                .sum::<usize>()
        };
        memo.shards.iter().map(weight).sum()
    }

    #[test]
    fn records_weigh_their_bytes_and_stay_bounded() {
        use crate::thread::{Message, Part, Role, ToolCall, WireFormat};
        let call = ToolCall {
            id: "x".repeat(1000),
            name: "f".into(),
            arguments: "{}".into(),
            pointer: "/tool_calls/0/id".into(),
        };
        let message = Message {
            role: Role::Assistant,
            name: None,
            parts: vec![Part::ToolCall(call)],
            plain: false,
            iteration: None,
            raw: serde_json::Value::Null,
        };
        let outline = Outline::of(&message, WireFormat::OpenAi);
        let record = Memoized::Counted(Arc::new(Counted { outline, tokens: 9 }));
        let heavy = record.weight();
        assert!(heavy > 1000 / ENTRY_BYTES, "{heavy}");
        let capacity = SHARDS * 64;
        let memo = Memo::<Memoized>::with_capacity(capacity);
        for i in 0..10_000u32 {
            memo.insert(memo.key(&i), record.clone());
            memo.insert(memo.key(&(i, 1)), Memoized::Count(1));
        }
        // Two generations of each shard, the newer one past its share by at most one record.
        assert!(
            weight(&memo) <= 2 * capacity + SHARDS * heavy,
            "{} > {}",
            weight(&memo),
            2 * capacity + SHARDS * heavy
        );
        assert!(
            len(&memo) < 2 * capacity,
            "records take the room of their bytes"
        );
    }
}
