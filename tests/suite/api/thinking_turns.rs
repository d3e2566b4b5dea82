//! Preserved thinking across turns, as the proxy runs: an agent resends its
//! whole history every turn, condense compresses it in continuity mode
//! (summaries reused from a real SQLite cache), and an emulated Anthropic
//! provider checks every forwarded request the way the API does, then
//! answers with a thinking block signed over the prefix it saw (after any
//! `drop_block` drops). No turn may be refused, and between two summaries the
//! forwarded prefix stays byte-identical (the provider's prompt cache hits).
//! Mid-session condense may forget the session (a restart without its cache,
//! another profile) or be bypassed (shadow mode switched on).

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::binding::{is_thinking, parse, prefix};
use condense::cache::{Cache, CacheOptions};
use condense::compress::{AppliedEdit, Compression, Compressor, Meter, carries_thinking};
use condense::policy::{ClearSettings, ClearTrigger, Profile};
use condense::summarize::{Strategy as Summarizer, SummaryService};
use condense::tokens::{Encoders, ModelRegistry};

/// The provider's check of a forwarded thread: the messages as the model
/// reads them (invalid blocks dropped when the request opted in), or the
/// error the API answers.
fn provider(forward: &[Value], drop_block: bool, thinking: bool) -> Result<Vec<Value>, String> {
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
    if thinking && final_loop && !is_thinking(&forward[n - 2]["content"][0]) {
        return Err("a final assistant message must start with a thinking block".into());
    }
    if final_loop && dropped_final {
        // Waived: `drop_block` dropped the block the rule asks for.
        return Ok(seen);
    }
    Ok(seen)
}

async fn compressor(dir: &tempfile::TempDir, cache_off: bool) -> Compressor {
    let url = match cache_off {
        true => "off".to_string(),
        false => format!("sqlite://{}", dir.path().join("cache.db").display()),
    };
    let opts = CacheOptions {
        max_connections: 2,
        acquire_timeout: Duration::from_secs(60),
        ttl: Duration::from_secs(3600),
        max_rows: 10_000,
        claim_lease: Duration::from_secs(60),
    };
    let cache = Cache::connect(&url, opts).await.unwrap();
    let meter = Meter::new(
        Arc::new(ModelRegistry::embedded()),
        "gpt-4o",
        Encoders::global(),
    );
    Compressor::new(meter, Arc::new(SummaryService::new(None, cache)))
}

/// How the agent and the proxy in front of it behave.
#[derive(Debug, Clone, Default)]
struct Agent {
    /// Each tool result's size in words; one tool turn each.
    sizes: Vec<usize>,
    /// A new user task every this many turns (0: one long tool loop).
    task_every: usize,
    /// The summary cache is off.
    cache_off: bool,
    /// Turns before this one run in shadow mode (forwarded as sent).
    shadow_until: usize,
    /// A system message after every tool result (Claude Code's reminders).
    reminders: bool,
    /// The requests have thinking off: no block is required, and none may
    /// be forwarded stale (there is no `thinking` object to opt out in).
    thinking_off: bool,
    /// From this turn on, condense forgets or is bypassed.
    forget: Option<(usize, Forget)>,
}

/// How condense forgets a session, or is bypassed, mid-session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forget {
    /// A new compressor with an empty cache.
    Restart,
    /// Another profile (summaries are found under the one that wrote them).
    Profile,
    /// Shadow mode switched on.
    Shadow,
}

/// One session through the proxy's steps: compress in continuity mode,
/// forward (the compressed thread, or in shadow mode the thread as sent),
/// record the carried summary once forwarded, let the provider check and
/// answer. Returns the number of compressed turns forwarded.
async fn session(mut profile: Profile, agent: &Agent) -> Result<usize, String> {
    let (dir, fresh) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c = compressor(&dir, agent.cache_off).await;
    let task_every = agent.task_every;
    let mut history = vec![json!({"role": "user", "content": "start the task"})];
    let (mut compressed, mut last): (usize, Option<(String, Vec<Value>)>) = (0, None);
    for (k, size) in agent.sizes.iter().enumerate() {
        let forgotten = agent.forget.filter(|(at, _)| k >= *at).map(|(_, f)| f);
        if agent.forget.is_some_and(|(at, _)| k == at) {
            last = None;
            match forgotten {
                Some(Forget::Restart) => c = compressor(&fresh, agent.cache_off).await,
                Some(Forget::Profile) => {
                    profile.max_messages_before_summary += 3;
                    profile.min_recent_messages += 1;
                }
                _ => {}
            }
        }
        let t = parse(&history);
        // The proxy's check of a body sent on as it came (`proxy::prepare`).
        let unvouched = !agent.thinking_off && carries_thinking(&t);
        let out = c
            .run(Compression {
                continuity: true,
                strategy: Summarizer::Heuristic,
                thinking_required: !agent.thinking_off,
                ..Compression::new(t, profile.clone())
            })
            .await
            .map_err(|e| format!("turn {k}: {e}"))?;
        let shadow = k < agent.shadow_until || forgotten == Some(Forget::Shadow);
        let (forward, drop_block) = match shadow || !out.compressed {
            true => (history.clone(), unvouched),
            false => {
                if let Some(carried) = &out.carried {
                    c.mark_carried(carried).await;
                }
                let m = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
                (m, out.thinking_drop_block)
            }
        };
        compressed += usize::from(out.compressed && !shadow);
        if agent.thinking_off && drop_block {
            return Err(format!(
                "turn {k}: thinking is off, yet drop_block is asked for"
            ));
        }
        let seen = provider(&forward, drop_block, !agent.thinking_off)
            .map_err(|e| format!("turn {k}: {e}"))?;
        // Between summaries, the previous forward is a prefix of this one.
        let summary = out.summary.as_ref().map(|s| s.content.clone()).or_else(|| {
            forward
                .first()
                .and_then(|m| m["content"].as_str())
                .filter(|s| s.starts_with("[Context Summary"))
                .map(str::to_string)
        });
        // Clearing rewrites an older result each turn by design: the prefix
        // holds only between turns that cleared nothing.
        let cleared = out.applied_edits.iter().any(|e| {
            matches!(
                e,
                AppliedEdit::ClearToolUses { .. } | AppliedEdit::ClearThinking { .. }
            )
        });
        // Without a cache a summary is written anew each due turn: only
        // "never refused" is promised then.
        if let (Some((s, prev)), Some(now)) = (&last, &summary)
            && s == now
            && !cleared
            && !agent.cache_off
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
        if agent.reminders {
            history.push(json!({"role": "system", "content": format!("reminder {k}")}));
        }
    }
    Ok(compressed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn no_turn_is_refused_and_the_prefix_holds(
        sizes in prop::collection::vec(20usize..900, 12..24),
        task_every in prop::sample::select(vec![0usize, 2, 3, 5]),
        window in prop::sample::select(vec![6_000u64, 9_000, 200_000]),
        max_messages in 6u64..14,
        min_recent in 3u64..6,
        cache_off in prop::bool::weighted(0.15),
        shadow_until in prop::sample::select(vec![0usize, 0, 6]),
        reminders: bool,
        clear in prop::bool::weighted(0.25),
        rules in prop::bool::weighted(0.25),
        thinking_off in prop::bool::weighted(0.25),
        forget in prop::option::weighted(0.4, (6usize..12, prop::sample::select(vec![Forget::Restart, Forget::Profile, Forget::Shadow]))),
    ) {
        let profile = Profile {
            max_messages_before_summary: max_messages,
            min_recent_messages: min_recent,
            context_window: Some(window),
            response_reserve: 500,
            max_summary_tokens: 400,
            clear: clear.then(|| ClearSettings {
                keep: 2,
                clear_at_least: 0,
                trigger: ClearTrigger { input_tokens: Some(1_500), tool_uses: None },
                ..ClearSettings::default()
            }),
            max_tool_result_chars: rules.then_some(800),
            ..Profile::default()
        };
        // With thinking off there is no opt-out: blocks condense forwards as
        // they came (shadow mode, nothing due) are the client's (not promised).
        let forget = forget.filter(|_| !thinking_off);
        let agent = Agent { sizes, task_every, cache_off, shadow_until, reminders, thinking_off, forget };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let done = rt.block_on(session(profile, &agent));
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
    let agent = Agent {
        sizes: vec![400; 24],
        ..Agent::default()
    };
    let compressed = session(profile, &agent).await.unwrap();
    assert!(compressed >= 10, "{compressed} of 24 turns compressed");
}

/// Claude Code's reminders after tool results: a summary whose span ends
/// on one is found again on the next turn, and cuts its turns as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_after_tool_results_keep_continuity() {
    let profile = Profile {
        max_messages_before_summary: 7,
        min_recent_messages: 4,
        context_window: Some(200_000),
        response_reserve: 500,
        max_summary_tokens: 400,
        ..Profile::default()
    };
    let agent = Agent {
        sizes: vec![20, 20, 20, 20, 20, 20, 20, 20, 20, 49, 894, 879],
        task_every: 5,
        reminders: true,
        ..Agent::default()
    };
    let compressed = session(profile, &agent).await.unwrap();
    assert!(compressed >= 5, "{compressed} of 12 turns compressed");
}

/// Once condense has summarized the session it forgets it (a restart
/// without its cache, another profile) or is bypassed (shadow mode): the
/// client's thinking is bound to what condense forwarded, yet no turn is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_condense_forgets_is_never_refused() {
    let profile = Profile {
        max_messages_before_summary: 6,
        min_recent_messages: 4,
        context_window: Some(200_000),
        response_reserve: 500,
        max_summary_tokens: 400,
        ..Profile::default()
    };
    for forget in [Forget::Restart, Forget::Profile, Forget::Shadow] {
        let agent = Agent {
            sizes: vec![200; 20],
            task_every: 4,
            forget: Some((11, forget)),
            ..Agent::default()
        };
        let compressed = session(profile.clone(), &agent)
            .await
            .unwrap_or_else(|e| panic!("{forget:?}: {e}"));
        assert!(compressed >= 3, "{forget:?}: {compressed} turns compressed");
    }
}
