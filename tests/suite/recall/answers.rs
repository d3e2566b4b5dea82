//! Answer survival on long conversations between two people (issue 36):
//! of the questions whose answer only the older span says, how many a
//! compressed thread (a summary of the span, then the newest 10% of the
//! messages verbatim) still answers word for word; beside the uncompressed
//! thread (the ceiling) and the span dropped (truncation).
//!
//! `cargo test --test suite recall::answers -- --nocapture` prints the table
//! docs/compression.md quotes; `bench/people.py` measures the same
//! conversations through `/v1/compress`.

use serde_json::Value;

use super::measure::{repaired, tokens};
use super::people::{People, people};

/// Dated sessions per conversation: about 540 messages.
const SESSIONS: usize = 20;
const SEEDS: [u64; 3] = [1, 2, 3];
/// The summary bounds measured: a tight one and the default.
const LIMITS: [usize; 2] = [500, 2000];

/// Questions answered, of questions asked.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    kept: usize,
    asked: usize,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.kept += o.kept;
        self.asked += o.asked;
    }
    fn pct(self) -> f64 {
        100.0 * self.kept as f64 / self.asked.max(1) as f64
    }
    fn cell(self) -> String {
        format!("{:.1}% ({}/{})", self.pct(), self.kept, self.asked)
    }
}

/// What one compressed form of a conversation answers.
struct Row {
    uncompressed: Tally,
    truncated: Tally,
    /// At each of [`LIMITS`].
    summarized: [Tally; 2],
    summary_tokens: [usize; 2],
    /// At 2,000 tokens, the questions asking for a value that replaced another.
    updated: Tally,
    span_tokens: usize,
}

fn text(messages: &[Value]) -> String {
    let texts = messages.iter().map(|m| m["content"].as_str().unwrap_or(""));
    texts.collect::<Vec<_>>().join("\n")
}

/// The questions about `p`'s span (all of its evidence before `cut`) that
/// `thread` answers; `updated`: only those asking for a replaced value.
fn answered(p: &People, cut: usize, thread: &str, updated: bool) -> Tally {
    let mut t = Tally::default();
    let asked = p.questions.iter().filter(|q| q.updated || !updated);
    for q in asked.filter(|q| q.evidence.iter().all(|&i| i < cut)) {
        t.asked += 1;
        t.kept += usize::from(thread.contains(q.answer.as_str()));
    }
    t
}

fn measure(seed: u64) -> Row {
    let p = people(SESSIONS, seed);
    let cut = p.messages.len() * 9 / 10;
    let (span, recent) = (&p.messages[..cut], text(&p.messages[cut..]));
    let summaries = LIMITS.map(|limit| repaired(span, limit));
    if seed == 1 && std::env::var_os("RECALL_SHOW").is_some() {
        println!("{}\n", summaries[1]);
        let asked = p
            .questions
            .iter()
            .filter(|q| q.evidence.iter().all(|&i| i < cut));
        let lost: Vec<&str> = asked
            .filter(|q| !summaries[1].contains(q.answer.as_str()))
            .map(|q| q.answer.as_str())
            .collect();
        println!("not kept at 2,000 tokens: {}\n", lost.join(" | "));
    }
    Row {
        uncompressed: answered(&p, cut, &text(&p.messages), false),
        truncated: answered(&p, cut, &recent, false),
        summarized: [0, 1]
            .map(|i| answered(&p, cut, &format!("{}\n{recent}", summaries[i]), false)),
        updated: answered(&p, cut, &format!("{}\n{recent}", summaries[1]), true),
        summary_tokens: [0, 1].map(|i| tokens(&summaries[i])),
        span_tokens: tokens(&text(span)),
    }
}

#[test]
fn a_summary_keeps_what_people_state() {
    let mut rows = vec![
        "| conversation | span tokens | uncompressed | truncation | heuristic, 500 | heuristic, 2,000 |"
            .to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    let (mut all, mut truncated, mut tight, mut default, mut updated) = Default::default();
    for seed in SEEDS {
        let r = measure(seed);
        rows.push(format!(
            "| seed {seed} | {} | {} | {} | {} ({} tokens) | {} ({} tokens) |",
            r.span_tokens,
            r.uncompressed.cell(),
            r.truncated.cell(),
            r.summarized[0].cell(),
            r.summary_tokens[0],
            r.summarized[1].cell(),
            r.summary_tokens[1],
        ));
        Tally::add(&mut all, r.uncompressed);
        Tally::add(&mut truncated, r.truncated);
        Tally::add(&mut tight, r.summarized[0]);
        Tally::add(&mut default, r.summarized[1]);
        Tally::add(&mut updated, r.updated);
    }
    let (all, truncated, tight, default, updated): (Tally, Tally, Tally, Tally, Tally) =
        (all, truncated, tight, default, updated);
    rows.push(format!(
        "| **all** | | {} | {} | {} | {} |",
        all.cell(),
        truncated.cell(),
        tight.cell(),
        default.cell()
    ));
    println!("{}\n", rows.join("\n"));
    let of_ceiling = default.pct() / all.pct() * 100.0;
    println!(
        "heuristic at 2,000 tokens: {of_ceiling:.1}% of the ceiling; of the questions asking for a value that replaced another, {}",
        updated.cell()
    );
    assert!(all.asked >= 250, "{} questions", all.asked);
    // Before issue 36 (the same conversations): 38.9% at 2,000 tokens and
    // 5.1% at 500; now about 55% and 6.5%. Truncation keeps none: each
    // answer is said in the span only.
    assert!(
        of_ceiling >= 50.0,
        "heuristic at 2,000 tokens: {of_ceiling:.1}% of the ceiling"
    );
    assert!(
        tight.pct() >= 5.0,
        "heuristic at 500 tokens: {:.1}%",
        tight.pct()
    );
    assert!(truncated.pct() < default.pct() && truncated.pct() < tight.pct());
}

/// Writes the conversations of [`a_summary_keeps_what_people_state`] as
/// JSON (`{"messages": […], "questions": [{"answer", "evidence", "updated"}]}`,
/// one file a seed) into `$PEOPLE_OUT`, for `bench/people.py` to send
/// through `/v1/compress`.
#[test]
#[ignore = "a data writer for bench/people.py"]
fn write_people_conversations() {
    let dir = std::env::var("PEOPLE_OUT").expect("PEOPLE_OUT: the folder to write to");
    for seed in SEEDS {
        let p = people(SESSIONS, seed);
        let questions: Vec<Value> = p
            .questions
            .iter()
            .map(|q| serde_json::json!({"answer": q.answer, "evidence": q.evidence, "updated": q.updated}))
            .collect();
        let body = serde_json::json!({"messages": p.messages, "questions": questions});
        let path = format!("{dir}/people-{seed}.json");
        std::fs::write(&path, body.to_string()).expect("the folder is writable");
    }
}
