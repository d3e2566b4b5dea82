//! OpenAI Responses items the tests build: a Codex tool loop with the
//! API's settings and compaction items, as `/v1/compress` and the proxy
//! both receive it.

use serde_json::{Value, json};

/// A user message item.
pub fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// Turn `k` of the loop: its reasoning, its `exec_command` call, and the
/// call's output (long enough for a summary to save tokens).
pub fn turn(k: usize) -> [Value; 3] {
    let long = "output line\n".repeat(300);
    [
        json!({"type": "reasoning", "id": format!("rs_{k}"), "summary": [], "encrypted_content": format!("gAAA{k}==")}),
        json!({"type": "function_call", "id": format!("fc_{k}"), "call_id": format!("call_{k}"), "name": "exec_command", "arguments": "{\"cmd\": \"ls\"}"}),
        json!({"type": "function_call_output", "call_id": format!("call_{k}"), "output": long}),
    ]
}

/// A thread holding OpenAI's settings and compaction items, and the items
/// its tests look for.
pub struct Settings {
    /// `lead`, a first task and turn 1; the provider's `compaction` and the
    /// `configuration_update` the API put after it; then `go on`, turn 2,
    /// [`config`](Self::config), turn 3, [`tools`](Self::tools), turns 4 to
    /// `turns`, and the [`trigger`](Self::trigger) last.
    pub input: Vec<Value>,
    /// The `configuration_update` in the span a summary replaces.
    pub config: Value,
    /// The `additional_tools` in that span.
    pub tools: Value,
    /// The final `compaction_trigger`.
    pub trigger: Value,
}

impl Settings {
    /// The thread after `lead` (items before the first task), its last turn `turns`.
    pub fn new(lead: &[Value], turns: usize) -> Self {
        let config = json!({"type": "configuration_update", "reasoning": {"effort": "high"}});
        let tools = json!({"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "grep", "parameters": {"type": "object"}}]});
        let compaction =
            json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA".repeat(40)});
        let after = json!({"type": "configuration_update", "reasoning": {"effort": "low"}});
        let trigger = json!({"type": "compaction_trigger"});
        let mut input = lead.to_vec();
        input.push(user("first task"));
        input.extend(turn(1));
        input.extend([compaction, after, user("go on")]);
        input.extend(turn(2));
        input.push(config.clone());
        input.extend(turn(3));
        input.push(tools.clone());
        for k in 4..=turns {
            input.extend(turn(k));
        }
        input.push(trigger.clone());
        Self {
            input,
            config,
            tools,
            trigger,
        }
    }
}
