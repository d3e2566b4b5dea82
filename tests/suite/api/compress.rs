//! `/v1/compress` over HTTP: the realistic threads, both client styles,
//! strategies, budget fitting, per-iteration summaries and bad requests.

use serde_json::{Value, json};

use crate::support::common::{app, chat, post, thread};

async fn compress(app: &axum::Router, body: &Value) -> Value {
    let r = post(app, "/v1/compress", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// `/v1/tokens` of a compressed thread, as a client would send it next.
async fn tokens_of(app: &axum::Router, out: &Value, input: &Value) -> Value {
    let mut body =
        json!({"messages": out["messages"], "model": input["model"], "tools": input.get("tools")});
    if let Some(system) = out.get("system") {
        body["system"] = system.clone();
    }
    let r = post(app, "/v1/tokens", &body).await;
    assert_eq!(
        r.status,
        200,
        "the compressed thread must be valid input: {}",
        r.text()
    );
    r.json()
}

#[tokio::test]
async fn realistic_threads_compress_into_valid_threads_that_keep_the_facts() {
    let app = app();
    for name in ["small-00", "small-01", "medium-02", "medium-03", "large-04"] {
        let facts = crate::support::common::fixture(&format!("facts/{name}.facts.json"));
        for fmt in ["openai", "anthropic"] {
            let input = thread(&format!("{name}.{fmt}"));
            let out = compress(&app, &json!({
                "messages": input["messages"], "system": input.get("system"), "tools": input["tools"],
                "model": input["model"], "force": true
            }))
            .await;
            assert_eq!(out["compressed"], true, "{name}.{fmt}");
            let counted = tokens_of(&app, &out, &input).await;
            assert_eq!(
                counted["total_tokens"], out["tokens_after"],
                "{name}.{fmt}: tokens_after is what /v1/tokens says"
            );
            let window = out["context_window"].as_u64().unwrap();
            assert!(
                out["tokens_after"].as_u64().unwrap() <= window - 4096,
                "{name}.{fmt} fits"
            );
            assert!(out["tokens_after"].as_u64().unwrap() < out["tokens_before"].as_u64().unwrap());

            // What the agent needs next is in the summary or in the kept messages.
            let summary = out["summary"]["content"].as_str().unwrap();
            let kept = serde_json::to_string(&out["messages"]).unwrap();
            let here = |s: &str| {
                summary.contains(s) || kept.contains(&serde_json::to_string(s).unwrap()[1..s.len()])
            };
            let calibrated = fmt == "anthropic" && name == "large-04";
            for key in ["commands", "errors", "user_constraints"] {
                for fact in facts[key].as_array().unwrap() {
                    let fact = fact.as_str().unwrap();
                    assert!(here(fact), "{name}.{fmt}: {key} `{fact}` is lost");
                }
            }
            let paths = facts["paths"].as_array().unwrap();
            let missing: Vec<&str> = paths
                .iter()
                .map(|p| p.as_str().unwrap())
                .filter(|p| !here(p))
                .collect();
            if calibrated {
                // Claude's count (o200k x 1.25) leaves less room in 2,000 tokens: the
                // oldest paths go first (at most a third), and the summary says so.
                assert!(missing.len() * 3 < paths.len(), "{name}.{fmt}: {missing:?}");
                assert!(summary.contains("more left out)"));
            } else {
                assert!(missing.is_empty(), "{name}.{fmt}: paths lost: {missing:?}");
            }
        }
    }
}

#[tokio::test]
async fn nothing_due_comes_back_value_for_value() {
    let app = app();
    let input = json!({"messages": [
        {"role": "system", "content": "s", "cache_control": {"type": "ephemeral"}},
        {"role": "user", "content": "hi", "metadata": {"trace": [1, 2]}},
        {"role": "assistant", "content": "hello"}
    ]});
    let out = compress(&app, &input).await;
    assert_eq!(out["compressed"], false);
    assert_eq!(out["reason"], Value::Null);
    assert_eq!(out["messages"], input["messages"]);
    assert_eq!(out["summary"], Value::Null);
    assert_eq!(out["tokens_before"], out["tokens_after"]);
}

#[tokio::test]
async fn the_summary_message_sits_after_the_pinned_prefix() {
    let app = app();
    let mut messages = vec![
        json!({"role": "system", "content": "rules"}),
        json!({"role": "developer", "content": "more rules"}),
    ];
    messages.extend(chat(40));
    let out = compress(&app, &json!({"messages": messages})).await;
    assert_eq!(out["reason"], "messages");
    let m = out["messages"].as_array().unwrap();
    assert_eq!(m[..2], messages[..2]);
    assert_eq!(m[2]["role"], "user");
    assert!(
        m[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - 34 previous messages]")
    );
    assert_eq!(m[3..], messages[36..], "the 6 newest come back verbatim");
    let s = &out["summary"];
    assert_eq!(s["messages_summarized"], 34);
    assert_eq!(s["first_message_idx"], 2);
    assert_eq!(s["last_message_idx"], 35);
    assert_eq!(s["strategy"], "heuristic");
    assert_eq!(s["cached"], false);
    assert_eq!(s["content_hash"].as_str().unwrap().len(), 64);

    // summary_role: system.
    let out = compress(
        &app,
        &json!({"messages": messages, "config": {"summary_role": "system"}}),
    )
    .await;
    assert_eq!(out["messages"][2]["role"], "system");
}

#[tokio::test]
async fn both_client_styles_extend_the_summary_and_settle() {
    let app = app();
    let mut history = vec![json!({"role": "system", "content": "rules"})];
    history.extend(chat(40));

    // Style (b): send back the compressed thread plus new messages.
    let first = compress(&app, &json!({"messages": history})).await;
    let mut replaced: Vec<Value> = first["messages"].as_array().unwrap().clone();
    replaced.extend(chat(40).into_iter().skip(10));
    let second = compress(&app, &json!({"messages": replaced})).await;
    assert_eq!(second["compressed"], true);
    let header = second["messages"][1]["content"].as_str().unwrap();
    assert!(
        header.starts_with("[Context Summary - 64 previous messages]"),
        "{header}"
    );
    assert!(
        !second["summary"]["content"]
            .as_str()
            .unwrap()
            .contains("[Context Summary"),
        "a summary is extended, not quoted"
    );

    // Style (a): full history plus the summary object.
    let mut full = history.clone();
    full.extend(chat(40).into_iter().skip(10));
    let a = compress(
        &app,
        &json!({"messages": full, "summary": first["summary"]}),
    )
    .await;
    assert_eq!(a["summary"]["messages_summarized"], 64);
    assert_eq!(a["summary"]["last_message_idx"], 64);
    assert!(
        a["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - 64 previous messages]")
    );

    // The verdict reads the summary message the same way: only the kept tail is new.
    let v = post(
        &app,
        "/v1/verdict",
        &json!({"messages": second["messages"]}),
    )
    .await
    .json();
    assert_eq!(v["messages_since_summary"], 6);
    assert_eq!(v["should_summarize"], false);

    // Sending an output back unchanged changes nothing.
    let again = compress(&app, &json!({"messages": second["messages"]})).await;
    assert_eq!(again["compressed"], false);
    assert_eq!(again["messages"], second["messages"]);
}

#[tokio::test]
async fn anthropic_output_opens_with_a_user_turn_and_keeps_system() {
    let app = app();
    let input = thread("medium-02.anthropic");
    let out = compress(&app, &json!({"messages": input["messages"], "system": input["system"], "config": {"summary_role": "system"}})).await;
    assert_eq!(out["format"], "anthropic");
    assert_eq!(out["system"], input["system"]);
    assert_eq!(out["messages"][0]["role"], "user");
    assert!(
        out["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary")
    );
}

#[tokio::test]
async fn truncate_drops_whole_units_and_reports_them() {
    let app = app();
    let input = thread("medium-02.openai");
    let out = compress(
        &app,
        &json!({"messages": input["messages"], "summarizer": {"strategy": "truncate"}}),
    )
    .await;
    assert_eq!(out["summary"], Value::Null);
    let dropped = out["messages_dropped"].as_array().unwrap();
    assert!(!dropped.is_empty());
    let n_in = input["messages"].as_array().unwrap().len();
    assert_eq!(
        out["messages"].as_array().unwrap().len() + dropped.len(),
        n_in
    );
    assert_eq!(
        out["messages"][1]["role"], "user",
        "the conversation opens with a user turn"
    );
    tokens_of(&app, &out, &input).await;
}

#[tokio::test]
async fn long_tool_results_are_cut_in_the_middle_to_fit() {
    let app = app();
    let call = json!({"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": "{\"command\": \"cat big.log\"}"}});
    let messages = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "look at the log"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "start ".to_string() + &"log line\n".repeat(6000) + " end"},
        {"role": "assistant", "content": "It is long."}
    ]);
    let out = compress(&app, &json!({"messages": messages, "config": {"context_window": 8000, "response_reserve": 1000}})).await;
    assert_eq!(out["reason"], "context_window");
    assert_eq!(out["messages_truncated"], json!([3]));
    let cut = out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cut.starts_with("start "), "head kept");
    assert!(cut.ends_with(" end"), "tail kept");
    assert!(cut.contains("…[truncated "), "{}", &cut[..200]);
    assert!(out["tokens_after"].as_u64().unwrap() <= 7000);
}

#[tokio::test]
async fn per_iteration_summaries() {
    let app = app();
    let mut messages = vec![json!({"role": "system", "content": "agent"})];
    for it in 1..=6 {
        messages.push(json!({"role": "user", "content": format!("step {it}: edit src/mod{it}.rs"), "metadata": {"iteration": it}}));
        messages.push(json!({"role": "assistant", "content": format!("done with step {it}")}));
    }
    let out = compress(&app, &json!({"messages": messages, "force": true, "group_by": "iteration", "keep_recent_iterations": 2})).await;
    let summaries = out["summaries"].as_array().unwrap();
    assert_eq!(
        summaries
            .iter()
            .map(|s| s["iteration"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert!(
        summaries[0]["content"]
            .as_str()
            .unwrap()
            .contains("step 1: edit src/mod1.rs")
    );
    let injection = out["context_injection"].as_str().unwrap();
    assert!(injection.contains("- Iteration 3: "), "{injection}");
    // Iterations 5 and 6 stay verbatim.
    let m = out["messages"].as_array().unwrap();
    assert_eq!(m[2..], messages[9..]);
}

#[tokio::test]
async fn bad_compress_requests_are_4xx() {
    let app = app();
    let msgs = chat(12);
    let cases = [
        (
            json!({"messages": msgs, "summarizer": {"strategy": "magic"}}),
            "/summarizer/strategy",
        ),
        (
            json!({"messages": msgs, "summarizer": {"strategy": "heuristic", "temperature": 1}}),
            "/summarizer/temperature",
        ),
        (
            json!({"messages": msgs, "config": {"min_recent_messages": 50}}),
            "/config/min_recent_messages",
        ),
        (
            json!({"messages": msgs, "config": {"max_summary_tokens": -5}}),
            "/config/max_summary_tokens",
        ),
        (
            json!({"messages": msgs, "config": {"summary_role": "assistant"}}),
            "/config/summary_role",
        ),
        (
            json!({"messages": msgs, "summary": {"last_message_idx": 12, "content": "x"}}),
            "/summary/last_message_idx",
        ),
        (
            json!({"messages": msgs, "summary": {"last_message_idx": 5}, "force": true}),
            "/summary/content",
        ),
        (json!({"messages": msgs, "force": "yes"}), "/force"),
        (
            json!({"messages": msgs, "keep_recent_iterations": 2}),
            "/keep_recent_iterations",
        ),
        (
            json!({"messages": msgs, "group_by": "iteration", "keep_recent_iterations": 0}),
            "/keep_recent_iterations",
        ),
        (json!({"messages": msgs, "group_by": "turn"}), "/group_by"),
    ];
    for (body, pointer) in cases {
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.pointers(), [pointer], "{body}");
    }
    // An LLM strategy without an upstream, and a prefix that cannot fit, are 422s that say why.
    let r = post(
        &app,
        "/v1/compress",
        &json!({"messages": msgs, "force": true, "summarizer": {"strategy": "llm"}}),
    )
    .await;
    let p = r.problem(422);
    assert_eq!(
        p["type"], "urn:condense:problem:strategy-unavailable",
        "{p}"
    );
    assert!(p["detail"].as_str().unwrap().contains("upstream"), "{p}");
    let big = json!([{"role": "system", "content": "rule ".repeat(5000)}, {"role": "user", "content": "hi"}]);
    let r = post(&app, "/v1/compress", &json!({"messages": big, "force": true, "config": {"context_window": 2000, "response_reserve": 100}})).await;
    let p = r.problem(422);
    assert_eq!(p["type"], "urn:condense:problem:does-not-fit", "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains("pinned prefix"),
        "{p}"
    );
}

/// Regressions found in review: none of these may answer 500 or break a thread.
#[tokio::test]
async fn awkward_summaries_and_roles_stay_valid() {
    let app = app();
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let mut messages = vec![
        json!({"role": "system", "content": "s"}),
        json!({"role": "user", "content": "go"}),
    ];
    messages
        .push(json!({"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]}));
    messages.push(json!({"role": "tool", "tool_call_id": "a", "content": "ra"}));
    messages.push(json!({"role": "tool", "tool_call_id": "b", "content": "rb"}));
    messages.extend(chat(12));

    // A previous summary that ends inside a tool unit (after the call, before its results).
    let out = compress(&app, &json!({"messages": messages, "force": true, "summary": {"last_message_idx": 2, "content": "earlier"}})).await;
    assert_eq!(out["compressed"], true);
    tokens_of(&app, &out, &json!({"model": "gpt-4o"})).await;

    // An absurd count in a summary object or header is not an overflow.
    let out = compress(
        &app,
        &json!({"messages": messages, "force": true,
        "summary": {"last_message_idx": 1, "content": "x", "messages_summarized": u64::MAX}}),
    )
    .await;
    assert_eq!(out["compressed"], true);

    // summary_role system: the summary message is recognized when it comes back, not pinned.
    let mut long = vec![json!({"role": "system", "content": "rules"})];
    long.extend(chat(40));
    let first = compress(
        &app,
        &json!({"messages": long, "config": {"summary_role": "system"}}),
    )
    .await;
    let mut again: Vec<Value> = first["messages"].as_array().unwrap().clone();
    again.extend(chat(40));
    let second = compress(
        &app,
        &json!({"messages": again, "config": {"summary_role": "system"}}),
    )
    .await;
    let summaries = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Context Summary"))
        })
        .count();
    assert_eq!(summaries, 1, "the summary was extended, not stacked");
    assert_eq!(second["summary"]["messages_summarized"], 74);
}

#[tokio::test]
async fn anthropic_threads_start_with_a_user_turn_in_and_out() {
    let app = app();
    let r = post(&app, "/v1/compress", &json!({"system": "s", "messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]})).await;
    assert_eq!(r.pointers(), ["/messages/0/role"]);

    // Truncation under a tight budget still opens with a user turn (or says it cannot fit).
    let t = thread("medium-02.anthropic");
    let r = post(&app, "/v1/compress", &json!({"system": t["system"], "messages": t["messages"], "summarizer": {"strategy": "truncate"},
        "config": {"context_window": 6000, "response_reserve": 0, "min_recent_messages": 2}})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    assert_eq!(out["messages"][0]["role"], "user", "{}", out["messages"][0]);
    assert!(!out["messages_dropped"].as_array().unwrap().is_empty());
    // A window too small for the newest unit alone is a 422 that says so.
    let r = post(&app, "/v1/compress", &json!({"system": t["system"], "messages": t["messages"], "summarizer": {"strategy": "truncate"},
        "config": {"context_window": 300, "response_reserve": 0, "min_recent_messages": 2}})).await;
    assert_eq!(r.problem(422)["type"], "urn:condense:problem:does-not-fit");
}

/// A client with its own clock says how long it was idle: past the
/// profile's `provider_cache_ttl`, a thread due soon is summarized now.
#[tokio::test]
async fn idle_past_the_cache_lifetime_a_summary_due_soon_is_written_now() {
    let app = app();
    // 25 of N = 30 messages: past `precompute_at` 0.8, not due.
    let body = |idle: Option<u64>| {
        let mut b = json!({"messages": chat(25), "config": {"provider_cache_ttl": "5m"}});
        if let Some(s) = idle {
            b["idle_seconds"] = json!(s);
        }
        b
    };
    for (idle, compressed) in [(None, false), (Some(300), false), (Some(301), true)] {
        let out = compress(&app, &body(idle)).await;
        assert_eq!(out["compressed"], compressed, "idle {idle:?}");
        if compressed {
            assert_eq!(out["reason"], "cold_cache");
        }
    }
    // Not yet near its trigger: left alone however cold.
    let far = json!({"messages": chat(15), "idle_seconds": 86_400});
    assert_eq!(compress(&app, &far).await["compressed"], false);
    // `0s` turns the rule off.
    let mut off = body(Some(86_400));
    off["config"]["provider_cache_ttl"] = json!("0s");
    assert_eq!(compress(&app, &off).await["compressed"], false);
    // A duration needs its unit.
    let mut bad = body(None);
    bad["config"]["provider_cache_ttl"] = json!("300");
    let r = post(&app, "/v1/compress", &bad).await;
    assert_eq!(r.status, 422, "{}", r.text());
}
