//! `group_by: "iteration"`: what each iteration's summary keeps, the size
//! bound on the injection, and the summarizer path (strategy, cache,
//! `on_upstream_error`). The fixtures carry no `metadata.iteration`, so the
//! threads here are tagged by hand or by user turn.

use axum::Router;
use serde_json::{Value, json};

use crate::support::common::{app, app_with, post, thread};
use crate::support::stub::{self, Fault};

/// Iteration 1: two requests, a failing command, an error, a decision.
/// Iteration 2: a command whose output is empty and no assistant text.
/// Iteration 3: one assistant message. Iterations 4 and 5 stay verbatim.
fn tagged_thread() -> Vec<Value> {
    let call = |id: &str, cmd: &str| json!({"id": id, "type": "function", "function": {"name": "shell", "arguments": json!({"command": cmd}).to_string()}});
    vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Run the tests of crates/core.", "metadata": {"iteration": 1}}),
        json!({"role": "assistant", "content": null, "tool_calls": [call("a", "cargo test -p core")]}),
        json!({"role": "tool", "tool_call_id": "a", "content": "error[E0425]: cannot find value `limit` in this scope\n --> crates/core/src/lib.rs:4:5\nexit status: 101"}),
        json!({"role": "user", "content": "Do not touch Cargo.lock while you fix it."}),
        json!({"role": "assistant", "content": "I'll add the missing binding in crates/core/src/lib.rs instead of a new dependency."}),
        json!({"role": "user", "content": "Now run the linter.", "metadata": {"iteration": 2}}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("b", "cargo clippy --quiet")]}),
        json!({"role": "tool", "tool_call_id": "b", "content": ""}),
        json!({"role": "assistant", "content": "Waiting for CI to report.", "metadata": {"iteration": 3}}),
        json!({"role": "user", "content": "Step four.", "metadata": {"iteration": 4}}),
        json!({"role": "assistant", "content": "Done with four."}),
        json!({"role": "user", "content": "Step five.", "metadata": {"iteration": 5}}),
        json!({"role": "assistant", "content": "Done with five."}),
    ]
}

/// A fixture thread with an iteration per user turn.
fn by_user_turn(name: &str) -> Value {
    let mut t = thread(name);
    let mut it = 0;
    for m in t["messages"].as_array_mut().unwrap() {
        if m["role"] == "user" && m["content"].is_string() {
            it += 1;
            m["metadata"] = json!({"iteration": it});
        }
    }
    t
}

async fn compressed(app: &Router, body: &Value) -> Value {
    let r = post(app, "/v1/compress", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

async fn tokens(app: &Router, text: &str, model: &str) -> u64 {
    let r = post(app, "/v1/tokens", &json!({"text": text, "model": model})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["total_tokens"].as_u64().unwrap()
}

fn contents(out: &Value) -> Vec<(u64, String)> {
    out["summaries"]
        .as_array()
        .expect("summaries")
        .iter()
        .map(|s| {
            (
                s["iteration"].as_u64().unwrap(),
                s["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn each_iteration_keeps_its_requests_commands_errors_and_silence() {
    let body = json!({"messages": tagged_thread(), "force": true, "group_by": "iteration",
                      "keep_recent_iterations": 2, "summarizer": {"strategy": "heuristic"}});
    let out = compressed(&app(), &body).await;
    let s = contents(&out);
    assert_eq!(s.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2, 3]);

    let one = &s[0].1;
    for fact in [
        "\"Run the tests of crates/core.\"",
        "\"Do not touch Cargo.lock while you fix it.\"",
        "`cargo test -p core` (exit status 101)",
        "error[E0425]: cannot find value `limit` in this scope",
        "crates/core/src/lib.rs",
        "instead of a new dependency",
    ] {
        assert!(one.contains(fact), "iteration 1 lacks {fact}: {one}");
    }
    let two = &s[1].1;
    assert!(two.contains("\"Now run the linter.\""), "{two}");
    assert!(
        two.contains("no output"),
        "the empty iteration says so: {two}"
    );
    assert!(two.contains("`cargo clippy --quiet`"), "{two}");
    let three = &s[2].1;
    assert!(three.starts_with("1 message of agent work."), "{three}");
    assert!(!one.contains("no output") && !three.contains("no output"));

    // The injection is the list, line for line; the summary is the injection.
    let injection = out["context_injection"].as_str().unwrap();
    for (it, content) in &s {
        assert!(
            injection.contains(&format!("- Iteration {it}: {content}\n"))
                || injection.ends_with(&format!("- Iteration {it}: {content}")),
            "{injection}"
        );
    }
    assert_eq!(out["summary"]["content"], injection);
    assert_eq!(out["summary"]["strategy"], "heuristic");
    assert_eq!(out["degraded"], false);
    assert!(out["usage"].is_null());
    // Iterations 4 and 5 stay verbatim after the summary message.
    let m = out["messages"].as_array().unwrap();
    assert_eq!(m[2..], tagged_thread()[10..]);
}

/// The injection (and so every summary in it) takes at most
/// `max_summary_tokens`, and at most 30% of the budget.
#[tokio::test]
async fn the_injection_keeps_to_the_summary_bound() {
    let app = app();
    let t = by_user_turn("large-04.openai");
    let model = t["model"].as_str().unwrap().to_string();
    let cases = [
        (json!({}), 2000),
        (json!({"max_summary_tokens": 300}), 300),
        // 30% of (8000 - 1000) = 2100 under a larger max_summary_tokens.
        (
            json!({"max_summary_tokens": 6000, "context_window": 8000, "response_reserve": 1000}),
            2100,
        ),
    ];
    for (config, bound) in cases {
        let body = json!({"messages": t["messages"], "tools": t["tools"], "model": model,
                          "force": true, "group_by": "iteration", "keep_recent_iterations": 1,
                          "summarizer": {"strategy": "heuristic"}, "config": config});
        let out = compressed(&app, &body).await;
        let injection = out["context_injection"].as_str().unwrap();
        let n = tokens(&app, injection, &model).await;
        assert!(n <= bound, "{config}: {n} tokens over {bound}");
        assert!(
            n >= bound / 2,
            "{config}: the room is used ({n} of {bound})"
        );
        let summaries: u64 = {
            let mut sum = 0;
            for (_, c) in contents(&out) {
                sum += tokens(&app, &c, &model).await;
            }
            sum
        };
        assert!(summaries <= bound, "{config}: summaries take {summaries}");
        let s = contents(&out);
        assert!(s.len() >= 2, "{config}: {injection}");
        // Folded, the oldest go first, into the rolling entry: every old
        // iteration is still there, none left out.
        assert!(!injection.contains("left out"), "{injection}");
        let list = out["summaries"].as_array().unwrap();
        if let Some(first) = list[0]["first_iteration"].as_u64() {
            assert_eq!(first, 1, "{injection}");
            assert_eq!(
                list[1]["iteration"].as_u64().unwrap(),
                list[0]["iteration"].as_u64().unwrap() + 1,
                "{injection}"
            );
            assert!(list[1..].iter().all(|s| s["first_iteration"].is_null()));
        } else {
            assert_eq!(list[0]["iteration"], 1, "{injection}");
        }
        assert!(
            injection.contains("(exit status "),
            "{config}: a failing command is kept: {injection}"
        );
    }
}

fn upstream_config(url: &str) -> condense::Config {
    condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(url.to_string()),
            model: "stub-model".into(),
            timeout: std::time::Duration::from_secs(30),
            retry_budget: std::time::Duration::from_secs(300),
            max_retries: 1,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn with(strategy: &str, on_error: &str) -> Value {
    json!({"messages": tagged_thread(), "force": true, "group_by": "iteration",
           "keep_recent_iterations": 2, "summarizer": {"strategy": strategy},
           "config": {"on_upstream_error": on_error}})
}

#[tokio::test]
async fn llm_and_hybrid_call_the_upstream_per_iteration() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(upstream_config(&s.url));
    let out = compressed(&app, &with("llm", "fail")).await;
    assert_eq!(out["degraded"], false, "{}", out["warnings"]);
    assert_eq!(out["summary"]["strategy"], "llm");
    assert_eq!(out["summary"]["model"], "stub-model");
    assert!(
        out["usage"]["calls"].as_u64().unwrap() >= 1,
        "{}",
        out["usage"]
    );
    assert!(s.calls() >= 1);
    let llm = contents(&out);
    assert_eq!(llm.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2, 3]);
    // The stub answers without labels: each iteration is asked again alone.
    assert!(
        llm.iter().all(|(_, c)| c.contains("stub summary")),
        "{llm:?}"
    );
    let prompt = s.bodies.lock().unwrap()[0].clone();
    assert!(prompt.contains("Iteration 1: …"), "{prompt}");

    let out = compressed(&app, &with("hybrid", "fail")).await;
    assert_eq!(out["summary"]["strategy"], "hybrid");
    let hybrid = contents(&out);
    assert!(
        hybrid[0]
            .1
            .contains("`cargo test -p core` (exit status 101)")
            && hybrid[0].1.contains("stub summary"),
        "facts and the model's sentences: {hybrid:?}"
    );

    // `auto` is the heuristic below `llm_min_tokens`: no call.
    let before = s.calls();
    let mut auto = with("auto", "fail");
    auto["config"]["llm_min_tokens"] = json!(1_000_000);
    let out = compressed(&app, &auto).await;
    assert_eq!(out["summary"]["strategy"], "heuristic");
    assert_eq!(s.calls(), before);
    // And `llm` at or above it.
    auto["config"]["llm_min_tokens"] = json!(1);
    let out = compressed(&app, &auto).await;
    assert_eq!(out["summary"]["strategy"], "llm");
    assert!(s.calls() > before);
}

#[tokio::test]
async fn a_restarted_numbering_keeps_each_iteration_its_own_story() {
    // The agent restarted and numbered from 1 again: two runs are "1".
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(upstream_config(&s.url));
    let mut body = with("llm", "fail");
    body["messages"][9]["metadata"]["iteration"] = json!(1);
    let out = compressed(&app, &body).await;
    assert_eq!(out["degraded"], false, "{}", out["warnings"]);
    let its: Vec<u64> = contents(&out).iter().map(|(i, _)| *i).collect();
    assert_eq!(its, [1, 2, 1]);
}

#[tokio::test]
async fn an_upstream_failure_falls_back_or_fails_as_asked() {
    let s = stub::start(Fault::ServerError, false).await;
    let app = app_with(upstream_config(&s.url));

    let out = compressed(&app, &with("llm", "fallback")).await;
    assert_eq!(out["degraded"], true);
    assert_eq!(out["summary"]["strategy"], "heuristic");
    let warnings = out["warnings"].to_string();
    assert!(warnings.contains("upstream LLM failed"), "{warnings}");
    let s1 = contents(&out);
    assert!(
        s1[0].1.contains("`cargo test -p core` (exit status 101)"),
        "the heuristic's summaries: {s1:?}"
    );

    let r = post(&app, "/v1/compress", &with("llm", "fail")).await;
    let p = r.problem(502);
    assert!(p["detail"].as_str().unwrap().contains("HTTP 500"), "{p}");
    assert!(
        !r.text().contains("Iteration 1"),
        "the thread is not answered: {}",
        r.text()
    );
}

#[tokio::test]
async fn per_iteration_summaries_are_cached_apart_from_plain_ones() {
    let dir = std::env::temp_dir().join(format!("condense-it-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("cache.sqlite3").display());
    let s = stub::start(Fault::Ok, false).await;
    let config = {
        let mut config = upstream_config(&s.url);
        config.cache.database_url = Some(url);
        config
    };
    let app = condense::http::router(condense::AppState::connect(config).await.unwrap());

    let first = compressed(&app, &with("llm", "fail")).await;
    let calls = s.calls();
    let again = compressed(&app, &with("llm", "fail")).await;
    assert_eq!(again["summary"]["cached"], true);
    assert_eq!(s.calls(), calls, "a hit costs no call");
    assert_eq!(again["context_injection"], first["context_injection"]);
    assert_eq!(again["summaries"], first["summaries"]);

    let heuristic = compressed(&app, &with("heuristic", "fail")).await;
    assert_eq!(heuristic["summary"]["cached"], false);
    assert_ne!(
        heuristic["summary"]["content_hash"],
        first["summary"]["content_hash"]
    );
}

/// A budget tighter than the summary's bound shrinks the injection by its
/// own rules: it stays a list, and `summaries` is what it holds.
#[tokio::test]
async fn a_tight_budget_shrinks_the_injection_as_a_list() {
    let app = app();
    let mut messages = tagged_thread();
    messages.truncate(10);
    messages.push(json!({"role": "user", "content": "Last step.", "metadata": {"iteration": 4}}));
    for i in 0..60 {
        let role = if i % 2 == 0 { "assistant" } else { "user" };
        messages.push(json!({"role": role, "content": format!("short reply {i}")}));
    }
    let body = json!({"messages": messages, "force": true, "group_by": "iteration",
                      "keep_recent_iterations": 1, "summarizer": {"strategy": "heuristic"},
                      "config": {"context_window": 600, "response_reserve": 0}});
    let out = compressed(&app, &body).await;
    let injection = out["context_injection"].as_str().unwrap();
    assert!(
        injection.starts_with("Earlier iterations:\n"),
        "{injection}"
    );
    let s = contents(&out);
    // Iterations 1 to 3 are all there: folded into the rolling entry, or
    // entries of their own.
    let list = out["summaries"].as_array().unwrap();
    assert_eq!(list[0]["first_iteration"], 1, "folded: {injection}");
    assert_eq!(s.last().unwrap().0, 3, "{injection}");
    assert!(!injection.contains("left out"), "{injection}");
    for (it, content) in &s[1..] {
        assert!(
            injection.contains(&format!("- Iteration {it}: {content}")),
            "{injection}"
        );
    }
    assert!(out["tokens_after"].as_u64().unwrap() <= 600);
}

/// Compressing a compressed thread again extends its injection: the earlier
/// iterations stay listed ahead of the new ones, and the whole keeps the bound.
#[tokio::test]
async fn a_second_compression_extends_the_list() {
    let app = app();
    let body = |messages: Value| {
        json!({"messages": messages, "force": true, "group_by": "iteration",
               "keep_recent_iterations": 2, "summarizer": {"strategy": "heuristic"},
               "config": {"max_summary_tokens": 400}})
    };
    let first = compressed(&app, &body(json!(tagged_thread()))).await;
    let mut messages = first["messages"].as_array().unwrap().clone();
    for it in 6..=7 {
        messages.push(json!({"role": "user", "content": format!("Step {it}."), "metadata": {"iteration": it}}));
        messages.push(json!({"role": "assistant", "content": format!("Done with {it}.")}));
    }
    let second = compressed(&app, &body(json!(messages))).await;
    let s = contents(&second);
    assert_eq!(
        s.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5],
        "{}",
        second["context_injection"]
    );
    assert_eq!(s[..3], contents(&first)[..]);
    let injection = second["context_injection"].as_str().unwrap();
    assert_eq!(
        injection.matches("Earlier iterations:").count(),
        1,
        "{injection}"
    );
    assert!(s[3].1.contains("\"Step four.\""), "{injection}");
    assert!(tokens(&app, injection, "gpt-4o").await <= 400);
}
