//! OpenAI's own compaction: `POST {base}/responses/compact` turns the items
//! of a span into one encrypted `compaction` item that the Responses API
//! accepts in their place, and after which it keeps later reasoning valid.
//! The call carries the items and the model, never `instructions` (OpenAI's
//! guidance: they would be folded into the item).

use std::time::Instant;

use serde_json::{Value, json};

use super::chat::{Kind, UpstreamError, transport};
use super::{Called, Upstream, answer, authorized, excerpt};

/// One compaction: the Responses items to compact, oldest first.
#[derive(Debug, Clone)]
pub struct CompactRequest {
    pub model: String,
    pub input: Vec<Value>,
}

/// What the provider returned: its compaction item, byte for byte as JSON.
#[derive(Debug, Clone)]
pub struct Compacted {
    pub item: Value,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Upstream {
    /// One compaction, retried like a completion; only attempts hold a
    /// place under the cap. Only an OpenAI upstream offers it.
    pub async fn compact(&self, req: &CompactRequest) -> Called<Compacted> {
        let started = Instant::now();
        let (result, attempts) = self.config.retry.run(|| self.compact_once(req)).await;
        Called {
            result,
            attempts,
            elapsed: started.elapsed(),
        }
    }

    async fn compact_once(&self, req: &CompactRequest) -> Result<Compacted, UpstreamError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| UpstreamError::Connect("client closed".into()))?;
        let c = &self.config;
        let attempt = self.metrics.upstream_attempt(c.kind.as_str());
        let result = match c.kind {
            Kind::OpenAi => self.post_compact(req).await,
            // Anthropic has no such endpoint: the plan never asks it.
            Kind::Anthropic => Err(UpstreamError::Garbage(
                "an Anthropic upstream offers no /responses/compact".into(),
            )),
        };
        match &result {
            Ok(r) => attempt.answered(r.prompt_tokens, r.completion_tokens),
            Err(e) => attempt.failed(e.label()),
        }
        result
    }

    async fn post_compact(&self, req: &CompactRequest) -> Result<Compacted, UpstreamError> {
        let c = &self.config;
        let base = c.base_url.as_str().trim_end_matches('/');
        let body = json!({"model": req.model, "input": req.input});
        let builder = self.http.post(format!("{base}/responses/compact"));
        let res = authorized(builder.json(&body), c.kind, &c.api_key)
            .send()
            .await
            .map_err(transport)?;
        let status = res.status();
        if !status.is_success() {
            let retry_after = answer::retry_after(res.headers());
            let body = answer::error_text(res).await;
            return Err(UpstreamError::Status {
                status: status.as_u16(),
                retry_after,
                excerpt: excerpt(&body, &self.scrubber),
            });
        }
        parse(&answer::read_capped(res, answer::MAX_ANSWER_BYTES).await?)
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
}
