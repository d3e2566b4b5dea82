//! Mid-conversation system messages, in every wire format: read, counted as
//! instructions, never summarized, and kept verbatim after the summary in
//! their original order.

use serde_json::{Value, json};

use crate::support::common::{app, chat, post};

const NOTE: &str = "SYSNOTE: from now on, run the tests before every commit";

/// 40 alternating messages with instructions at 9 and 20 (both inside the
/// span a summary replaces), in `format`'s shape; the request body.
fn body(format: &str) -> (Value, Vec<Value>) {
    let mut messages = chat(40);
    let (role_a, role_b) = match format {
        "anthropic" => ("system", "system"),
        _ => ("system", "developer"),
    };
    messages.insert(9, json!({"role": role_a, "content": format!("{NOTE} (1)")}));
    messages.insert(
        20,
        json!({"role": role_b, "content": format!("{NOTE} (2)")}),
    );
    let field = if format == "responses" {
        for m in &mut messages {
            m["type"] = json!("message");
        }
        "input"
    } else {
        "messages"
    };
    let mut body = json!({ field: messages, "format": format });
    if format == "anthropic" {
        body["system"] = json!("You are an agent.");
    }
    (body, messages)
}

#[tokio::test]
async fn instructions_stay_verbatim_after_the_summary_in_every_format() {
    let app = app();
    for format in ["openai", "anthropic", "responses"] {
        let (body, messages) = body(format);
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.status, 200, "{format}: {}", r.text());
        let out = r.json();
        let field = if format == "responses" {
            "input"
        } else {
            "messages"
        };
        let m = out[field].as_array().unwrap();
        assert!(out["compressed"].as_bool().unwrap(), "{format}: {out}");
        let summary = out["summary"]["content"].as_str().unwrap();
        assert!(
            !summary.contains("SYSNOTE"),
            "{format}: an instruction was summarized"
        );
        assert!(
            m[0].to_string().contains("[Context Summary - "),
            "{format}: the summary opens the thread: {}",
            m[0]
        );
        assert_eq!(
            m[1], messages[9],
            "{format}: the first instruction, verbatim"
        );
        assert_eq!(m[2], messages[20], "{format}: the second, in order");
        let n = m.len();
        assert_eq!(
            m[3..],
            messages[messages.len() - (n - 3)..],
            "{format}: the tail"
        );
        // The summary covers the conversation around them, not them.
        let last = out["summary"]["last_message_idx"].as_u64().unwrap() as usize;
        assert!(last > 20, "{format}: {last}");

        // What comes back is valid input, and counted with its instructions.
        let mut again = json!({ field: m, "format": format });
        if format == "anthropic" {
            again["system"] = out["system"].clone();
        }
        let r = post(&app, "/v1/tokens", &again).await;
        assert_eq!(r.status, 200, "{format}: {}", r.text());
        let counted = r.json();
        let flagged: Vec<bool> = counted["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| !c["index"].is_null())
            .map(|c| c["instruction"].as_bool().unwrap())
            .collect();
        assert_eq!(flagged[..3], [false, true, true], "{format}: {counted}");
        assert!(flagged[3..].iter().all(|f| !f), "{format}");
    }
}

/// The verdict counts the instructions a summary's span holds: they are
/// sent beside it. A client that keeps its full history and sends the
/// `summary` object back is measured as the compressed thread is counted.
#[tokio::test]
async fn the_verdict_counts_kept_instructions() {
    let app = app();
    let (body, _) = body("openai");
    let compressed = post(&app, "/v1/compress", &body).await.json();
    let sent = post(
        &app,
        "/v1/tokens",
        &json!({"messages": compressed["messages"]}),
    )
    .await
    .json();
    let mut again = body.clone();
    again["summary"] = compressed["summary"].clone();
    let v = post(&app, "/v1/verdict", &again).await;
    assert_eq!(v.status, 200, "{}", v.text());
    let v = v.json();
    assert_eq!(v["total_tokens"], sent["total_tokens"], "{v}");
}
