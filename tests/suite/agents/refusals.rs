//! The scripted provider refuses what the real APIs refuse, with their
//! messages, and accepts what they accept: each rule of `emulator/` driven
//! with hand-made requests, so a green session means the rules were live.

use serde_json::{Value, json};

use super::harness::Provider;

const BETA: &str = "interleaved-thinking-2025-05-14";
const MID_SYSTEM: &str = "mid-conversation-system-2026-04-07";
const BINDING: &str = "thinking-binding-controls-2026-08-01";

async fn post(provider: &Provider, path: &str, beta: &str, body: &Value) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(format!("{}{path}", provider.url))
        .header("anthropic-beta", beta)
        .json(body)
        .send()
        .await
        .expect("the provider answers");
    (res.status().as_u16(), res.json().await.expect("JSON"))
}

/// The `type` of each event of a streamed answer, with its block's or
/// delta's type (`content_block_delta:thinking_delta`).
async fn sse_events(provider: &Provider, path: &str, body: &Value) -> Vec<String> {
    let res = reqwest::Client::new()
        .post(format!("{}{path}", provider.url))
        .header("anthropic-beta", BETA)
        .json(body)
        .send()
        .await
        .expect("the provider answers");
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap();
            let inner = v["content_block"]["type"]
                .as_str()
                .or(v["delta"]["type"].as_str());
            match (v["type"].as_str().unwrap(), inner) {
                (t @ ("content_block_start" | "content_block_delta"), Some(i)) => {
                    format!("{t}:{i}")
                }
                (t, _) => t.to_string(),
            }
        })
        .collect()
}

fn message_of(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

fn anthropic(system: &str, messages: Value) -> Value {
    json!({
        "model": "claude-test", "max_tokens": 100, "system": system,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "thinking": {"type": "adaptive"}, "messages": messages,
    })
}

fn result(id: &Value, step: u32) -> Value {
    let text = format!("AGENT-STEP-{step}-DONE");
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_holds_anthropic_rules() {
    let Some(()) = super::live::agent_clis("the_provider_holds_anthropic_rules") else {
        return;
    };
    let provider = Provider::start();
    let user = json!({"role": "user", "content": "go"});
    let (status, first) = post(
        &provider,
        "/v1/messages",
        BETA,
        &anthropic("S", json!([user])),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let turn = json!({"role": "assistant", "content": first["content"]});
    let call = &first["content"][1]["id"];
    assert_eq!(first["content"][0]["type"], "thinking", "{first}");

    // The thread as the model left it is accepted, cache_control moves too.
    let thread = json!([user, turn, result(call, 1)]);
    let (status, ok) = post(
        &provider,
        "/v1/messages",
        BETA,
        &anthropic("S", thread.clone()),
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    let mut moved = thread.clone();
    moved[2]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    assert_eq!(
        post(&provider, "/v1/messages", BETA, &anthropic("S", moved))
            .await
            .0,
        200
    );

    // A changed prefix unbinds the thinking block.
    let (status, refused) = post(
        &provider,
        "/v1/messages",
        BETA,
        &anthropic("S2", thread.clone()),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        refused,
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages.1.content.0: The block is bound to a different conversation"}})
    );
    // ... unless the request opts into dropping it: then the loop may go
    // on without it, and the new block is bound to the thread as dropped.
    let mut opted = anthropic("S2", thread.clone());
    opted["thinking"]["block_binding"] = json!({"prefix_mismatch_behavior": "drop_block"});
    let both = format!("{BETA},{BINDING}");
    assert_eq!(
        post(&provider, "/v1/messages", BETA, &opted).await.0,
        400,
        "the beta is needed too"
    );
    let (status, dropped) = post(&provider, "/v1/messages", &both, &opted).await;
    assert_eq!(status, 200, "{dropped}");
    assert_eq!(
        dropped["input_transformations"][0]["path"],
        "messages.1.content.0"
    );
    let without = json!({"role": "assistant", "content": [first["content"][1]]});
    let next = json!({"role": "assistant", "content": dropped["content"]});
    let call2 = &dropped["content"][1]["id"];
    opted["messages"] = json!([user, without, result(call, 1), next, result(call2, 2)]);
    let (status, later) = post(&provider, "/v1/messages", &both, &opted).await;
    assert_eq!(status, 200, "{later}");
    assert_eq!(later.get("input_transformations"), None, "{later}");

    // The last assistant turn of a tool loop opens with its thinking.
    let bare = json!([user, without, result(call, 1)]);
    let (status, refused) = post(&provider, "/v1/messages", BETA, &anthropic("S", bare)).await;
    assert_eq!(status, 400);
    assert!(message_of(&refused).starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."), "{refused}");
    // ... a system message after the results does not end the loop.
    let note = json!({"role": "system", "content": "note"});
    let noted = json!([user, without, result(call, 1), note]);
    let (status, _) = post(&provider, "/v1/messages", BETA, &anthropic("S", noted)).await;
    assert_eq!(status, 400);

    // Tool calls pair up.
    let unanswered = json!([user, turn, {"role": "user", "content": "next"}]);
    let (_, refused) = post(&provider, "/v1/messages", BETA, &anthropic("S", unanswered)).await;
    assert!(
        message_of(&refused).contains("`tool_use` ids were found without `tool_result` blocks"),
        "{refused}"
    );
    let orphan = json!([user, {"role": "assistant", "content": "hm"}, result(call, 1)]);
    let (_, refused) = post(&provider, "/v1/messages", BETA, &anthropic("S", orphan)).await;
    assert!(
        message_of(&refused).contains("unexpected `tool_use_id` found in `tool_result`"),
        "{refused}"
    );

    // Streamed, the blocks arrive as Anthropic sends them.
    let mut streamed = anthropic("S", thread.clone());
    streamed["stream"] = json!(true);
    let events = sse_events(&provider, "/v1/messages", &streamed).await;
    assert_eq!(
        events,
        [
            "message_start",
            "ping",
            "content_block_start:thinking",
            "content_block_delta:thinking_delta",
            "content_block_delta:signature_delta",
            "content_block_stop",
            "content_block_start:tool_use",
            "content_block_delta:input_json_delta",
            "content_block_delta:input_json_delta",
            "content_block_delta:input_json_delta",
            "content_block_delta:input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );

    // Counting reads the same thread, with the same rules.
    let mut count = anthropic("S", thread.clone());
    count.as_object_mut().unwrap().remove("max_tokens");
    let (status, counted) = post(&provider, "/v1/messages/count_tokens", BETA, &count).await;
    assert!(
        status == 200 && counted["input_tokens"].as_u64() > Some(0),
        "{counted}"
    );
    count["system"] = json!("S2");
    assert_eq!(
        post(&provider, "/v1/messages/count_tokens", BETA, &count)
            .await
            .0,
        400
    );

    // A thinking text changed after it was signed.
    let mut forged = thread.clone();
    forged[1]["content"][0]["thinking"] = json!("something else");
    let (_, refused) = post(&provider, "/v1/messages", BETA, &anthropic("S", forged)).await;
    assert_eq!(
        message_of(&refused),
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_holds_mid_conversation_system_rules() {
    let Some(()) = super::live::agent_clis("the_provider_holds_mid_conversation_system_rules")
    else {
        return;
    };
    let system = json!([{"role": "user", "content": "go"}, {"role": "system", "content": "note"}]);
    let mut body = anthropic("S", system);
    body.as_object_mut().unwrap().remove("thinking");
    // Generally available, as the pinned Claude Code assumes...
    let ga = Provider::start();
    assert_eq!(post(&ga, "/v1/messages", BETA, &body).await.0, 200);
    body["messages"][0]["role"] = json!("system");
    let (_, refused) = post(&ga, "/v1/messages", BETA, &body).await;
    assert!(
        message_of(&refused).contains("use the top-level `system` parameter"),
        "{refused}"
    );
    // ... or behind its beta header.
    let beta_only = Provider::start_with(&[("PROVIDER_MID_CONVERSATION_SYSTEM", "beta")]);
    body["messages"][0]["role"] = json!("user");
    let (status, refused) = post(&beta_only, "/v1/messages", BETA, &body).await;
    assert_eq!(status, 400);
    assert!(message_of(&refused).contains(MID_SYSTEM), "{refused}");
    let both = format!("{BETA},{MID_SYSTEM}");
    assert_eq!(post(&beta_only, "/v1/messages", &both, &body).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_holds_responses_rules() {
    let Some(()) = super::live::agent_clis("the_provider_holds_responses_rules") else {
        return;
    };
    let provider = Provider::start();
    let body = |input: Value| {
        json!({"model": "gpt-test", "store": false, "reasoning": {"effort": "low"},
               "include": ["reasoning.encrypted_content"], "input": input,
               "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]})
    };
    let user = json!({"type": "message", "role": "user", "content": "go"});
    let (status, first) = post(&provider, "/v1/responses", "", &body(json!([user]))).await;
    assert_eq!(status, 200, "{first}");
    let (reasoning, call) = (&first["output"][0], &first["output"][1]);
    assert_eq!(reasoning["type"], "reasoning", "{first}");
    let output = json!({"type": "function_call_output", "call_id": call["call_id"], "output": "AGENT-STEP-1-DONE"});

    let (status, ok) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, reasoning, call, output])),
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    let (status, refused) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, call, output])),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        message_of(&refused),
        format!(
            "Item '{}' of type 'function_call' was provided without its required 'reasoning' item: '{}'.",
            call["id"].as_str().unwrap(),
            reasoning["id"].as_str().unwrap()
        )
    );
    // Sent without its item id, the call is not paired with its reasoning.
    let mut unpaired = call.clone();
    unpaired.as_object_mut().unwrap().shift_remove("id");
    let (status, ok) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, unpaired, output])),
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok.get("input_transformations"), None, "{ok}");
    // Reasoning after a changed prefix is dropped, listed, not refused.
    let edited = json!({"type": "message", "role": "user", "content": "go on"});
    let (status, dropped) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([edited, reasoning, call, output])),
    )
    .await;
    assert_eq!(status, 200, "{dropped}");
    assert_eq!(
        dropped["input_transformations"],
        json!([{"type": "drop", "id": reasoning["id"], "reason": "prefix_mismatch"}])
    );
    // A compaction_trigger only as the final item.
    let trigger = json!({"type": "compaction_trigger"});
    let (status, ok) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, reasoning, call, output, trigger])),
    )
    .await;
    assert_eq!(status, 200, "{ok}");
    let (status, refused) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, trigger, reasoning, call, output])),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        message_of(&refused).contains("must be the final input item"),
        "{refused}"
    );
    let mut altered = reasoning.clone();
    altered["encrypted_content"] = json!(format!(
        "{}x",
        reasoning["encrypted_content"].as_str().unwrap()
    ));
    let (_, refused) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, altered, call, output])),
    )
    .await;
    assert!(
        message_of(&refused).contains("could not be verified"),
        "{refused}"
    );

    // OpenAI's own compaction: asked without instructions, an opaque item
    // after which reasoning keeps its place whatever the prefix was; a
    // compaction item the provider did not make is refused.
    let span = json!({"model": "gpt-test", "input": [user, reasoning, call, output]});
    let (status, compacted) = post(&provider, "/v1/responses/compact", "", &span).await;
    assert_eq!(status, 200, "{compacted}");
    let item = compacted["output"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(item["type"], "compaction", "{compacted}");
    let mut instructed = span.clone();
    instructed["instructions"] = json!("be brief");
    let (status, refused) = post(&provider, "/v1/responses/compact", "", &instructed).await;
    assert_eq!(status, 400, "{refused}");
    let (status, kept) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([item, reasoning, call, output])),
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept.get("input_transformations"), None, "{kept}");
    let mut forged = item.clone();
    forged["encrypted_content"] = json!("gAAAA-not-the-providers");
    let (_, refused) = post(&provider, "/v1/responses", "", &body(json!([forged, user]))).await;
    assert!(
        message_of(&refused).contains("could not be verified"),
        "{refused}"
    );

    let thread = body(json!([user, reasoning, call, output]));
    let (status, counted) = post(&provider, "/v1/responses/input_tokens", "", &thread).await;
    assert!(
        status == 200 && counted["input_tokens"].as_u64() > Some(0),
        "{counted}"
    );

    let (_, refused) = post(&provider, "/v1/responses", "", &body(json!([user, output]))).await;
    assert!(
        message_of(&refused).starts_with("No tool call found for function call output"),
        "{refused}"
    );
    let (_, refused) = post(
        &provider,
        "/v1/responses",
        "",
        &body(json!([user, reasoning, call, user])),
    )
    .await;
    assert!(
        message_of(&refused).starts_with("No tool output found for function call"),
        "{refused}"
    );
}
