//! The fidelity receipt through the API: every strategy's summary carries
//! one that adds up and agrees with the text it came with, a cache hit
//! returns the first write's, and the limit holds.

use serde_json::{Value, json};

use condense::summarize::anchors::anchors;
use condense::summarize::receipt::check;
use condense::summarize::{ALSO, Fidelity};
use condense::thread::{RawThread, parse};

use super::cache_e2e::{app_on, every_backend};
use crate::support::common::{app_with, post, thread};
use crate::support::stub::{self, Fault};

/// The receipt of a `/v1/compress` answer, after checking that it adds up.
pub(crate) fn receipt(out: &Value) -> Fidelity {
    let f: Fidelity = serde_json::from_value(out["summary"]["fidelity"].clone())
        .unwrap_or_else(|e| panic!("a receipt ({e}): {}", out["summary"]));
    assert_eq!(f.kept + f.added + f.missing, f.anchors, "{f:?}");
    assert!(f.anchors > 0, "the fixture has anchors: {f:?}");
    f
}

/// The receipt taken again, here, from the request's messages the summary
/// covers and the text it came with: the API's must be the same.
pub(crate) fn retaken(messages: &[Value], out: &Value) -> Fidelity {
    let s = &out["summary"];
    let (first, last) = (
        s["first_message_idx"].as_u64().unwrap() as usize,
        s["last_message_idx"].as_u64().unwrap() as usize,
    );
    let t = parse(RawThread {
        messages: &messages[first..=last],
        ..Default::default()
    })
    .expect("the covered span parses");
    let span = condense::summarize::canonical(&t.messages);
    check(&anchors(&span), s["content"].as_str().unwrap())
}

fn request(strategy: &str) -> (Vec<Value>, Value) {
    let t = thread("medium-03.openai");
    let messages = t["messages"].as_array().unwrap().clone();
    let body = json!({"messages": messages, "tools": t["tools"], "model": "gpt-4o", "force": true,
        "summarizer": {"strategy": strategy}, "config": {"max_summary_tokens": 1500}});
    (messages, body)
}

#[tokio::test]
async fn every_strategy_carries_a_receipt_that_matches_its_text() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(s.url.clone()),
            model: "stub-model".into(),
            ..Default::default()
        },
        ..Default::default()
    });
    for strategy in ["heuristic", "llm", "hybrid", "auto"] {
        let (messages, body) = request(strategy);
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.status, 200, "{strategy}: {}", r.text());
        let out = r.json();
        let f = receipt(&out);
        assert_eq!(f, retaken(&messages, &out), "{strategy}");
        assert!(out["summary"]["token_count"].as_u64().unwrap() <= 1500);
        if strategy == "llm" {
            // The stub's two-line summary holds next to nothing: the list does.
            assert!(f.added > f.kept, "{f:?}");
            assert!(out["summary"]["content"].as_str().unwrap().contains(ALSO));
        }
    }
}

#[tokio::test]
async fn per_iteration_summaries_carry_a_receipt_and_still_read_back() {
    let (mut messages, _) = request("heuristic");
    // Every message in iteration 1 but the newest few.
    let n = messages.len();
    for (i, m) in messages.iter_mut().enumerate() {
        m["metadata"] = json!({"iteration": if i + 6 < n { 1 } else { 2 }});
    }
    let body = json!({"messages": messages, "model": "gpt-4o", "force": true,
        "group_by": "iteration", "keep_recent_iterations": 1, "config": {"max_summary_tokens": 400}});
    let r = post(&crate::support::common::app(), "/v1/compress", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    let f = receipt(&out);
    assert_eq!(f, retaken(&messages, &out));
    assert_eq!(out["summaries"][0]["iteration"], 1, "{}", out["summaries"]);
    // One iteration of ~100 messages in a 400-token bound (a list of few
    // iterations gives each more than an eighth of the room; 1,500 tokens
    // now hold all of its facts): its facts are cut, and its entry names
    // what the cut lost (no list appended to the injection, which must
    // extend byte for byte).
    let injection = out["context_injection"].as_str().unwrap();
    assert!(!injection.contains(ALSO), "{injection}");
    assert!(f.added > 0, "{f:?}");
    let entry = out["summaries"][0]["content"].as_str().unwrap();
    let (facts, also) = entry.split_once("Also mentioned: ").expect(entry);
    assert!(!facts.is_empty() && also.ends_with('.'), "{entry}");
}

/// A hit returns the first write's receipt (and bytes): SQLite and PostgreSQL.
#[tokio::test]
async fn a_cache_hit_returns_the_same_receipt() {
    for (url, _db) in every_backend("a_cache_hit_returns_the_same_receipt").await {
        let s = stub::start(Fault::Ok, false).await;
        let app = app_on(&url, Some(&s.url)).await;
        for strategy in ["llm", "heuristic"] {
            let (_, body) = request(strategy);
            let first = post(&app, "/v1/compress", &body).await.json();
            let second = post(&app, "/v1/compress", &body).await.json();
            assert_eq!(first["summary"]["cached"], false, "{url} {strategy}");
            assert_eq!(second["summary"]["cached"], true, "{url} {strategy}");
            assert_eq!(receipt(&first), receipt(&second), "{url} {strategy}");
            assert_eq!(first["summary"]["content"], second["summary"]["content"]);
        }
        assert_eq!(s.calls(), 1, "{url}: the hit made no upstream call");
    }
}
