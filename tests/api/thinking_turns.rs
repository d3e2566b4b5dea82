//! Preserved thinking across turns, as the proxy runs: an agent resends its
//! whole history every turn, condense compresses it in continuity mode
//! (summaries reused from a real SQLite cache), and an emulated Anthropic
//! provider checks every forwarded request the way the API does, then
//! answers with a thinking block signed over the prefix it saw (after any
//! `drop_block` drops). No turn may be refused, and between two summaries the
//! forwarded prefix stays byte-identical (the provider's prompt cache hits).

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::binding::{is_thinking, parse, prefix};
use condense::cache::{Cache, CacheOptions};
use condense::compress::{Compression, Compressor};
use condense::policy::Profile;
use condense::summarize::{Strategy as Summarizer, SummaryService};
use condense::tokens::{Encoders, ModelRegistry};

/// The provider's check of a forwarded thread: the messages as the model
/// reads them (invalid blocks dropped when the request opted in), or the
/// error the API answers.
fn provider(forward: &[Value], drop_block: bool) -> Result<Vec<Value>, String> {
    let mut seen: Vec<Value> = Vec::new();
    let mut dropped_final = false;
    for (i, m) in forward.iter().enumerate() {
        let mut m = m.clone();
        if let Some(blocks) = m["content"].as_array_mut() {
            let valid = prefix(&seen);
            let before = blocks.len();
            for b in blocks.iter().filter(|b| is_thinking(b)) {
                if b["signature"].as_str() != Some(&valid) && !drop_block {
                    return Err(format!(
                        "messages.{i}: The block is bound to a different conversation"
                    ));
                }
            }
            blocks.retain(|b| !is_thinking(b) || b["signature"].as_str() == Some(&valid));
            dropped_final = blocks.len() < before;
        }
        seen.push(m);
    }
    // An active loop's final assistant message starts with its thinking.
    let n = seen.len();
    let final_loop = n >= 2 && seen[n - 1]["content"][0]["type"] == "tool_result";
    if final_loop && !is_thinking(&forward[n - 2]["content"][0]) {
        return Err("a final assistant message must start with a thinking block".into());
    }
    if final_loop && dropped_final && !drop_block {
        unreachable!("drops happen only with drop_block");
    }
    Ok(seen)
}

async fn compressor(dir: &tempfile::TempDir) -> Compressor {
    let url = format!("sqlite://{}", dir.path().join("cache.db").display());
    let opts = CacheOptions {
        max_connections: 2,
        acquire_timeout: Duration::from_secs(60),
        ttl: Duration::from_secs(3600),
        max_rows: 10_000,
        claim_lease: Duration::from_secs(60),
    };
    let cache = Cache::connect(&url, opts).await.unwrap();
    Compressor::new(
        Arc::new(ModelRegistry::embedded()),
        "gpt-4o",
        Encoders::global(),
        Arc::new(SummaryService::new(None, cache)),
    )
}

/// One session: `steps` tool turns (each result `sizes[k]` words), a new
/// user task every `task_every` turns. Returns the number of compressed turns.
async fn session(profile: Profile, sizes: &[usize], task_every: usize) -> Result<usize, String> {
    let dir = tempfile::tempdir().unwrap();
    let c = compressor(&dir).await;
    let mut history = vec![json!({"role": "user", "content": "start the task"})];
    let (mut compressed, mut last): (usize, Option<(String, Vec<Value>)>) = (0, None);
    for (k, size) in sizes.iter().enumerate() {
        let t = parse(&history);
        let out = c
            .run(Compression {
                continuity: true,
                strategy: Summarizer::Heuristic,
                ..Compression::new(t, profile.clone())
            })
            .await
            .map_err(|e| format!("turn {k}: {e}"))?;
        let forward: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
        compressed += usize::from(out.compressed);
        let seen =
            provider(&forward, out.thinking_drop_block).map_err(|e| format!("turn {k}: {e}"))?;
        // Between summaries, the previous forward is a prefix of this one.
        let summary = out.summary.as_ref().map(|s| s.content.clone()).or_else(|| {
            forward
                .first()
                .and_then(|m| m["content"].as_str())
                .filter(|s| s.starts_with("[Context Summary"))
                .map(str::to_string)
        });
        if let (Some((s, prev)), Some(now)) = (&last, &summary)
            && s == now
            && forward.get(..prev.len()) != Some(prev.as_slice())
        {
            return Err(format!(
                "turn {k}: same summary, but the forwarded prefix changed"
            ));
        }
        last = summary.map(|s| (s, forward.clone()));
        // The provider answers what it read: thinking signed over it, then
        // a call (its result follows), or at a task's end a text answer
        // (and the user's next task follows).
        let thinking = json!({"type": "thinking", "thinking": format!("step {k}"), "signature": prefix(&seen)});
        if task_every > 0 && k % task_every == task_every - 1 {
            history.push(json!({"role": "assistant", "content": [thinking, {"type": "text", "text": "done"}]}));
            history.push(json!({"role": "user", "content": format!("next task {k}")}));
            continue;
        }
        let id = format!("toolu_{k}");
        history.push(json!({"role": "assistant", "content": [thinking, {"type": "tool_use", "id": id, "name": "bash", "input": {"cmd": k}}]}));
        history.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "word ".repeat(*size)}]}));
    }
    Ok(compressed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn no_turn_is_refused_and_the_prefix_holds(
        sizes in prop::collection::vec(20usize..900, 12..24),
        task_every in prop::sample::select(vec![0usize, 3, 5]),
        window in prop::sample::select(vec![6_000u64, 9_000, 200_000]),
        max_messages in 6u64..14,
    ) {
        let profile = Profile {
            max_messages_before_summary: max_messages,
            min_recent_messages: 4,
            context_window: Some(window),
            response_reserve: 500,
            max_summary_tokens: 400,
            ..Profile::default()
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let done = rt.block_on(session(profile, &sizes, task_every));
        prop_assert!(done.is_ok(), "{}", done.unwrap_err());
    }
}

/// The session compresses at all: a small window forces summaries inside
/// the tool loop, and continuity reuses them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_loop_is_compressed_and_never_refused() {
    let profile = Profile {
        min_recent_messages: 4,
        context_window: Some(6_000),
        response_reserve: 500,
        max_summary_tokens: 400,
        ..Profile::default()
    };
    let compressed = session(profile, &[400; 24], 0).await.unwrap();
    assert!(compressed >= 10, "{compressed} of 24 turns compressed");
}
