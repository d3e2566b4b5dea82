//! OpenAI's own compaction: `POST {base}/responses/compact` turns the items
//! of a span into one encrypted `compaction` item that the Responses API
//! accepts in their place, and after which it keeps later reasoning valid.
//! The call carries the items and the model, never `instructions` (OpenAI's
//! guidance: they would be folded into the item). Every compaction has a
//! [`CompactTarget`]: who is asked, with which model and credentials.

use std::time::Instant;

use serde_json::{Value, json};

use super::chat::{Kind, UpstreamError, transport};
use super::{Called, Secret, Upstream, answer, excerpt};

/// Who compacts, with which model and credentials: on `/v1/compress` the
/// configured upstream with the operator's key ([`Upstream::compact_target`]);
/// on the proxy the conversation's own OpenAI provider with the client's
/// credentials and model (an item is encrypted for the organization that
/// asked, so the client's own provider must write it), asked through the
/// proxy's client ([`Upstream::provider`]). The credentials are never part
/// of a summary's key, never printed.
#[derive(Clone)]
pub struct CompactTarget {
    /// The client that asks, and its base URL (`.../v1`).
    pub via: Upstream,
    /// The model that compacts.
    pub model: String,
    /// The credential headers (`Authorization`, Azure's `api-key`), as sent.
    pub headers: Vec<(String, Secret)>,
}

impl std::fmt::Debug for CompactTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("CompactTarget")
            .field("via", &self.via)
            .field("model", &self.model)
            .field("headers", &names)
            .finish()
    }
}

impl CompactTarget {
    /// One compaction of `input` (Responses items, oldest first), retried
    /// like a completion by the client's policy; only attempts hold a
    /// place under its cap.
    pub async fn compact(&self, input: &[Value]) -> Called<Compacted> {
        let started = Instant::now();
        let once = || self.compact_once(input);
        let (result, attempts) = self.via.config.retry.run(once).await;
        Called {
            result,
            attempts,
            elapsed: started.elapsed(),
        }
    }

    async fn compact_once(&self, input: &[Value]) -> Result<Compacted, UpstreamError> {
        let usage = |r: &Compacted| (r.prompt_tokens, r.completion_tokens);
        self.via.attempt(self.post(input), usage).await
    }

    async fn post(&self, input: &[Value]) -> Result<Compacted, UpstreamError> {
        let up = &self.via;
        let base = up.config.base_url.as_str().trim_end_matches('/');
        let body = json!({"model": self.model, "input": input});
        let builder = up.http.post(format!("{base}/responses/compact"));
        let builder = self.headers.iter().fold(builder, |b, (name, value)| {
            let mut v = reqwest::header::HeaderValue::from_str(value.expose());
            if let Ok(v) = &mut v {
                v.set_sensitive(true);
            }
            match v {
                Ok(v) => b.header(name.as_str(), v),
                Err(_) => b,
            }
        });
        let res = builder.json(&body).send().await.map_err(transport)?;
        let status = res.status();
        if !status.is_success() {
            let retry_after = answer::retry_after(res.headers());
            let body = answer::error_text(res).await;
            return Err(UpstreamError::Status {
                status: status.as_u16(),
                retry_after,
                excerpt: excerpt(&self.scrub(&body), &up.scrubber),
            });
        }
        parse(&answer::read_capped(res, answer::MAX_ANSWER_BYTES).await?)
    }

    /// `text` with the credentials blanked out (each header's value, and
    /// its token without the `Bearer ` scheme).
    fn scrub(&self, text: &str) -> String {
        let mut secrets: Vec<&str> = Vec::new();
        for (_, v) in &self.headers {
            let v = v.expose();
            secrets.push(v);
            if let Some((_, token)) = v.split_once(' ') {
                secrets.push(token.trim());
            }
        }
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets
            .iter()
            .fold(text.to_string(), |t, s| t.replace(s, "[redacted]"))
    }
}

/// What the provider returned: its compaction item, byte for byte as JSON.
#[derive(Debug, Clone)]
pub struct Compacted {
    pub item: Value,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Upstream {
    /// This upstream as the writer of `model`'s compactions, with the
    /// operator's key; None for an Anthropic one (it offers no
    /// `/responses/compact`: the plan never asks it).
    pub fn compact_target(&self, model: &str) -> Option<CompactTarget> {
        let c = &self.config;
        if c.kind != Kind::OpenAi {
            return None;
        }
        let key = (!c.api_key.is_empty()).then(|| {
            let bearer = Secret::new(format!("Bearer {}", c.api_key.expose()));
            ("authorization".to_string(), bearer)
        });
        Some(CompactTarget {
            via: self.clone(),
            model: model.to_string(),
            headers: key.into_iter().collect(),
        })
    }
}

/// The compaction item of an answer (its `output`'s last `compaction`
/// item, which must carry `encrypted_content`), and its usage.
pub(super) fn parse(body: &[u8]) -> Result<Compacted, UpstreamError> {
    let garbage = |what: &str| UpstreamError::Garbage(what.into());
    let v: Value = serde_json::from_slice(body).map_err(|e| garbage(&e.to_string()))?;
    let output = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| garbage("no `output` in the answer"))?;
    let item = output
        .iter()
        .rev()
        .find(|i| i.get("type").and_then(Value::as_str) == Some("compaction"))
        .ok_or(UpstreamError::Empty)?;
    let sealed = item.get("encrypted_content").and_then(Value::as_str);
    if sealed.is_none_or(str::is_empty) {
        return Err(garbage(
            "the compaction item carries no `encrypted_content`",
        ));
    }
    let usage = |k: &str| {
        let n = v.get("usage").and_then(|u| u.get(k));
        n.and_then(Value::as_u64).unwrap_or(0)
    };
    Ok(Compacted {
        item: item.clone(),
        prompt_tokens: usage("input_tokens"),
        completion_tokens: usage("output_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_compaction_item_and_usage() {
        let body = br#"{"object":"response.compaction","output":[
            {"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
            {"type":"compaction","id":"cmp_1","encrypted_content":"gAAA"}],
            "usage":{"input_tokens":40,"output_tokens":7}}"#;
        let c = parse(body).unwrap();
        assert_eq!(c.item["id"], "cmp_1");
        assert_eq!((c.prompt_tokens, c.completion_tokens), (40, 7));
        assert!(matches!(
            parse(br#"{"output":[]}"#),
            Err(UpstreamError::Empty)
        ));
        assert!(matches!(
            parse(br#"{"output":[{"type":"compaction","encrypted_content":""}]}"#),
            Err(UpstreamError::Garbage(_))
        ));
        assert!(matches!(parse(b"{}"), Err(UpstreamError::Garbage(_))));
    }

    #[test]
    fn a_target_hides_the_clients_credentials() {
        let base = reqwest::Url::parse("http://provider/v1").unwrap();
        let t = CompactTarget {
            via: Upstream::provider(base, reqwest::Client::new()),
            model: "gpt-5".into(),
            headers: vec![("authorization".into(), Secret::new("Bearer sk-client-1"))],
        };
        let scrubbed = t.scrub("bad key sk-client-1 (Bearer sk-client-1)");
        assert!(!scrubbed.contains("sk-client-1"), "{scrubbed}");
        assert!(!format!("{t:?}").contains("sk-client-1"));
    }
}
