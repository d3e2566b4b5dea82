//! Golden counts made with OpenAI's Python tiktoken 0.14 (tests/fixtures/golden/tokens.json):
//! every case must come back from `/v1/tokens` with exactly the same number.

use serde_json::{Value, json};

use crate::support::common::{app, fixture, post};

#[tokio::test]
async fn every_golden_text_counts_as_tiktoken_does() {
    let app = app();
    let golden = fixture("golden/tokens.json");
    let texts = golden["texts"].as_array().unwrap();
    assert!(texts.len() >= 100, "the golden file lost its cases");
    let mut failures = Vec::new();
    for (i, case) in texts.iter().enumerate() {
        for encoding in ["cl100k_base", "o200k_base"] {
            let want = case[encoding].as_u64().unwrap();
            let r = post(
                &app,
                "/v1/tokens",
                &json!({"text": case["text"], "encoding": encoding}),
            )
            .await;
            assert_eq!(r.status, 200, "{}", r.text());
            let got = r.json()["total_tokens"].as_u64().unwrap();
            if got != want {
                failures.push(format!("text {i} {encoding}: want {want}, got {got}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn every_golden_thread_counts_as_the_cookbook_does() {
    let app = app();
    let golden = fixture("golden/tokens.json");
    let threads = golden["threads"].as_array().unwrap();
    assert!(threads.len() >= 50);
    for (i, case) in threads.iter().enumerate() {
        let r = post(
            &app,
            "/v1/tokens",
            &json!({"model": case["model"], "messages": case["messages"]}),
        )
        .await;
        assert_eq!(r.status, 200, "thread {i}: {}", r.text());
        let body = r.json();
        assert_eq!(body["encoding"], case["encoding"], "thread {i}");
        assert_eq!(
            body["total_tokens"], case["total_tokens"],
            "thread {i} ({})",
            case["model"]
        );
        assert_eq!(
            body["exact"], true,
            "thread {i}: plain OpenAI messages are exact"
        );
        assert_eq!(body["format"], "openai");

        // Per message: 3 overhead + the role (one token for system/user/assistant in
        // both encodings) + the golden content count, for messages without a name.
        let msgs = case["messages"].as_array().unwrap();
        let content = case["per_message_content_tokens"].as_array().unwrap();
        for (j, (m, c)) in msgs.iter().zip(content).enumerate() {
            if m.get("name").is_none() {
                let want = 3 + 1 + c.as_u64().unwrap();
                assert_eq!(
                    body["messages"][j]["tokens"].as_u64().unwrap(),
                    want,
                    "thread {i} message {j}"
                );
            }
        }
        let sum: u64 = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(sum + 3, body["total_tokens"].as_u64().unwrap());
    }
}

/// Each golden thread's messages, sent one text at a time, add up to the content counts.
#[tokio::test]
async fn golden_content_counts_match_text_counts() {
    let app = app();
    let golden = fixture("golden/tokens.json");
    for case in golden["threads"].as_array().unwrap().iter().take(10) {
        for (m, want) in case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .zip(case["per_message_content_tokens"].as_array().unwrap())
        {
            let r = post(
                &app,
                "/v1/tokens",
                &json!({"text": m["content"], "encoding": case["encoding"]}),
            )
            .await;
            assert_eq!(&r.json()["total_tokens"], want as &Value);
        }
    }
}
