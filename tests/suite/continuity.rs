//! Continuity across turns: an agent that resends its whole history every
//! turn gets the same compressed prefix, byte for byte, until the next
//! summary is due, and one summary per N new messages at most.

use std::sync::Arc;

use serde_json::{Value, json};

use condense::cache::{Cache, CacheOptions};
use condense::compress::{Compression, Compressor, Meter, Reason};
use condense::policy::Profile;
use condense::summarize::{Strategy, SummaryService};
use condense::thread::{self, RawThread};
use condense::tokens::{Encoders, ModelRegistry};

async fn compressor() -> Compressor {
    let dir = std::env::temp_dir().join(format!(
        "condense-continuity-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("c.sqlite3").display());
    let cache = Cache::connect(&url, CacheOptions::default()).await.unwrap();
    let meter = Meter::new(
        Arc::new(ModelRegistry::embedded()),
        "gpt-4o",
        Encoders::global(),
    );
    Compressor::new(meter, Arc::new(SummaryService::new(None, cache)))
}

fn turn(i: usize) -> [Value; 2] {
    [
        json!({"role": "user", "content": format!("step {i}: please fix src/m{i}.rs, it fails with error[E0{i:03}]")}),
        json!({"role": "assistant", "content": format!("I changed src/m{i}.rs; cargo test passes now.")}),
    ]
}

/// The bytes of each forwarded message.
fn bytes(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| m.to_string()).collect()
}

#[tokio::test]
async fn the_forwarded_prefix_stays_identical_between_summaries() {
    let c = compressor().await;
    let profile = Profile {
        max_messages_before_summary: 10,
        min_recent_messages: 4,
        ..Profile::default()
    };
    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    let mut previous: Option<Vec<String>> = None;
    let (mut summaries, mut continued, turns) = (0, 0, 40);
    for i in 0..turns {
        history.extend(turn(i));
        let t = thread::parse(RawThread {
            messages: &history,
            ..Default::default()
        })
        .unwrap();
        let out = c
            .run(Compression {
                strategy: Strategy::Heuristic,
                continuity: true,
                ..Compression::new(t, profile.clone())
            })
            .await
            .unwrap();
        let forwarded: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
        let now = bytes(&forwarded);
        assert_eq!(
            now[0],
            history[0].to_string(),
            "the system prompt is pinned"
        );
        match out.reason {
            Some(Reason::Continued) => {
                continued += 1;
                let before = previous.as_ref().expect("a summary came before");
                assert!(
                    now.len() > before.len() && now[..before.len()] == before[..],
                    "turn {i}: the forwarded prefix changed between summaries"
                );
            }
            Some(_) => {
                summaries += 1;
                assert!(out.summary.is_some(), "turn {i}: {:?}", out.reason);
            }
            None => assert_eq!(
                now,
                bytes(&history),
                "turn {i}: nothing due, nothing changed"
            ),
        }
        previous = Some(now);
    }
    // N counts the messages after what the last summary covers, and the
    // newest min_recent_messages stay verbatim: one summary per N - 4 = 6
    // new messages at most (80 messages, the first due at 10).
    assert!(summaries >= 2, "{summaries} summaries");
    assert!(
        summaries <= 1 + (turns * 2 - 10) / 6,
        "{summaries} summaries"
    );
    assert!(continued >= turns / 2, "{continued} continued turns");
}

/// A summary written under one profile is not put in place under another
/// whose thresholds never made the thread due.
#[tokio::test]
async fn another_profiles_summary_is_not_continued() {
    let c = compressor().await;
    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    for i in 0..15 {
        history.extend(turn(i));
    }
    let run = |profile: Profile| {
        let t = thread::parse(RawThread {
            messages: &history,
            ..Default::default()
        })
        .unwrap();
        c.run(Compression {
            strategy: Strategy::Heuristic,
            continuity: true,
            ..Compression::new(t, profile)
        })
    };
    let due = Profile {
        max_messages_before_summary: 10,
        min_recent_messages: 4,
        ..Profile::default()
    };
    assert!(run(due.clone()).await.unwrap().compressed);
    assert_eq!(run(due).await.unwrap().reason, Some(Reason::Continued));
    let never = Profile {
        max_messages_before_summary: 1000,
        ..Profile::default()
    };
    let out = run(never).await.unwrap();
    assert!(!out.compressed, "{:?}", out.reason);
}
