//! The real agent CLIs, pinned (`tests/agents/package.json`): Claude Code
//! and Codex CLI, each run non-interactively through condense to a scripted
//! provider of our own (`tests/agents/provider.py`) that validates every
//! request as Anthropic's and OpenAI's APIs do, behind a recording relay
//! (CLI → relay → condense → provider, one process, one clock).
//!
//! The provider plays a 16-step session: each turn a shell command that
//! makes the thread grow, then a final answer. Each CLI also runs once
//! straight to the provider (the control), which proves the emulator
//! accepts what the real client sends. Per client it prints turns,
//! compressed turns, tokens before/after on the last turn, summaries
//! written, condense's added latency per turn, and the ledger against
//! the provider's bills (`ledger.rs`). Codex runs once more with the
//! `provider` summarizer: the provider's own compaction item in place of
//! condense's text summary; and once compacting on its own (`stacking.rs`).
use crate::support::{live, server};

mod forgetting;
mod harness;
mod ledger;
mod refusals;
mod session;
mod stacking;

use std::collections::BTreeSet;
use std::io::Write;

use harness::{Cli, EVERY, Provider, Summarizer};
use session::{Checks, Session, Summary};

/// The scripted session's steps and final answer (`emulator/script.py`).
const STEPS: usize = 16;
const FINAL: &str = "AGENT-FINAL-OK";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_condense() {
    through_condense(Cli::ClaudeCode, Summarizer::Own).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_condense() {
    through_condense(Cli::Codex, Summarizer::Own).await;
}

/// Summaries written by the provider (`strategy = "provider"`): only the
/// Responses API has them, so only Codex.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_condense_with_provider_summaries() {
    through_condense(Cli::Codex, Summarizer::Provider).await;
}

async fn through_condense(cli: Cli, summarizer: Summarizer) {
    let test = match summarizer {
        Summarizer::Own => format!("{}_through_condense", cli.name().replace('-', "_")),
        Summarizer::Provider => format!(
            "{}_through_condense_with_provider_summaries",
            cli.name().replace('-', "_")
        ),
    };
    let Some(()) = live::agent_clis(&test) else {
        return;
    };
    let provider = Provider::start();
    let dir = tempfile::tempdir().unwrap();
    let condense = harness::condense(&provider.url, dir.path(), summarizer, EVERY).await;
    let mut checks = Checks::default();

    // Arrange: the control proves the emulator takes what the client sends.
    let control = session(&provider, cli, "control", &provider.url, None, &mut checks).await;
    // Act
    let through = session(&provider, cli, "condense", &condense, None, &mut checks).await;

    // Assert
    let turns = through.turns();
    let compressed = turns.iter().filter(|t| t.compressed()).count();
    checks.check(
        compressed * 2 > turns.len(),
        format!(
            "condense: {compressed} of {} turns compressed, not most",
            turns.len()
        ),
    );
    let mut held = 0;
    for turn in control.turns() {
        control.check_dropped(&turn, &mut checks);
    }
    for (n, turn) in turns.iter().enumerate() {
        through.check_kept(turn, &mut checks);
        through.check_forwarded(turn, &mut checks);
        through.check_dropped(turn, &mut checks);
        if let Some(next) = turns.get(n + 1) {
            held += usize::from(through.check_prefix(turn, next, &mut checks));
        }
    }
    checks.check(
        held > 0,
        "condense: no two consecutive turns carried the same summary (continuity never held)",
    );
    if summarizer == Summarizer::Provider {
        check_compactions(&through, &turns, &mut checks);
    }
    report(&test, summarizer, &control, &through);
    // The scripted providers bill by the prompt cache's rules (Anthropic's,
    // OpenAI's automatic one): the ledger must say what they billed.
    let totals = ledger::check(&through, &condense, &mut checks).await;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: ledger of {} turns in {} conversations: billed {:?}, without condense {:?} \
         (the control was billed {:?}), net difference {:?}, summarizer tokens {}",
        totals.turns,
        totals.conversations,
        totals.billed,
        totals.without,
        ledger::billed_by_provider(&control),
        totals.difference(),
        totals.summary_call_tokens,
    );
    assert!(
        checks.0.is_empty(),
        "{} failed {} checks:\n- {}",
        cli.name(),
        checks.0.len(),
        checks.0.join("\n- ")
    );
}

/// A session with the `provider` summarizer: among `turns`, some carry a
/// summary and every summary is a compaction item the provider wrote, byte
/// for byte (asked with the client's credentials, never the operator's),
/// and the kept turns keep their reasoning (condense removes none; the
/// provider drops none).
fn check_compactions(through: &Session, turns: &[session::Turn<'_>], checks: &mut Checks) {
    let calls = through.compactions();
    let written: Vec<String> = calls
        .iter()
        .map(|c| serde_json::to_string(&c["answer"][0]).unwrap())
        .collect();
    let mut carried = 0;
    for turn in turns {
        let id = &turn.client["id"];
        match through.summary_of(turn) {
            Some(Summary::Item(item)) => {
                carried += 1;
                checks.check(
                    written.contains(&item),
                    format!("request {id}: a compaction item the provider did not write: {item}"),
                );
            }
            Some(Summary::Text(_)) => checks.check(
                false,
                format!("request {id}: a text summary, not the provider's item"),
            ),
            None => {}
        }
        checks.check(
            turn.removed() == 0 && turn.dropped() == 0,
            format!(
                "request {id}: {} reasoning items removed by condense, {} dropped by the provider, \
                 after the provider's own compaction",
                turn.removed(),
                turn.dropped()
            ),
        );
    }
    checks.check(
        carried > 0,
        "provider: no turn carried the provider's compaction item",
    );
    let client_key = turns
        .first()
        .and_then(|t| session::header(&t.client["headers"], "authorization"));
    for call in calls {
        checks.check(
            client_key.is_some()
                && session::header(&call["headers"], "authorization") == client_key,
            format!(
                "compaction {}: not asked with the client's credentials",
                call["id"]
            ),
        );
    }
}

/// Runs the CLI through the relay to `target` (compacting on its own past
/// `own_compaction` tokens) and checks what any session must show: a clean
/// exit with the final answer, the tools' file, no request refused, every
/// answer relayed byte for byte.
async fn session(
    provider: &Provider,
    cli: Cli,
    label: &str,
    target: &str,
    own_compaction: Option<u64>,
    checks: &mut Checks,
) -> Session {
    let name = format!("{}-{label}", cli.name());
    provider.session(&name, target).await;
    let relay = provider.relay.clone();
    let run = tokio::task::spawn_blocking(move || cli.run(&relay, own_compaction))
        .await
        .unwrap();
    let tail = |s: &str| {
        s.chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<String>()
    };
    checks.check(
        run.status.success() && run.answer.contains(FINAL),
        format!(
            "{name}: {} with answer {:?}; output (end):\n{}",
            run.status,
            run.answer,
            tail(&run.output)
        ),
    );
    let proof = std::fs::read_to_string(run.workdir.path().join("proof.txt")).unwrap_or_default();
    checks.check(
        proof.lines().count() == STEPS,
        format!(
            "{name}: the tools wrote {} of {STEPS} lines of proof.txt",
            proof.lines().count()
        ),
    );
    let session = Session {
        cli,
        entries: provider.log(&name).await,
    };
    // Kept for reading after the run: every request, both sides.
    let kept =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agents-{name}.json"));
    std::fs::write(&kept, serde_json::to_vec_pretty(&session.entries).unwrap()).unwrap();
    for refused in session.rejections() {
        checks.check(false, format!("{name}: the provider refused {refused}"));
    }
    for altered in session.altered_streams() {
        checks.check(
            false,
            format!("{name}: the answer to {altered} did not arrive byte for byte"),
        );
    }
    checks.check(
        session.turns().len() > STEPS,
        format!(
            "{name}: {} agent turns, expected {STEPS} tool turns and a final one",
            session.turns().len()
        ),
    );
    session
}

/// The numbers of one client, written past the test harness's capture.
fn report(test: &str, summarizer: Summarizer, control: &Session, through: &Session) {
    let turns = through.turns();
    let last = turns.last();
    let header = |name| {
        last.and_then(|t| t.condense(name))
            .unwrap_or("-")
            .to_string()
    };
    let summaries: BTreeSet<Summary> = turns.iter().filter_map(|t| through.summary_of(t)).collect();
    let mut added: Vec<f64> = turns.iter().filter_map(|t| t.added_ms()).collect();
    added.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        added
            .get(((p * added.len() as f64).ceil() as usize).saturating_sub(1))
            .copied()
    };
    let _ = writeln!(
        std::io::stderr(),
        "{test}: summarizer {}, turns {} (control {}), compressed {}, thinking removed by condense {}, \
         dropped by the provider {}, tokens on the last turn {} -> {}, \
         summaries written {} (compactions asked {}), added latency per turn median {:.1} ms, p99 {:.1} ms",
        summarizer.name(),
        turns.len(),
        control.turns().len(),
        turns.iter().filter(|t| t.compressed()).count(),
        turns.iter().map(|t| t.removed()).sum::<usize>(),
        turns.iter().map(|t| t.dropped()).sum::<usize>(),
        header("x-condense-tokens-before"),
        header("x-condense-tokens-after"),
        summaries.len(),
        through.compactions().len(),
        rank(0.5).unwrap_or(f64::NAN),
        rank(0.99).unwrap_or(f64::NAN),
    );
    let notes: BTreeSet<&str> = turns
        .iter()
        .filter_map(|t| t.condense("x-condense-note"))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(std::io::stderr(), "{test}: condense notes: {notes:?}");
    }
}
