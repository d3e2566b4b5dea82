//! Anthropic's preserved thinking, emulated: every thinking block of a
//! random thread is signed over its prefix (system, tools, the messages
//! before it, `cache_control` ignored), as the provider binds it. Whatever
//! compression or clearing does, the output must pass the provider's
//! prefix check: a block whose prefix changed is either gone or covered by
//! `thinking_drop_block`, and an active loop's final assistant message
//! still starts with its thinking unless `drop_block` lets the API drop it.
//! With thinking off the API ignores thinking, so no kept turn may be
//! thinking alone (it would reach the API empty) and none needs `drop_block`.
//! Mid-conversation system messages come out verbatim, in order.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Value, json};

use condense::compress::{Compression, Compressor};
use condense::policy::{ClearSettings, Profile};
use condense::summarize::Strategy as Summarizer;
use condense::thread;

use super::binding::{parse, prefix};
use crate::support::block_on;

static COMPRESSOR: LazyLock<Compressor> = LazyLock::new(Compressor::offline);

#[derive(Debug, Clone)]
enum Turn {
    User(String),
    /// An assistant turn with thinking that calls a tool, and its result.
    Tool(String, usize),
    /// An assistant turn with thinking that answers in text.
    Answer(String),
    /// An assistant turn of thinking alone.
    Thought(String),
    System(String),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        2 => "[a-z ]{1,30}".prop_map(Turn::User),
        4 => ("[a-z ]{1,30}", 10usize..3000).prop_map(|(t, n)| Turn::Tool(t, n)),
        2 => "[a-z ]{1,30}".prop_map(Turn::Answer),
        1 => "[a-z ]{1,30}".prop_map(Turn::Thought),
        1 => "[a-z ]{1,20}".prop_map(Turn::System),
    ]
}

/// The thread as the provider produced it; `active` ends it in a tool loop.
fn build(turns: &[Turn], active: bool) -> Vec<Value> {
    let mut m: Vec<Value> =
        vec![json!({"role": "user", "content": "start", "cache_control": {"type": "ephemeral"}})];
    let mut turns = turns.to_vec();
    if active {
        turns.push(Turn::Tool("last step".into(), 40));
    }
    for (k, t) in turns.iter().enumerate() {
        // A user turn must come before an assistant turn that follows one.
        let last_assistant = m.last().is_some_and(|v| v["role"] == "assistant");
        match t {
            Turn::User(s) => m.push(json!({"role": "user", "content": s})),
            Turn::System(s) => m.push(json!({"role": "system", "content": format!("SYSMARK {s}")})),
            Turn::Tool(s, _) | Turn::Answer(s) | Turn::Thought(s) => {
                if last_assistant {
                    m.push(json!({"role": "user", "content": "go on"}));
                }
                let sig = prefix(&m);
                let mut content =
                    vec![json!({"type": "thinking", "thinking": s, "signature": sig})];
                if let Turn::Tool(_, n) = t {
                    let id = format!("toolu_{k}");
                    content.push(
                        json!({"type": "tool_use", "id": id, "name": "bash", "input": {"cmd": s}}),
                    );
                    m.push(json!({"role": "assistant", "content": content}));
                    m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "x ".repeat(*n)}]}));
                } else {
                    if let Turn::Answer(_) = t {
                        content.push(json!({"type": "text", "text": s}));
                    }
                    m.push(json!({"role": "assistant", "content": content}));
                }
            }
        }
    }
    m
}

/// What the provider refuses with thinking off, when it ignores every
/// thinking block: a message left empty that is not the last.
fn empty_turns(messages: &[Value]) -> Result<(), String> {
    let last = messages.len().saturating_sub(1);
    for (i, m) in messages.iter().enumerate().take(last) {
        let empty = m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "thinking"));
        if empty {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
    }
    Ok(())
}

/// What the provider would refuse: `Err` names the first problem.
fn provider_accepts(messages: &[Value], drop_block: bool, active: bool) -> Result<(), String> {
    let mut invalid_final = false;
    for (i, m) in messages.iter().enumerate() {
        let Some(blocks) = m["content"].as_array() else {
            continue;
        };
        for (j, b) in blocks.iter().enumerate() {
            if b["type"] != "thinking" {
                continue;
            }
            assert_eq!(j, 0, "the generator puts thinking first");
            if b["signature"].as_str() != Some(&prefix(&messages[..i])) {
                if !drop_block {
                    return Err(format!(
                        "messages.{i}.content.{j}: The block is bound to a different conversation"
                    ));
                }
                invalid_final = i + 2 == messages.len();
            }
        }
    }
    if active {
        let last = &messages[messages.len() - 2];
        let starts = last["content"][0]["type"] == "thinking";
        if !(starts || (drop_block && invalid_final)) {
            return Err("a final assistant message must start with a thinking block".into());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn compressed_threads_pass_the_prefix_check(
        turns in prop::collection::vec(turn(), 1..24),
        active: bool,
        max_messages in 2u64..12,
        min_recent in 1u64..6,
        window in prop::sample::select(vec![3_000u64, 8_000, 200_000]),
        strategy in prop::sample::select(vec![Summarizer::Heuristic, Summarizer::Truncate, Summarizer::ClearToolResults]),
        clear: bool,
        force: bool,
        thinking in prop::bool::weighted(0.7),
    ) {
        let input = build(&turns, active);
        let profile = Profile {
            max_messages_before_summary: max_messages,
            min_recent_messages: min_recent,
            context_window: Some(window),
            response_reserve: 500,
            max_summary_tokens: 300,
            clear: clear.then(|| ClearSettings { keep: 1, ..ClearSettings::default() }),
            ..Profile::default()
        };
        let req = Compression {
            strategy,
            force,
            thinking_required: thinking,
            ..Compression::new(parse(&input), profile)
        };
        let out = match block_on(COMPRESSOR.run(req)) {
            Ok(out) => out,
            // Refusing a thread that cannot fit is allowed: the caller keeps it.
            Err(condense::compress::Error::DoesNotFit(_)) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let messages: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
        thread::validate(&parse(&messages)).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let accepted = match thinking {
            true => provider_accepts(&messages, out.thinking_drop_block, active),
            false if out.thinking_drop_block => Err("thinking is off, yet drop_block is asked for".into()),
            // The caller's own thread, unchanged, is the caller's to send.
            false if !out.compressed => Ok(()),
            false => empty_turns(&messages),
        };
        accepted.map_err(|e| TestCaseError::fail(format!("{e}; reason {:?}, edits {:?}", out.reason, out.applied_edits)))?;
        // Mid-conversation system messages: all of them, verbatim, in order.
        let systems = |ms: &[Value]| ms.iter().filter(|m| m["role"] == "system").cloned().collect::<Vec<_>>();
        prop_assert_eq!(systems(&messages), systems(&input));
        if let Some(s) = &out.summary {
            prop_assert!(!s.content.contains("SYSMARK"), "a system message was summarized");
        }
    }
}

/// The emulation itself refuses what it must: a summary before a kept
/// thinking block, with no removal and no `drop_block`.
#[test]
fn the_emulated_check_refuses_a_changed_prefix() {
    let turns = vec![Turn::Tool("a".into(), 10), Turn::Answer("b".into())];
    let mut m = build(&turns, false);
    assert!(provider_accepts(&m, false, false).is_ok());
    m[0] = json!({"role": "user", "content": "[summary]"});
    assert!(provider_accepts(&m, false, false).is_err());
    assert!(provider_accepts(&m, true, false).is_ok());
    let mut active = build(&turns, true);
    let n = active.len();
    active[n - 2]["content"].as_array_mut().unwrap().remove(0);
    assert!(provider_accepts(&active, false, true).is_err());
}

fn run(turns: &[Turn], active: bool, window: u64) -> (Vec<Value>, condense::compress::Outcome) {
    let input = build(turns, active);
    let profile = Profile {
        max_messages_before_summary: 4,
        min_recent_messages: 4,
        context_window: Some(window),
        response_reserve: 500,
        max_summary_tokens: 300,
        ..Profile::default()
    };
    let req = Compression {
        strategy: Summarizer::Heuristic,
        ..Compression::new(parse(&input), profile)
    };
    (input, block_on(COMPRESSOR.run(req)).expect("compresses"))
}

fn tool_turns(n: usize) -> Vec<Turn> {
    (0..n)
        .flat_map(|i| {
            [
                Turn::Tool(format!("step {i}"), 200),
                Turn::System(format!("note {i}")),
            ]
        })
        .collect()
}

/// A new summary after finished turns: the kept turns' thinking goes, no
/// `drop_block` is needed, and the provider accepts the thread.
#[test]
fn a_new_summary_removes_the_kept_turns_thinking() {
    let mut turns = tool_turns(8);
    turns.push(Turn::Answer("done".into()));
    turns.push(Turn::User("next task".into()));
    let (_, out) = run(&turns, false, 200_000);
    assert!(out.compressed && out.summary.is_some(), "{:?}", out.reason);
    assert!(
        out.applied_edits
            .iter()
            .any(|e| matches!(e, condense::compress::AppliedEdit::RemoveStaleThinking { removed_thinking_turns, .. } if *removed_thinking_turns > 0)),
        "{:?}",
        out.applied_edits
    );
    assert!(!out.thinking_drop_block);
    let messages: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
    provider_accepts(&messages, false, false).unwrap();
}

/// In an active loop the summary waits while the thread fits, and is
/// written, with `drop_block` for the final thinking, when it does not.
#[test]
fn an_active_loop_defers_until_the_window_needs_it() {
    let turns = tool_turns(8);
    let (input, out) = run(&turns, true, 200_000);
    assert!(!out.compressed, "{:?}", out.reason);
    assert!(
        out.warnings.iter().any(|w| w.contains("deferred")),
        "{:?}",
        out.warnings
    );
    let messages: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
    assert_eq!(messages, input);

    let (_, out) = run(&tool_turns(14), true, 2_500);
    assert!(out.compressed && out.summary.is_some(), "{:?}", out.reason);
    assert!(out.thinking_drop_block);
    let messages: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
    assert!(provider_accepts(&messages, false, true).is_err());
    provider_accepts(&messages, true, true).unwrap();
}

/// With thinking off a kept turn of thinking alone is dropped whole (the
/// API would read it as empty and refuse it), reported and warned of.
#[test]
fn thinking_off_drops_a_kept_turn_of_thinking_alone() {
    let mut turns = tool_turns(6);
    turns.push(Turn::User("next task".into()));
    turns.push(Turn::Thought("on second thought".into()));
    turns.push(Turn::User("and then".into()));
    let input = build(&turns, false);
    let at = input
        .iter()
        .position(|m| m["content"][0]["thinking"] == "on second thought")
        .unwrap();
    let profile = Profile {
        max_messages_before_summary: 4,
        // The tail from the user's next task on (`truncate` cuts at a user turn).
        min_recent_messages: 3,
        context_window: Some(200_000),
        response_reserve: 500,
        max_summary_tokens: 300,
        ..Profile::default()
    };
    for strategy in [Summarizer::Heuristic, Summarizer::Truncate] {
        let req = Compression {
            strategy,
            thinking_required: false,
            ..Compression::new(parse(&input), profile.clone())
        };
        let out = block_on(COMPRESSOR.run(req)).unwrap();
        assert!(out.compressed, "{strategy:?}: {:?}", out.reason);
        assert!(out.messages_dropped.contains(&at), "{strategy:?}");
        assert!(!out.thinking_drop_block, "{strategy:?}");
        assert!(
            out.warnings
                .iter()
                .any(|w| w.contains("holding only thinking")),
            "{strategy:?}: {:?}",
            out.warnings
        );
        let messages: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
        empty_turns(&messages).unwrap();
        assert_eq!(messages.last(), input.last(), "{strategy:?}");
    }
}
