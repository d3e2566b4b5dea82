//! Issue 36: the summary message's header, `[Context Summary - N previous
//! messages]`, counts the messages the summary replaced: instructions in its
//! span come back verbatim after it and are not counted, in every format
//! and round after round.

use serde_json::{Value, json};

use crate::support::common::{app, chat, post};

/// 40 alternating messages with instructions at 9 and 20 (both inside the
/// span a summary replaces), in `format`'s shape; the request body's field.
fn body(format: &str) -> (Value, &'static str) {
    let mut messages = chat(40);
    messages.insert(
        9,
        json!({"role": "system", "content": "Run the tests first."}),
    );
    messages.insert(
        20,
        json!({"role": "system", "content": "Keep commits small."}),
    );
    let field = match format {
        "responses" => {
            for m in &mut messages {
                m["type"] = json!("message");
            }
            "input"
        }
        _ => "messages",
    };
    let mut body = json!({ field: messages, "format": format, "force": true });
    if format == "anthropic" {
        body["system"] = json!("You are an agent.");
    }
    (body, field)
}

/// The N of the header of `out`'s first message.
fn header(out: &Value, field: &str) -> usize {
    let first = out[field][0].to_string();
    let at = first
        .find("[Context Summary - ")
        .expect("a summary message")
        + 19;
    let n: String = first[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    n.parse().unwrap()
}

#[tokio::test]
async fn the_header_counts_the_messages_the_summary_replaced() {
    let app = app();
    for format in ["openai", "anthropic", "responses"] {
        let (body, field) = body(format);
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.status, 200, "{format}: {}", r.text());
        let out = r.json();
        let s = &out["summary"];
        let covered =
            s["last_message_idx"].as_u64().unwrap() - s["first_message_idx"].as_u64().unwrap() + 1;
        // Before: 17 of a span with 2 instructions counted them too.
        let n = header(&out, field);
        assert_eq!(n as u64, covered - 2, "{format}: {out}");
        assert_eq!(s["messages_summarized"], n, "{format}");

        // Sent back with 20 more messages: the next header adds what the
        // new summary replaced to what the previous one stands for.
        let mut thread = out[field].as_array().unwrap().clone();
        let mut more = chat(20);
        if format == "responses" {
            for m in &mut more {
                m["type"] = json!("message");
            }
        }
        thread.extend(more);
        let mut again = json!({ field: thread, "format": format, "force": true });
        if format == "anthropic" {
            again["system"] = out["system"].clone();
        }
        let r = post(&app, "/v1/compress", &again).await;
        assert_eq!(r.status, 200, "{format}: {}", r.text());
        let next = r.json();
        let s = &next["summary"];
        // The span: the two instructions and the messages after them.
        let span = (s["last_message_idx"].as_u64().unwrap()
            - s["first_message_idx"].as_u64().unwrap()) as usize;
        assert!(span > 2, "{format}: {next}");
        assert_eq!(header(&next, field), n + span - 2, "{format}: {next}");
    }
}

/// A summary object sent back without its count: `/v1/verdict` and
/// `/v1/compress` both take it to have replaced what it covers but the
/// instructions (the verdict counted them before).
#[tokio::test]
async fn a_summary_without_its_count_replaced_all_but_the_instructions() {
    let app = app();
    let (mut body, _) = body("openai");
    // Messages 0..=24 summarized, 9 and 20 among them instructions.
    let summary = json!({"content": "Earlier: the tests were fixed.", "last_message_idx": 24});
    body["summary"] = summary;
    let mut verdict = body.clone();
    verdict.as_object_mut().unwrap().remove("force");
    let r = post(&app, "/v1/verdict", &verdict).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["last_summary"]["messages_summarized"], 23);
    let r = post(&app, "/v1/compress", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    // The new summary extends it: its own span after message 24, plus 23.
    let s = &out["summary"];
    let span = s["last_message_idx"].as_u64().unwrap() - 24;
    assert_eq!(header(&out, "messages") as u64, 23 + span, "{out}");
}
