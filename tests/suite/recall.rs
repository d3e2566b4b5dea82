//! Anchor recall of the heuristic summary (issue 23): facts planted in a
//! span (paths, commands, errors, numbers, names, dates, identifiers, user
//! instructions, on both sides of the conversation) that its 2,000-token
//! summary keeps word for word, on the fixture threads, on long generated
//! conversations, and on a summary extended 20 times as the thread grows.
//!
//! `cargo test --test suite recall:: -- --nocapture` prints the table docs/compression.md
//! quotes. The thresholds sit a margin below what the heuristic reaches, so
//! a change that loses coverage fails here.

mod answers;
mod conversation;
mod measure;
mod people;
mod receipt;
mod rounds;

use conversation::conversation;
use measure::{Recall, fixture_span, injection, opens, summarize, tokens};

const FIXTURES: [&str; 10] = crate::support::common::EXAMPLES;

/// Turns of a generated conversation; its span is the first 90%.
const TURNS: usize = 400;
const SEEDS: [u64; 3] = [1, 2, 3];
/// The extended case: the thread grows by `CHUNK` turns `EXTENSIONS` times.
const CHUNK: usize = 30;
const EXTENSIONS: usize = 20;

/// How a span is summarized: the plain heuristic, or per iteration.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    PerIteration,
}

impl Mode {
    fn write(self, span: &[serde_json::Value], first: u64, prior: Option<&str>) -> String {
        match self {
            Mode::Plain => summarize(span, prior),
            Mode::PerIteration => injection(span, first, prior),
        }
    }

    fn label(self, name: &str) -> String {
        match self {
            Mode::Plain => name.to_string(),
            Mode::PerIteration => format!("{name}, per iteration"),
        }
    }
}

fn fixtures(mode: Mode, rows: &mut Vec<String>) -> Recall {
    let mut all = Recall::default();
    for name in FIXTURES {
        let (span, facts) = fixture_span(name);
        let summary = mode.write(&span, 1, None);
        let r = Recall::of(&summary, &facts);
        rows.push(r.row(&mode.label(name), tokens(&summary)));
        all.add(r);
    }
    all
}

fn generated(mode: Mode, rows: &mut Vec<String>) -> Recall {
    let mut all = Recall::default();
    for seed in SEEDS {
        let c = conversation(TURNS, seed);
        let span_turns = TURNS * 9 / 10;
        let span = &c.messages[..c.turn_starts[span_turns]];
        let facts: Vec<(String, f64)> = c
            .facts
            .iter()
            .filter(|f| f.turn < span_turns)
            .map(|f| (f.text.clone(), f.turn as f64 / span_turns as f64))
            .collect();
        let summary = mode.write(span, 1, None);
        if seed == 1 && std::env::var_os("RECALL_SHOW").is_some() {
            println!("{summary}\n");
        }
        let r = Recall::of(&summary, &facts);
        rows.push(r.row(
            &mode.label(&format!("generated, {span_turns} turns, seed {seed}")),
            tokens(&summary),
        ));
        all.add(r);
    }
    all
}

fn extended(mode: Mode, rows: &mut Vec<String>) -> Recall {
    let turns = CHUNK * (EXTENSIONS + 1);
    let c = conversation(turns, 7);
    let mut summary: Option<String> = None;
    // Iterations go on numbering where the previous round stopped.
    let mut first = 1;
    for k in 0..=EXTENSIONS {
        let from = c.turn_starts[k * CHUNK];
        let to = c
            .turn_starts
            .get((k + 1) * CHUNK)
            .copied()
            .unwrap_or(c.messages.len());
        let chunk = &c.messages[from..to];
        summary = Some(mode.write(chunk, first, summary.as_deref()));
        first += chunk.iter().filter(|m| opens(m)).count() as u64;
    }
    let summary = summary.unwrap();
    if std::env::var_os("RECALL_SHOW").is_some() {
        println!("{summary}\n");
    }
    let facts: Vec<(String, f64)> = c
        .facts
        .iter()
        .map(|f| (f.text.clone(), f.turn as f64 / turns as f64))
        .collect();
    let r = Recall::of(&summary, &facts);
    rows.push(r.row(
        &mode.label(&format!(
            "generated, {turns} turns, extended {EXTENSIONS} times"
        )),
        tokens(&summary),
    ));
    r
}

/// A table of `mode`'s recall: every row, then the totals.
fn table(mode: Mode) -> (Recall, Recall, Recall) {
    let mut rows = vec![
        "| span | facts kept | recall | first half | second half | summary tokens |".to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    let fixtures = fixtures(mode, &mut rows);
    let generated = generated(mode, &mut rows);
    let extended = extended(mode, &mut rows);
    rows.push(fixtures.row(&mode.label("**fixture threads**"), 0));
    rows.push(generated.row(&mode.label("**generated**"), 0));
    println!("{}\n", rows.join("\n"));
    (fixtures, generated, extended)
}

fn check(name: &str, r: &Recall, overall: f64, gap: f64) {
    assert!(r.pct() >= overall, "{name}: recall {:.1}%", r.pct());
    let d = (r.first_pct() - r.second_pct()).abs();
    assert!(
        d <= gap,
        "{name}: first half {:.1}% vs second half {:.1}%",
        r.first_pct(),
        r.second_pct()
    );
}

#[test]
fn recall_over_the_whole_span() {
    let (fixtures, generated, extended) = table(Mode::Plain);
    // Before issue 23 (the end of the span only): fixtures 100%, generated
    // 14.8% (first half 0.8%, second 27.9%), extended 8.5% (1.1% / 16.4%).
    // Now about 16% with the halves within 2 points, 9% extended (7% / 12%).
    check("fixture threads", &fixtures, 99.0, 0.5);
    check("generated", &generated, 14.0, 5.0);
    check("extended", &extended, 8.0, 10.0);
}

/// The same facts, summarized per iteration (every old iteration in the
/// injection, the oldest folded, each new entry repaired with its own
/// anchors), and extended round by round as an agent's loop would.
#[test]
fn per_iteration_recall_over_the_whole_span() {
    let (fixtures, generated, extended) = table(Mode::PerIteration);
    // Measured now: fixtures 77.9% (large-04: 49.4% / 51.8%, a written
    // file's URLs no longer anchors). Earlier: fixtures 75.5% (large-04: 46.0% / 44.7%, 320 messages in
    // ~90 iterations of one line or less each), generated 9.1% (8.3% /
    // 9.8%), extended 5.3% (2.3% / 8.4%); the same with the rolling entry
    // saying each item once (its receipt on large-04: 54.5% -> 67.7%).
    // Before issue 36's headroom: 73% (43%), 9.4% (7.1% / 11.6%), 5.7%
    // (1.8% / 9.7%). Before the rolling text was shrunk evenly over its
    // range (oldest first): generated 1.2% / 17.3%.
    check("fixture threads, per iteration", &fixtures, 70.0, 10.0);
    check("generated, per iteration", &generated, 8.0, 10.0);
    check("extended, per iteration", &extended, 4.5, 10.0);
}
