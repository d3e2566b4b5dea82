//! Per-iteration summaries written by the upstream LLM: as many iterations
//! per call as the window holds, answered as `Iteration N: …` lines, read
//! leniently. One left out is asked for alone; still missing, it is an
//! upstream failure (a summary silently missing one would look complete).

use std::collections::HashMap;
use std::fmt::Write;
use std::ops::Range;

use crate::summarize::llm::{complete, room, transcript, with_instructions, within};
use crate::summarize::pattern::Pattern;
use crate::summarize::{SummaryRequest, UpstreamModel, Usage};
use crate::thread::Message;
use crate::tokens::Counter;
use crate::upstream::{Upstream, UpstreamError};

/// The instructions (their version, `PROMPT_VERSION`, is part of the cache key).
pub const SYSTEM_PROMPT: &str = "You keep the memory of a coding agent, one entry per iteration of its work. \
For each iteration you are shown, write two or three sentences: what the user asked, what the agent did \
(commands run, files changed), any error, and how it ended. Keep file paths, commands and error messages \
exactly as written. Answer with one line per iteration, in the form `Iteration N: <sentences>`, in the \
order shown, and nothing else.";

/// Output tokens asked for per iteration: two or three sentences.
const OUT_PER_ITERATION: usize = 120;

/// An `Iteration N:` label, with the decorations models add around it.
static LABEL: Pattern = Pattern::new(
    r"(?i)^\s*(?:[-*•]\s*)?(?:\*\*|__|#+\s*)?iteration\s+#?(\d+)\s*(?:\*\*|__)?\s*[:.)\-–—]\s*(?:\*\*|__)?\s*(.*)$",
);

/// The prompt's `<iteration>` markup, when a model repeats it.
static TAG: Pattern = Pattern::new(r#"</?iteration(?:\s+number="\d+")?>"#);

/// The model's summary of each group (an iteration and its messages), in order.
pub(super) async fn write(
    up: &Upstream,
    model: &UpstreamModel,
    req: &SummaryRequest,
    groups: &[(u64, Range<usize>)],
) -> Result<(Vec<String>, Usage), UpstreamError> {
    let (c, window) = (req.settings.counter, model.context_window);
    let per_call = (window / 4 / OUT_PER_ITERATION).max(1);
    let instructions = req.settings.instructions.as_deref();
    let (blocks, batches) = {
        let (req, groups, result_chars) = (req.clone(), groups.to_vec(), model.result_chars);
        super::super::cpu(move || {
            let room = room(&c, window, window / 4, &req, SYSTEM_PROMPT);
            let blocks: Vec<String> = groups
                .iter()
                .map(|(it, r)| block(*it, &req.span[r.clone()], result_chars, c, room))
                .collect();
            let sizes: Vec<usize> = blocks.iter().map(|b| c.raw(b)).collect();
            (blocks, batches(&sizes, room, per_call))
        })
        .await
    };
    let mut usage = Usage::default();
    // By group, not number: an agent may restart its numbering.
    let mut stories: Vec<Option<String>> = vec![None; groups.len()];
    for batch in batches {
        let asked: Vec<u64> = batch.clone().map(|i| groups[i].0).collect();
        let blocks = &blocks[batch.clone()];
        let answer = call(up, model, blocks, &asked, instructions, &mut usage).await?;
        let mut answered = read(&answer, &asked);
        for i in batch.clone() {
            let it = groups[i].0;
            // A number asked twice in one call is ambiguous: ask each alone.
            if asked.iter().filter(|&&a| a == it).count() == 1 {
                stories[i] = answered.remove(&it);
            }
        }
        let missing: Vec<usize> = batch.filter(|&i| stories[i].is_none()).collect();
        for i in missing {
            let it = [groups[i].0];
            let answer = call(up, model, &blocks[i..=i], &it, instructions, &mut usage).await?;
            stories[i] = read(&answer, &it).remove(&it[0]);
        }
    }
    let stories = groups
        .iter()
        .zip(stories)
        .map(|((it, _), story)| {
            story.ok_or_else(|| {
                UpstreamError::Garbage(format!("the answer has no summary of iteration {it}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((stories, usage))
}

/// One iteration's transcript in its `<iteration>` tags, in `room` tokens.
fn block(it: u64, messages: &[Message], result_chars: usize, c: Counter, room: usize) -> String {
    let (text, _) = within(transcript(messages, result_chars).join("\n"), room, &c);
    format!("<iteration number=\"{it}\">\n{text}\n</iteration>")
}

/// Consecutive groups per call: as many as fit `room` tokens, at most `per_call`.
fn batches(sizes: &[usize], room: usize, per_call: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (i, &n) in sizes.iter().enumerate() {
        if i > start && (used + n > room || i - start >= per_call) {
            out.push(start..i);
            (start, used) = (i, 0);
        }
        used += n;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

async fn call(
    up: &Upstream,
    model: &UpstreamModel,
    blocks: &[String],
    asked: &[u64],
    instructions: Option<&str>,
    usage: &mut Usage,
) -> Result<String, UpstreamError> {
    let mut user = String::from("Summarize each of these iterations of the agent's work.\n\n");
    for b in blocks {
        let _ = write!(user, "{b}\n\n");
    }
    let lines: Vec<String> = asked.iter().map(|n| format!("Iteration {n}: …")).collect();
    let _ = write!(user, "Answer with these lines:\n{}", lines.join("\n"));
    with_instructions(&mut user, instructions);
    let max_tokens = (OUT_PER_ITERATION * asked.len() + 16).min(model.context_window / 4);
    complete(up, model, SYSTEM_PROMPT, user, max_tokens, usage).await
}

/// The `asked` iterations' summaries in an answer (all of it, unlabelled, for one).
fn read(answer: &str, asked: &[u64]) -> HashMap<u64, String> {
    let mut out: HashMap<u64, String> = HashMap::new();
    let mut current: Option<u64> = None;
    for line in answer.lines() {
        if let Some(m) = LABEL.get().captures(line) {
            current = m[1].parse().ok().filter(|n| asked.contains(n));
            if let Some(n) = current {
                push(out.entry(n).or_default(), &m[2]);
            }
        } else if let Some(n) = current {
            push(out.entry(n).or_default(), line);
        }
    }
    out.retain(|_, s| !s.is_empty());
    if let ([n], true) = (asked, out.is_empty()) {
        let whole = answer.split_whitespace().collect::<Vec<_>>().join(" ");
        if !whole.is_empty() {
            out.insert(*n, whole);
        }
    }
    out
}

fn push(to: &mut String, text: &str) {
    // Models echo the prompt's markup.
    let text = TAG.get().replace_all(text, "");
    let text = text.trim().trim_matches('*').trim();
    if !text.is_empty() {
        if !to.is_empty() {
            to.push(' ');
        }
        to.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_leniently() {
        let answer = "Here you go:\n- **Iteration 3:** Fixed it.\nRan `make`.\n</iteration>\n\nIteration 4 - Nothing.\nIteration 9: not asked";
        let got = read(answer, &[3, 4]);
        assert_eq!(got[&3], "Fixed it. Ran `make`.");
        assert_eq!(got[&4], "Nothing.");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn a_missing_iteration_is_missing_and_a_lone_one_is_the_whole_answer() {
        assert!(!read("Iteration 3: x", &[3, 4]).contains_key(&4));
        assert_eq!(
            read("The agent ran tests.\n", &[7])[&7],
            "The agent ran tests."
        );
        assert!(read("  \n", &[7]).is_empty());
    }

    #[test]
    fn batches_follow_the_room_and_the_count() {
        assert_eq!(batches(&[10, 10, 10, 10], 25, 8), [0..2, 2..4]);
        assert_eq!(batches(&[10, 10, 10], 100, 2), [0..2, 2..3]);
        assert_eq!(batches(&[500, 10], 100, 8), [0..1, 1..2]);
    }
}
