//! How long a conversation has been idle, for the cold-cache rule
//! (`provider_cache_ttl`, docs/compression.md): the age of its latest turn
//! in the ledger, which every replica shares, and the cache lifetime the
//! request asks the provider for.

use std::time::Duration;

use serde_json::Value;

use super::Proxy;
use crate::policy::Profile;
use crate::policy::duration::Period;
use crate::thread::WireFormat;

impl Proxy {
    /// Since `conversation`'s latest turn on record (its answer's end, by
    /// the database's clock); None without one, with the rule off, or with
    /// a cache that fails (which costs only the rule, this turn).
    pub(super) async fn idle(&self, conversation: &str, profile: &Profile) -> Option<Duration> {
        if profile.provider_cache_ttl.0.is_zero() || profile.precompute_at <= 0.0 {
            return None;
        }
        let cache = self.compressor.summarizer().cache();
        match cache.idle_secs(conversation).await {
            Ok(secs) => secs.map(|s| Duration::from_secs_f64(s.max(0.0))),
            Err(e) => {
                tracing::warn!(backend = cache.backend(), error = %e, "the ledger could not say how long the conversation was idle");
                None
            }
        }
    }
}

/// The profile's cache lifetime, an hour where an Anthropic request marks a
/// block `cache_control: {ttl: "1h"}` (its system prompt, tools or
/// messages): then the provider keeps the prefix that long.
pub(super) fn lifetime(format: WireFormat, json: &Value, profile: &mut Profile) {
    if format == WireFormat::Anthropic && asks_hour(json) {
        profile.provider_cache_ttl = profile.provider_cache_ttl.max(Period::HOUR);
    }
}

/// A block of the system prompt, the tools or a message's content asks
/// for the hour-long cache (where Anthropic reads `cache_control`).
fn asks_hour(json: &Value) -> bool {
    fn blocks(v: Option<&Value>) -> impl Iterator<Item = &Value> {
        v.and_then(Value::as_array).into_iter().flatten()
    }
    let messages = blocks(json.get("messages")).flat_map(|m| blocks(m.get("content")));
    blocks(json.get("system"))
        .chain(blocks(json.get("tools")))
        .chain(messages)
        .any(|b| b.pointer("/cache_control/ttl").and_then(Value::as_str) == Some("1h"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_hour_where_a_block_asks_for_it_on_anthropic() {
        let hour = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]});
        let five = json!({"system": [{"type": "text", "text": "be brief",
            "cache_control": {"type": "ephemeral"}}], "messages": []});
        let ttl = |format, json: &Value| {
            let mut p = Profile::default();
            lifetime(format, json, &mut p);
            p.provider_cache_ttl
        };
        assert_eq!(ttl(WireFormat::Anthropic, &hour), Period::HOUR);
        assert_eq!(ttl(WireFormat::Anthropic, &five), Period::CACHE_TTL);
        assert_eq!(ttl(WireFormat::OpenAi, &hour), Period::CACHE_TTL);
        let tools =
            json!({"tools": [{"name": "t", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]});
        assert_eq!(ttl(WireFormat::Anthropic, &tools), Period::HOUR);
    }
}
