//! What the providers billed for the proxy's answers, as they said.

use super::{Metrics, add};

impl Metrics {
    /// One answer's bill: tokens by kind (`input`, `cache_read`,
    /// `cache_write`, `output`); a kind of 0 adds nothing.
    pub fn provider_billed(&self, provider: &'static str, kinds: [(&'static str, u64); 4]) {
        for (kind, n) in kinds.into_iter().filter(|&(_, n)| n > 0) {
            add(
                &self.0.f.provider_tokens,
                [("provider", provider), ("kind", kind)],
                n,
            );
        }
    }

    /// `n` items the provider dropped for `reason` (a fixed word).
    pub fn provider_dropped(&self, provider: &'static str, reason: &'static str, n: u64) {
        let labels = [("provider", provider), ("reason", reason)];
        add(&self.0.f.provider_dropped, labels, n);
    }
}
