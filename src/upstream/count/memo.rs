//! The provider's counts already known, by what was asked.
//!
//! An agent asks for the count of its thread every turn, and a count that
//! did not change is not worth a round trip (nor a request against the
//! provider's rate limit). The key is the SHA-256 of everything the answer
//! depends on: the endpoint, the model and the exact body bytes. A thread
//! that grew is another body, so it is asked again: the provider's count of
//! the new messages cannot be derived from the old answer.
//!
//! A plain map behind a mutex, emptied when full: a lookup is a hash and a
//! map access, far below the cost of the call it saves, and a process that
//! sees more than [`MAX_ENTRIES`] distinct threads re-asks them once.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// Most counts kept (32 bytes of key and 8 of count each: under 1 MB).
pub const MAX_ENTRIES: usize = 10_000;

pub type Key = [u8; 32];

/// The key of one count request.
pub fn key(url: &str, model: &str, body: &[u8]) -> Key {
    let mut h = Sha256::new();
    // Length-prefixed, so no two different triples hash the same bytes.
    for part in [url.as_bytes(), model.as_bytes(), body] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

#[derive(Debug, Default)]
pub struct Memo {
    counts: Mutex<HashMap<Key, u64>>,
}

impl Memo {
    pub fn get(&self, key: &Key) -> Option<u64> {
        self.lock().get(key).copied()
    }

    pub fn put(&self, key: Key, tokens: u64) {
        let mut counts = self.lock();
        if counts.len() >= MAX_ENTRIES && !counts.contains_key(&key) {
            counts.clear();
        }
        counts.insert(key, tokens);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    /// A poisoned lock still holds valid counts: each write is one insert.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, u64>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_every_part() {
        let k = key("u", "m", b"{}");
        assert_ne!(k, key("u2", "m", b"{}"));
        assert_ne!(k, key("u", "m2", b"{}"));
        assert_ne!(k, key("u", "m", b"{ }"));
        // The parts cannot slide into each other.
        assert_ne!(key("ab", "c", b""), key("a", "bc", b""));
        assert_eq!(k, key("u", "m", b"{}"));
    }

    #[test]
    fn stays_bounded() {
        let memo = Memo::default();
        for i in 0..MAX_ENTRIES as u64 {
            memo.put(key("u", "m", &i.to_le_bytes()), i);
        }
        assert_eq!(memo.len(), MAX_ENTRIES);
        // Rewriting a known key does not empty it...
        memo.put(key("u", "m", &0u64.to_le_bytes()), 7);
        assert_eq!(memo.len(), MAX_ENTRIES);
        assert_eq!(memo.get(&key("u", "m", &0u64.to_le_bytes())), Some(7));
        // ...one more does, and is kept.
        let last = key("u", "m", b"one more");
        memo.put(last, 42);
        assert_eq!(memo.len(), 1);
        assert_eq!(memo.get(&last), Some(42));
    }
}
