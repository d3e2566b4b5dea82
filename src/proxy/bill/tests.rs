//! The answers below are the providers' documented shapes (Anthropic's
//! Messages streaming guide, OpenAI's Chat and Responses references), with
//! numbers of our own; each bill is worked out by hand from them.

use proptest::prelude::*;

use super::{Bill, Meter};
use crate::thread::WireFormat;

const SSE: Option<&str> = Some("text/event-stream; charset=utf-8");
const JSON: Option<&str> = Some("application/json");

const ANTHROPIC_STREAM: &str = concat!(
    "event: message_start\n",
    r#"data: {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-x", "stop_reason": null, "usage": {"input_tokens": 25, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 90000, "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}, "output_tokens": 1}}}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "report", "input": {}}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"usage\": {\"output_tokens\": 999"}}"#,
    "\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: message_delta\r\n",
    r#"data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}"#,
    "\r\n\r\nevent: message_stop\ndata: {\"type\": \"message_stop\"}\n\n",
);

const ANTHROPIC_STREAM_BILL: Bill = Bill {
    input: 25,
    cache_read: 90000,
    cache_write_5m: 1000,
    cache_write_1h: 2000,
    output: 15,
    reasoning: 0,
};

fn read(format: WireFormat, content_type: Option<&str>, chunks: &[&[u8]]) -> Meter {
    let mut meter = Meter::new(format, content_type);
    for chunk in chunks {
        meter.feed(chunk);
    }
    meter
}

#[test]
fn an_anthropic_stream_bills_its_start_and_its_last_delta() {
    let meter = read(WireFormat::Anthropic, SSE, &[ANTHROPIC_STREAM.as_bytes()]);
    assert_eq!(meter.bill(), Some(ANTHROPIC_STREAM_BILL));
    assert_eq!(meter.model.as_deref(), Some("claude-x"));
}

#[test]
fn an_anthropic_answer_without_the_lifetime_split_writes_for_five_minutes() {
    // The bill first: a tool's input or a text naming `usage` after it must not overwrite it.
    let body = r#"{"id":"msg_2","type":"message","usage":{"input_tokens":12,"cache_creation_input_tokens":40,"cache_read_input_tokens":0,"output_tokens":6},"content":[{"type":"tool_use","id":"t","name":"n","input":{"usage":{"input_tokens":7},"model":"tool's"}},{"type":"text","text":"the \"usage\": {\"input_tokens\": 8} is mine"}],"model":"claude-\"y\""}"#;
    let meter = read(WireFormat::Anthropic, JSON, &[body.as_bytes()]);
    let bill = Bill {
        input: 12,
        cache_write_5m: 40,
        output: 6,
        ..Bill::default()
    };
    assert_eq!(meter.bill(), Some(bill));
    // The answer's model, not one a tool's input names.
    assert_eq!(meter.model.as_deref(), Some("claude-\"y\""));
}

#[test]
fn openai_chat_counts_the_cached_part_apart_from_the_input() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0}}}"#;
    let meter = read(WireFormat::OpenAi, JSON, &[body.as_bytes()]);
    let bill = Bill {
        input: 86,
        cache_read: 1920,
        output: 300,
        reasoning: 256,
        ..Bill::default()
    };
    assert_eq!(meter.bill(), Some(bill));
}

#[test]
fn a_chat_stream_without_usage_has_no_bill() {
    let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"usage\"}}],\"usage\":null}\n\ndata: [DONE]\n\n";
    let meter = read(WireFormat::OpenAi, SSE, &[stream.as_bytes()]);
    assert_eq!(meter.bill(), None);
}

#[test]
fn a_responses_stream_bills_its_completed_event_and_counts_dropped_items() {
    let stream = concat!(
        "event: response.created\n",
        r#"data: {"type":"response.created","response":{"id":"resp_1","status":"in_progress","usage":null}}"#,
        "\n\nevent: response.output_text.delta\n",
        r#"data: {"type":"response.output_text.delta","delta":"\"usage\":{\"input_tokens\":1}"}"#,
        "\n\nevent: response.completed\n",
        r#"data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"type":"function_call","arguments":"{}","usage":{"input_tokens":5}}],"input_transformations":[{"type":"drop","id":"rs_1","reason":"prefix_mismatch"},{"id":"rs_2","reason":"prefix_mismatch"},{"id":"x","reason":"something new"}],"usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":700,"output_tokens_details":{"reasoning_tokens":600},"total_tokens":5700}}}"#,
        "\n\n",
    );
    let meter = read(WireFormat::Responses, SSE, &[stream.as_bytes()]);
    let bill = Bill {
        input: 904,
        cache_read: 4096,
        output: 700,
        reasoning: 600,
        ..Bill::default()
    };
    assert_eq!(meter.bill(), Some(bill));
    assert_eq!(meter.dropped, vec![("prefix_mismatch", 2), ("other", 1)]);
}

#[test]
fn an_error_or_garbage_has_no_bill_and_no_panic() {
    for body in [
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        "<html>502 Bad Gateway</html>",
        r#"{"usage": "#,
        r#"}}]]{"usage":[1,2"#,
        "\"\\",
    ] {
        for ct in [JSON, SSE] {
            let meter = read(WireFormat::Anthropic, ct, &[body.as_bytes()]);
            assert_eq!(meter.bill(), None, "{body}");
        }
    }
}

#[test]
fn a_usage_longer_than_any_bill_is_not_kept() {
    let long = format!(
        r#"{{"usage":{{"input_tokens":3,"pad":"{}"}}}}"#,
        "x".repeat(super::scan::MAX_VALUE)
    );
    let meter = read(WireFormat::Anthropic, JSON, &[long.as_bytes()]);
    assert_eq!(meter.bill(), None);
}

proptest! {
    /// However the bytes are cut into chunks, the bill is the same.
    #[test]
    fn the_bill_does_not_depend_on_where_chunks_are_cut(cuts in prop::collection::vec(0..ANTHROPIC_STREAM.len(), 0..12)) {
        let bytes = ANTHROPIC_STREAM.as_bytes();
        let mut cuts = cuts;
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for cut in cuts {
            chunks.push(&bytes[at..cut]);
            at = cut;
        }
        chunks.push(&bytes[at..]);
        let meter = read(WireFormat::Anthropic, SSE, &chunks);
        prop_assert_eq!(meter.bill(), Some(ANTHROPIC_STREAM_BILL));
        prop_assert_eq!(meter.model.as_deref(), Some("claude-x"));
    }
}
