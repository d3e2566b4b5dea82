//! `/v1/tokens`: both wire formats, the sum rule, estimates and their flags.

use serde_json::{Value, json};

use crate::support::common::{app, post, thread};

fn sum_rule(body: &Value) {
    let per: u64 = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    let tools = body["tools_tokens"].as_u64().unwrap();
    assert_eq!(
        per + tools + 3,
        body["total_tokens"].as_u64().unwrap(),
        "{body}"
    );
}

#[tokio::test]
async fn both_wire_formats_of_every_fixture_thread_are_counted() {
    let app = app();
    for name in ["small-00", "small-01", "medium-02", "medium-03", "large-04"] {
        for (fmt, n_system) in [("openai", 0), ("anthropic", 1)] {
            let t = thread(&format!("{name}.{fmt}"));
            let r = post(&app, "/v1/tokens", &t).await;
            assert_eq!(r.status, 200, "{name}.{fmt}: {}", r.text());
            let body = r.json();
            assert_eq!(body["format"], fmt, "format is detected");
            sum_rule(&body);
            let n = t["messages"].as_array().unwrap().len();
            assert_eq!(body["messages"].as_array().unwrap().len(), n + n_system);
            // Tool calls and schemas have no official formula.
            assert_eq!(body["exact"], false);
            assert!(body["tools_tokens"].as_u64().unwrap() > 0);
        }
    }
}

#[tokio::test]
async fn the_same_thread_costs_about_the_same_in_both_formats() {
    let app = app();
    let mut totals = Vec::new();
    for fmt in ["openai", "anthropic"] {
        let mut t = thread(&format!("medium-02.{fmt}"));
        t["model"] = json!("gpt-4o");
        totals.push(
            post(&app, "/v1/tokens", &t).await.json()["total_tokens"]
                .as_f64()
                .unwrap(),
        );
    }
    let ratio = totals[0] / totals[1];
    assert!(
        (0.9..1.1).contains(&ratio),
        "openai {} vs anthropic {}",
        totals[0],
        totals[1]
    );
}

#[tokio::test]
async fn anthropic_system_is_reported_first_without_an_index() {
    let app = app();
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let body = r.json();
    assert_eq!(body["format"], "anthropic");
    assert_eq!(body["messages"][0]["index"], Value::Null);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["index"], 0);
    sum_rule(&body);
}

#[tokio::test]
async fn special_token_text_is_ordinary_text() {
    let app = app();
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"text": "a <|endoftext|> b <|im_start|>", "model": "gpt-4"}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.json()["total_tokens"].as_u64().unwrap() > 4);
}

#[tokio::test]
async fn non_openai_models_are_calibrated_estimates() {
    let app = app();
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(40);
    let gpt = post(
        &app,
        "/v1/tokens",
        &json!({"text": text, "model": "gpt-4o"}),
    )
    .await
    .json();
    let claude = post(
        &app,
        "/v1/tokens",
        &json!({"text": text, "model": "claude-sonnet-4-5"}),
    )
    .await
    .json();
    assert_eq!(gpt["exact"], true);
    assert_eq!(claude["exact"], false);
    assert_eq!(claude["encoding"], "o200k_base");
    let raw = gpt["total_tokens"].as_f64().unwrap();
    assert_eq!(
        claude["total_tokens"].as_f64().unwrap(),
        (raw * 1.25).ceil()
    );
    assert_eq!(claude["context_window"], 200000);
    assert!(!claude["warnings"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn unknown_model_uses_the_default_encoding_with_a_warning() {
    let app = app();
    let body = post(
        &app,
        "/v1/tokens",
        &json!({"text": "hello", "model": "my-llm-7b"}),
    )
    .await
    .json();
    assert_eq!(body["exact"], false);
    assert_eq!(body["encoding"], "o200k_base");
    assert!(body["warnings"][0].as_str().unwrap().contains("my-llm-7b"));
}

#[tokio::test]
async fn every_encoding_counts_and_an_override_is_an_estimate() {
    let app = app();
    for enc in ["o200k_base", "cl100k_base", "p50k_base", "r50k_base"] {
        let body = post(
            &app,
            "/v1/tokens",
            &json!({"text": "hello world", "encoding": enc}),
        )
        .await
        .json();
        assert_eq!(body["encoding"], enc);
        assert_eq!(body["total_tokens"], 2, "{enc}");
        assert_eq!(
            body["exact"],
            enc == "o200k_base",
            "gpt-4o's own encoding is exact, an override is not"
        );
    }
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"text": "x", "encoding": "gpt2"}),
    )
    .await;
    assert_eq!(r.pointers(), ["/encoding"]);
}

#[tokio::test]
async fn chars_method_is_ceil_of_length_over_chars_per_token() {
    let app = app();
    let body = post(
        &app,
        "/v1/tokens",
        &json!({"text": "abcdefgh", "method": "chars", "chars_per_token": 3.5}),
    )
    .await
    .json();
    assert_eq!(body["total_tokens"], 3); // ceil(8 / 3.5)
    assert_eq!(body["exact"], false);
    assert_eq!(body["method"], "chars");
    let body = post(
        &app,
        "/v1/tokens",
        &json!({"text": "ééééé", "chars_per_token": 4}),
    )
    .await
    .json();
    assert_eq!(body["total_tokens"], 2, "characters, not bytes");
    // Per message: 3 + ceil(4/4) for "user" + ceil(8/4) for the content.
    let body = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [{"role": "user", "content": "12345678"}], "method": "chars"}),
    )
    .await
    .json();
    assert_eq!(body["messages"][0]["tokens"], 6);
    assert_eq!(body["total_tokens"], 9);
    for bad in [json!(0), json!(-1), json!(1e9)] {
        let r = post(
            &app,
            "/v1/tokens",
            &json!({"text": "x", "method": "chars", "chars_per_token": bad}),
        )
        .await;
        assert_eq!(r.pointers(), ["/chars_per_token"]);
    }
}

#[tokio::test]
async fn names_cost_their_tokens_plus_one() {
    let app = app();
    let plain = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await
    .json();
    let named = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [{"role": "user", "content": "hi", "name": "bob"}]}),
    )
    .await
    .json();
    // "bob" is one token in o200k.
    assert_eq!(
        named["total_tokens"].as_u64().unwrap(),
        plain["total_tokens"].as_u64().unwrap() + 2
    );
    assert_eq!(named["exact"], true);
}

#[tokio::test]
async fn media_and_tool_parts_are_approximations() {
    let app = app();
    let body = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}}
        ]}]}),
    )
    .await
    .json();
    assert_eq!(body["exact"], false);
    // 3 + "user" + "what is this?" (4 tokens) + 85 for a low-detail image.
    assert_eq!(body["messages"][0]["tokens"], 3 + 1 + 4 + 85);
}

#[tokio::test]
async fn text_and_messages_together_or_neither_is_an_error() {
    let app = app();
    assert_eq!(
        post(&app, "/v1/tokens", &json!({"text": "a", "messages": []}))
            .await
            .pointers(),
        ["/text"]
    );
    assert_eq!(
        post(&app, "/v1/tokens", &json!({"model": "gpt-4o"}))
            .await
            .pointers(),
        ["/messages"]
    );
}

/// The per-message memo (a resent history is counted from it) answers
/// what a cold count answers: a message with one byte changed is counted
/// again, not taken for the one it resembles. The cold reference is the
/// bare text's count (never memoized) plus the cookbook's framing.
#[tokio::test]
async fn a_warm_memo_counts_what_a_cold_count_does_a_changed_byte_included() {
    let app = app();
    let sent = thread("large-04.openai");
    let (at, role, longest) = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        // A plain message: a string content, no name, no calls (a tool
        // message's framing differs).
        .filter(|(_, m)| {
            m["role"] != "tool" && m.get("name").is_none() && m.get("tool_calls").is_none()
        })
        .filter_map(|(i, m)| Some((i, m["role"].clone(), m["content"].as_str()?.to_owned())))
        .max_by_key(|(_, _, c)| c.len())
        .unwrap();
    let middle = longest.len() / 2;
    let j = middle
        + longest[middle..]
            .find(|c: char| c.is_ascii_lowercase())
            .unwrap();
    let mut text = longest.clone();
    text.replace_range(j..=j, if &text[j..=j] == "a" { "b" } else { "a" });
    let mut changed = sent.clone();
    changed["messages"][at]["content"] = json!(text);
    let bare = |text: Value| {
        let (app, model) = (app.clone(), sent["model"].clone());
        async move {
            let body = json!({"text": text, "model": model});
            let r = post(&app, "/v1/tokens", &body).await.json();
            r["total_tokens"].as_u64().unwrap()
        }
    };
    // MESSAGE_OVERHEAD (3) + the role + the content.
    let framed = 3 + bare(role).await;

    let first = post(&app, "/v1/tokens", &sent).await.json();
    let warm = post(&app, "/v1/tokens", &sent).await.json();
    assert_eq!(warm, first);
    assert_eq!(
        warm["messages"][at]["tokens"],
        framed + bare(json!(longest)).await
    );
    let resent = post(&app, "/v1/tokens", &changed).await.json();
    sum_rule(&resent);
    assert_eq!(
        resent["messages"][at]["tokens"],
        framed + bare(json!(text)).await
    );
    for (i, (a, b)) in warm["messages"]
        .as_array()
        .unwrap()
        .iter()
        .zip(resent["messages"].as_array().unwrap())
        .enumerate()
    {
        if i != at {
            assert_eq!(a, b, "message {i}");
        }
    }
}

/// A resent thread's unchanged messages are recognised from their JSON text
/// (not parsed again): a wrong one among them still gets the 422 naming its
/// field, both a field of its own and a tool pairing that the messages
/// recognised around it break; and the field pointers name the message's
/// index in this request, not where it sat when it was remembered.
#[tokio::test]
async fn a_wrong_message_after_a_warm_up_is_a_422_naming_its_field() {
    let app = app();
    let sent = thread("medium-02.openai");
    assert_eq!(post(&app, "/v1/tokens", &sent).await.status, 200);

    let mut wrong_role = sent.clone();
    wrong_role["messages"][4]["role"] = json!("wizard");
    let r = post(&app, "/v1/tokens", &wrong_role).await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["pointer"], "/messages/4/role");

    // Message 3 answers message 2's call: with another id it answers none,
    // and message 2's call (recognised, not parsed) has no result.
    let mut unpaired = sent.clone();
    unpaired["messages"][3]["tool_call_id"] = json!("call_nobody");
    let r = post(&app, "/v1/tokens", &unpaired).await;
    assert_eq!(r.status, 422, "{}", r.text());
    let errors = r.json()["errors"].clone();
    let pointers: Vec<&str> = errors
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/messages/3/tool_call_id"), "{errors}");
    assert!(
        pointers.contains(&"/messages/2/tool_calls/0/id"),
        "{errors}"
    );

    // The same messages one place later (a user turn first): their records
    // are found, and their pointers follow them.
    let mut shifted = unpaired.clone();
    let messages = shifted["messages"].as_array_mut().unwrap();
    messages.insert(1, json!({"role": "user", "content": "first"}));
    let r = post(&app, "/v1/tokens", &shifted).await;
    assert_eq!(r.status, 422, "{}", r.text());
    let errors = r.json()["errors"].to_string();
    assert!(errors.contains("/messages/4/tool_call_id"), "{errors}");
    assert!(errors.contains("/messages/3/tool_calls/0/id"), "{errors}");
}
