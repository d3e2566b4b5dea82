//! Summaries written by the upstream LLM; a span larger than its window is
//! chunked, each call extending the summary so far.

use std::fmt::Write;

use super::fit::{How, Size, fit};
use super::{SummaryRequest, UpstreamModel, Usage};
use crate::thread::{Message, Part};
use crate::tokens::Counter;
use crate::upstream::{ChatRequest, Upstream, UpstreamError};

/// The instructions; their version (`PROMPT_VERSION`) is part of the cache key.
pub const SYSTEM_PROMPT: &str = "You maintain the working memory of a coding agent whose conversation is too long to keep. \
Write a summary that the agent can act on without the original messages. Use these sections, in this order, \
and skip a section only when there is nothing for it:\n\
## Task and progress\n## Key decisions (and why)\n## Files created, changed or read\n## Errors and how they were resolved\n\
## What worked / what failed\n## User instructions and corrections (quote them verbatim)\n## Current state and next step\n\
Keep file paths, commands, identifiers and error messages exactly as written. Be brief: bullet points, no preamble.";

/// Default longest tool result kept in the transcript, in characters
/// (`--upstream-result-chars`).
pub const RESULT_CHARS: usize = 500;

/// One block of transcript per message.
pub fn transcript(span: &[Message], result_chars: usize) -> Vec<String> {
    span.iter().map(|m| block(m, result_chars)).collect()
}

fn block(m: &Message, result_chars: usize) -> String {
    let cut = |t: &str| fit(t, Size::Chars(result_chars), How::Middle);
    let mut s = format!("[{}]", m.role.as_str());
    for p in &m.parts {
        s.push_str(&match p {
            Part::Text(t) | Part::Refusal(t) => format!(" {}", t.trim()),
            // Thinking is private and signed: never shown.
            Part::Thinking(_) | Part::RedactedThinking(_) => continue,
            Part::Opaque(o) => format!(" ({})", o.kind),
            Part::Media(kind) => format!(" ({kind:?} attached)"),
            Part::ToolCall(c) => format!("\n  -> {}({})", c.name, cut(&c.arguments)),
            Part::FunctionCall { name, arguments } => format!("\n  -> {name}({arguments})"),
            Part::ToolResult(r) => {
                let text: Vec<&str> = r
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let tag = if r.is_error {
                    "tool error"
                } else {
                    "tool result"
                };
                format!("\n  <- {tag}: {}", cut(&text.join("\n")).trim())
            }
        });
    }
    s
}

fn user_prompt(existing: Option<&str>, chunk: &str, instructions: Option<&str>) -> String {
    let mut s = String::new();
    match existing {
        Some(prev) => {
            let _ = write!(
                s,
                "Here is the summary so far:\n<summary>\n{prev}\n</summary>\n\nUpdate it with these newer messages. Return the complete updated summary, not a summary of the summary.\n\n"
            );
        }
        None => s.push_str("Summarize these messages.\n\n"),
    }
    let _ = write!(s, "<messages>\n{chunk}\n</messages>");
    with_instructions(&mut s, instructions);
    s
}

/// The caller's own instructions, at the end of a prompt.
pub(super) fn with_instructions(prompt: &mut String, instructions: Option<&str>) {
    if let Some(extra) = instructions.filter(|i| !i.trim().is_empty()) {
        let _ = write!(
            prompt,
            "\n\nAdditional instructions from the user of this service:\n{extra}"
        );
    }
}

/// `text` and its tokens, its middle cut (aimed by characters per token) past `max`.
pub(super) fn within(text: String, max: usize, c: &Counter<'_>) -> (String, usize) {
    let n = c.raw(&text);
    if n <= max {
        return (text, n);
    }
    let keep = (text.chars().count() * max / n.max(1)).max(64);
    let text = fit(&text, Size::Chars(keep), How::Middle);
    let n = c.raw(&text);
    (text, n)
}

/// Transcript tokens a call may carry: the window less `used` (the output,
/// a summary so far) and the prompts, a third kept as margin (the model's
/// tokenizer is not ours).
pub(super) fn room(
    c: &Counter<'_>,
    window: usize,
    used: usize,
    req: &SummaryRequest,
    system: &str,
) -> usize {
    let instructions = req.settings.instructions.as_deref().unwrap_or("");
    let overhead = c.raw(system) + c.raw(instructions) + 64;
    (window.saturating_sub(used + overhead) * 2 / 3).max(256)
}

/// One upstream call, its usage added to `usage`.
pub(super) async fn complete(
    up: &Upstream,
    model: &UpstreamModel,
    system: &str,
    user: String,
    max_tokens: usize,
    usage: &mut Usage,
) -> Result<String, UpstreamError> {
    let call = ChatRequest {
        model: model.name.clone(),
        system: system.to_string(),
        user,
        max_tokens: max_tokens as u32,
    };
    let called = up.complete(&call).await;
    usage.calls += called.attempts;
    usage.upstream_ms += called.elapsed.as_millis() as u64;
    let answer = called.result?;
    usage.prompt_tokens += answer.prompt_tokens;
    usage.completion_tokens += answer.completion_tokens;
    Ok(answer.text)
}

/// The transcript in chunks of at most `max_tokens` (a larger block cut in the middle).
pub fn chunks(blocks: Vec<String>, max_tokens: usize, c: &Counter<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for b in blocks {
        let (b, n) = within(b, max_tokens, c);
        if used + n > max_tokens && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push_str(&b);
        current.push_str("\n\n");
        used += n;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Writes the summary of `req.span[from..]` with `model`, extending `prior`.
pub async fn write(
    up: &Upstream,
    model: &UpstreamModel,
    req: &SummaryRequest,
    from: usize,
    prior: Option<String>,
    limit: usize,
) -> Result<(String, Usage), UpstreamError> {
    let (c, window) = (req.settings.counter, model.context_window);
    let out_tokens = limit.min(window / 4).max(64);
    let fits = move |s: &str| c.text(s).tokens;
    let (mut summary, chunks) = {
        let (req, result_chars) = (req.clone(), model.result_chars);
        super::cpu(move || {
            let summary = prior.map(|p| fit(&p, Size::Tokens(window / 4, &fits), How::LineEnd));
            let used = out_tokens + summary.as_deref().map_or(0, |s| c.raw(s));
            let room = room(&c, window, used, &req, SYSTEM_PROMPT);
            let blocks = transcript(&req.span[from..], result_chars);
            (summary, chunks(blocks, room, &c))
        })
        .await
    };
    let mut usage = Usage::default();
    for chunk in chunks {
        let instructions = req.settings.instructions.as_deref();
        let user = user_prompt(summary.as_deref(), &chunk, instructions);
        let answer = complete(up, model, SYSTEM_PROMPT, user, out_tokens, &mut usage).await?;
        let fitted = move || fit(&answer, Size::Tokens(limit, &fits), How::LineEnd);
        summary = Some(super::cpu(fitted).await);
    }
    summary.map(|s| (s, usage)).ok_or(UpstreamError::Empty)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::{RawThread, parse};

    #[test]
    fn transcript_shows_roles_calls_and_cut_results() {
        let messages = vec![
            json!({"role": "user", "content": "run it"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "run_command", "arguments": "{\"command\": \"make\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "x".repeat(5000)}),
        ];
        let t = parse(RawThread {
            messages: &messages,
            ..Default::default()
        })
        .unwrap();
        let blocks = transcript(&t.messages, 100);
        assert_eq!(blocks[0], "[user] run it");
        assert!(
            blocks[1].contains("-> run_command({\"command\": \"make\"})"),
            "{}",
            blocks[1]
        );
        assert!(
            blocks[2].starts_with("[tool]\n  <- tool result: "),
            "{}",
            blocks[2]
        );
        assert!(
            blocks[2].contains("…[truncated 4,930 characters]…"),
            "{}",
            blocks[2]
        );
        assert!(blocks[2].len() < 300);
    }
}
