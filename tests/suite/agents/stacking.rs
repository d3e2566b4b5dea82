//! Two compactions stacking (issue 35): Codex compacts its thread on its
//! own (`model_auto_compact_token_limit`: it asks the model for a handoff
//! summary in a request without tools, then starts over from the user's
//! messages and that summary) while condense's `provider` summarizer
//! compacts the same thread. condense's profile summarizes early, so
//! Codex's own compaction request is itself compressed: the provider's
//! compaction item where the old turns were, Codex's compaction prompt
//! kept last. Nothing is refused, no reasoning removed or dropped, the
//! ledger matches the provider's bills, and the session goes on from each
//! handoff to its end (the scripted provider writes the latest step's
//! marker into the handoff, `emulator/script.py`).

use std::io::Write;

use super::harness::{self, Cli, Provider, Summarizer};
use super::session::{Checks, Summary};
use crate::support::live;

/// Codex's `model_auto_compact_token_limit`: its pinned prefix (about 9k
/// tokens) and two steps, so it compacts every few steps.
const OWN_COMPACTION: u64 = 13_000;
/// condense's `max_messages_before_summary`: over it are Codex's
/// compaction requests (11 or 12 items), not its agent turns (at most 8).
const EVERY: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_compacting_on_its_own_through_condense() {
    let test = "codex_compacting_on_its_own_through_condense";
    let Some(()) = live::agent_clis(test) else {
        return;
    };
    let provider = Provider::start();
    let dir = tempfile::tempdir().unwrap();
    let condense = harness::condense(&provider.url, dir.path(), Summarizer::Provider, EVERY).await;
    let mut checks = Checks::default();
    let (cli, own) = (Cli::Codex, Some(OWN_COMPACTION));

    // Arrange: the control compacts on its own too.
    let control = super::session(
        &provider,
        cli,
        "own-control",
        &provider.url,
        own,
        &mut checks,
    )
    .await;
    // Act
    let through = super::session(&provider, cli, "own-condense", &condense, own, &mut checks).await;

    // Assert
    let own_compactions = through.own_compactions();
    checks.check(
        !control.own_compactions().is_empty() && !own_compactions.is_empty(),
        "Codex never compacted on its own",
    );
    let stacked = own_compactions
        .iter()
        .filter(|t| matches!(through.summary_of(t), Some(Summary::Item(_))))
        .count();
    let requests: Vec<_> = through.turns().into_iter().chain(own_compactions).collect();
    for turn in &requests {
        through.check_kept(turn, &mut checks);
        through.check_forwarded(turn, &mut checks);
        through.check_dropped(turn, &mut checks);
    }
    super::check_compactions(&through, &requests, &mut checks);
    let totals = super::ledger::check(&through, &condense, &mut checks).await;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: requests {}, Codex's own compactions {} (control {}), of them compressed by \
         condense with the provider's item {stacked}, compactions asked {}, reasoning removed \
         by condense {}, dropped by the provider {}; the ledger's {} turns match the bills, \
         summarizer tokens {}",
        requests.len(),
        through.own_compactions().len(),
        control.own_compactions().len(),
        through.compactions().len(),
        requests.iter().map(|t| t.removed()).sum::<usize>(),
        requests.iter().map(|t| t.dropped()).sum::<usize>(),
        totals.turns,
        totals.summary_call_tokens,
    );
    assert!(
        checks.0.is_empty(),
        "{test} failed {} checks:\n- {}",
        checks.0.len(),
        checks.0.join("\n- ")
    );
}
