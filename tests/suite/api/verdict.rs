//! `/v1/verdict`: the rules at their boundaries, summaries, profiles, text output.

use serde_json::{Value, json};

use crate::support::common::{app, app_with, chat, get, post, send, thread};

async fn verdict(app: &axum::Router, body: Value) -> Value {
    let r = post(app, "/v1/verdict", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn exactly_n_messages_fires_and_one_less_does_not() {
    let app = app();
    let mut msgs = vec![json!({"role": "system", "content": "pinned, never counted"})];
    msgs.extend(chat(29));
    let v = verdict(&app, json!({"messages": msgs})).await;
    assert_eq!(v["messages_since_summary"], 29);
    assert_eq!(v["should_summarize"], false);
    assert_eq!(v["trigger"], Value::Null);

    msgs.extend(chat(1));
    let v = verdict(&app, json!({"messages": msgs})).await;
    assert_eq!(v["messages_since_summary"], 30);
    assert_eq!(v["trigger"], "messages");
    assert_eq!(v["messages_percent"], 100.0);
    assert_eq!(v["messages_threshold"], 30);
}

#[tokio::test]
async fn exactly_k_tokens_fires_and_one_less_does_not() {
    let app = app();
    let msgs = chat(12);
    let total = post(&app, "/v1/tokens", &json!({"messages": msgs}))
        .await
        .json()["total_tokens"]
        .as_u64()
        .unwrap();
    let v = verdict(
        &app,
        json!({"messages": msgs, "config": {"max_tokens_before_summary": total}}),
    )
    .await;
    assert_eq!(
        v["total_tokens"], total,
        "the verdict counts what /v1/tokens counts"
    );
    assert_eq!(v["trigger"], "tokens");
    let v = verdict(
        &app,
        json!({"messages": msgs, "config": {"max_tokens_before_summary": total + 1}}),
    )
    .await;
    assert_eq!(v["trigger"], Value::Null);
}

#[tokio::test]
async fn too_few_messages_is_never_due_unless_the_window_overflows() {
    let app = app();
    // min_recent 6 + 4 = 10: nine messages with the token threshold long passed.
    let msgs = chat(9);
    let v = verdict(&app, json!({"messages": msgs, "config": {"max_tokens_before_summary": 1, "max_messages_before_summary": 1}})).await;
    assert_eq!(v["should_summarize"], false);
    // Ten is enough.
    let v = verdict(&app, json!({"messages": chat(10), "config": {"max_tokens_before_summary": 1, "max_messages_before_summary": 1}})).await;
    assert_eq!(v["trigger"], "messages");
    // Over the window the next call would fail: due whatever the count of messages.
    let big = vec![json!({"role": "user", "content": "word ".repeat(3000)})];
    let v = verdict(
        &app,
        json!({"messages": big, "config": {"context_window": 3000, "response_reserve": 0}}),
    )
    .await;
    assert_eq!(v["trigger"], "context_window");
    assert!(v["available_tokens"].as_i64().unwrap() < 0);
}

#[tokio::test]
async fn a_summary_excludes_what_it_covers_and_adds_itself() {
    let app = app();
    let mut msgs = vec![json!({"role": "system", "content": "sys"})];
    msgs.extend(chat(40));
    let full = verdict(&app, json!({"messages": msgs})).await;
    assert_eq!(full["messages_since_summary"], 40);

    let summary = json!({"last_message_idx": 30, "content": "The user asked for X; we did Y.", "strategy": "heuristic", "cached": false});
    let v = verdict(&app, json!({"messages": msgs, "summary": summary})).await;
    assert_eq!(v["messages_since_summary"], 10);
    assert_eq!(v["trigger"], Value::Null);

    // Tokens: pinned + summary message + the 10 after it + priming.
    let tail: Vec<Value> = std::iter::once(msgs[0].clone())
        .chain(std::iter::once(
            json!({"role": "user", "content": "[Context Summary - 31 previous messages]\n\nThe user asked for X; we did Y."}),
        ))
        .chain(msgs[31..].iter().cloned())
        .collect();
    let want = post(&app, "/v1/tokens", &json!({"messages": tail}))
        .await
        .json()["total_tokens"]
        .clone();
    assert_eq!(v["total_tokens"], want);

    let r = post(
        &app,
        "/v1/verdict",
        &json!({"messages": msgs, "summary": {"last_message_idx": 41}}),
    )
    .await;
    assert_eq!(r.pointers(), ["/summary/last_message_idx"]);
}

#[tokio::test]
async fn anthropic_threads_get_the_same_verdict_shape() {
    let app = app();
    let v = verdict(&app, thread("medium-02.anthropic")).await;
    assert_eq!(v["format"], "anthropic");
    assert_eq!(v["trigger"], "messages");
    assert_eq!(v["context_window"], 200000);
    let t = thread("medium-02.anthropic");
    // The top-level system is pinned; every message in `messages` is conversation.
    assert_eq!(
        v["messages_since_summary"],
        t["messages"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn text_plain_is_a_status_block_for_people() {
    let app = app();
    let body = serde_json::to_vec(&json!({"messages": chat(31)})).unwrap();
    let req = axum::http::Request::post("/v1/verdict")
        .header("content-type", "application/json")
        .header("accept", "text/plain")
        .body(axum::body::Body::from(body))
        .unwrap();
    let r = send(&app, req).await;
    assert_eq!(r.status, 200);
    assert!(r.content_type().starts_with("text/plain"));
    let text = r.text();
    assert!(text.contains("31 / 30 (103.3%)"), "{text}");
    assert!(text.contains("[████████████████████]"), "{text}");
    assert!(text.contains("Summarization is due"), "{text}");
    assert!(text.contains("messages since the last summary"), "{text}");
}

/// The status block only when text is asked for and JSON is not.
#[tokio::test]
async fn accept_chooses_text_only_without_json() {
    let app = app();
    let body = serde_json::to_vec(&json!({"messages": chat(2)})).unwrap();
    for (accept, answer) in [
        ("text/plain; charset=utf-8", "text/plain; charset=utf-8"),
        ("text/plain, application/json", "application/json"),
        ("*/*", "application/json"),
    ] {
        let req = axum::http::Request::post("/v1/verdict")
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(axum::body::Body::from(body.clone()))
            .unwrap();
        let r = send(&app, req).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.content_type(), answer, "Accept: {accept}");
    }
}

#[tokio::test]
async fn profiles_from_a_file_are_listed_and_used() {
    let dir = std::env::temp_dir().join(format!("condense-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("profiles.toml");
    std::fs::write(&file, "[profiles.quick]\nmax_messages_before_summary = 15\nmax_tokens_before_summary = 32000\n\n[profiles.researcher]\nmax_messages_before_summary = 50\nmax_tokens_before_summary = 180000\n").unwrap();
    let app = app_with(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(file),
            ..Default::default()
        },
        ..Default::default()
    });

    let listed = get(&app, "/v1/profiles").await.json();
    assert_eq!(
        listed["profiles"]["quick"]["max_messages_before_summary"],
        15
    );
    assert_eq!(
        listed["profiles"]["researcher"]["max_tokens_before_summary"],
        180000
    );
    assert_eq!(
        listed["profiles"]["default"]["max_messages_before_summary"],
        30
    );

    let v = verdict(&app, json!({"messages": chat(16), "profile": "quick"})).await;
    assert_eq!(v["trigger"], "messages");
    assert_eq!(v["profile"], "quick");
    let v = verdict(&app, json!({"messages": chat(16), "profile": "quick", "config": {"max_messages_before_summary": 20}})).await;
    assert_eq!(v["trigger"], Value::Null);

    let r = post(
        &app,
        "/v1/verdict",
        &json!({"messages": chat(2), "profile": "nope"}),
    )
    .await;
    assert_eq!(r.pointers(), ["/profile"]);
}

#[tokio::test]
async fn config_typos_and_absurd_values_are_rejected() {
    let app = app();
    let r = post(
        &app,
        "/v1/verdict",
        &json!({"messages": chat(2), "config": {"max_mesages_before_summary": 3}}),
    )
    .await;
    assert_eq!(r.pointers(), ["/config/max_mesages_before_summary"]);
    for (field, value) in [
        ("max_messages_before_summary", json!(-1)),
        ("max_messages_before_summary", json!(0)),
        ("max_tokens_before_summary", json!(1.5)),
        ("context_window", json!(1e12)),
        ("response_reserve", json!("4096")),
    ] {
        let r = post(
            &app,
            "/v1/verdict",
            &json!({"messages": chat(2), "config": {field: value}}),
        )
        .await;
        assert_eq!(
            r.pointers(),
            [format!("/config/{field}")],
            "{field}={value}"
        );
    }
}

#[tokio::test]
async fn models_are_listed() {
    let body = get(&app(), "/v1/models").await.json();
    assert_eq!(body["default_model"], "gpt-4o");
    let models = body["models"].as_array().unwrap();
    assert!(
        models
            .iter()
            .any(|m| m["prefix"] == "claude-" && m["calibration"] == 1.25)
    );
    assert!(
        models
            .iter()
            .all(|m| m["context_window"].as_u64().unwrap() > 0)
    );
}

/// A summary only when it pays: the same due thread is summarized for
/// gpt-4o (no write premium, reads at 0.5x) and held back for Claude (writes
/// at 1.25x, reads at 0.1x) until `max_payback_turns` allows its payback.
#[tokio::test]
async fn the_model_s_cache_prices_decide_whether_a_summary_pays() {
    let app = app();
    let msgs: Vec<Value> = (0..40)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("step {i}: {}", "word ".repeat(500))})
        })
        .collect();
    let openai = verdict(&app, json!({"messages": msgs, "model": "gpt-4o"})).await;
    assert_eq!(openai["trigger"], "messages");
    assert_eq!(openai["held_back"], Value::Null);

    let claude = verdict(
        &app,
        json!({"messages": msgs, "model": "claude-sonnet-4-5"}),
    )
    .await;
    assert_eq!(claude["should_summarize"], false);
    assert_eq!(claude["trigger"], Value::Null);
    let why = claude["held_back"].as_str().unwrap();
    assert!(
        why.starts_with("a summary is due (messages), but it would not pay for itself"),
        "{why}"
    );
    assert!(
        why.contains("(read 0.1x, write 1.25x the input price)"),
        "{why}"
    );
    assert!(why.contains("over max_payback_turns 0"), "{why}");

    let patient =
        json!({"messages": msgs, "model": "claude-sonnet-4-5", "config": {"max_payback_turns": 5}});
    let claude = verdict(&app, patient).await;
    assert_eq!(claude["trigger"], "messages");
    assert_eq!(claude["held_back"], Value::Null);
}

/// The verdict counts a new summary at its writer's bound; a compression
/// the heuristic writes weighs it as written: the same Claude thread is
/// held back by the one and summarized by the other, and the summary then
/// costs no more on its turn than reading the cached thread.
#[tokio::test]
async fn a_compression_weighs_the_heuristic_summary_as_written() {
    let app = app();
    // The same long request again and again, short answers: the heuristic's
    // summary is short, far below its bound.
    let msgs: Vec<Value> = (0..100)
        .map(|i| match i % 2 {
            0 => json!({"role": "user", "content": "word ".repeat(500)}),
            _ => json!({"role": "assistant", "content": "ok"}),
        })
        .collect();
    let claude = json!({"messages": msgs, "model": "claude-sonnet-4-5"});
    let v = verdict(&app, claude.clone()).await;
    assert_eq!(v["trigger"], Value::Null);
    let why = v["held_back"].as_str().unwrap();
    assert!(why.contains("it leaves about"), "{why}");

    let r = post(&app, "/v1/compress", &claude).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    assert_eq!(out["compressed"], true, "{out}");
    assert_eq!(out["reason"], "messages");
    assert_eq!(out["summary"]["strategy"], "heuristic");
    // Written anew at 1.25x, what is left costs no more than reading what
    // it replaces at 0.1x (the pinned prefix aside: there is none).
    let (before, after) = (
        out["tokens_before"].as_f64().unwrap(),
        out["tokens_after"].as_f64().unwrap(),
    );
    assert!(1.25 * after <= 0.1 * before, "{before} -> {after}");
}

/// What the payback rule weighs as written is what compression writes: a
/// thread whose summary does not pay is held back, saying what the summary
/// would leave, and forced it leaves exactly that.
#[tokio::test]
async fn the_summary_weighed_as_written_is_the_one_written() {
    let app = app();
    // Each request its own: a summary near its bound, too long to pay,
    // where the newest messages alone would leave room for one that does.
    let msgs: Vec<Value> = (0..100)
        .map(|i| match i % 2 {
            0 => json!({"role": "user", "content": format!("step {i}: {}", "word ".repeat(500))}),
            _ => json!({"role": "assistant", "content": "ok"}),
        })
        .collect();
    let claude = json!({"messages": msgs, "model": "claude-sonnet-4-5"});
    let out = post(&app, "/v1/compress", &claude).await.json();
    assert_eq!(out["compressed"], false, "{out}");
    let warnings = out["warnings"].as_array().unwrap();
    let why = warnings
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.contains("would not pay for itself"))
        .unwrap();
    let number = |after: &str| -> u64 {
        let rest = &why[why.find(after).unwrap() + after.len()..];
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    let leaves = number("with its summary as written, it leaves ");
    let compressible = number(&format!("it leaves {leaves} of the "));

    let mut forced = claude.clone();
    forced["force"] = json!(true);
    let out = post(&app, "/v1/compress", &forced).await.json();
    assert_eq!(out["compressed"], true, "{out}");
    let (before, after) = (
        out["tokens_before"].as_u64().unwrap(),
        out["tokens_after"].as_u64().unwrap(),
    );
    // The same pinned part (here the reply's priming) before and after.
    assert_eq!(after - (before - compressible), leaves, "{why}");
}
