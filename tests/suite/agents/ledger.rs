//! The session's ledger (`GET /v1/conversations/{id}`, docs/proxy.md "The
//! ledger") against what the scripted provider billed: turn by turn, each
//! conversation's billed tokens are the provider's usage
//! (`tests/agents/emulator/anthropic_cache.py` bills by Anthropic's prompt
//! caching rules).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::session::{Checks, Session, header};

/// What the ledger says of the whole session.
#[derive(Debug, Default)]
pub struct Totals {
    pub conversations: usize,
    pub turns: usize,
    /// Tokens by kind (`input`, `cache_read`, `cache_write_5m`,
    /// `cache_write_1h`, `output`), with condense and without.
    pub billed: BTreeMap<&'static str, i64>,
    pub without: BTreeMap<&'static str, i64>,
    pub summary_call_tokens: i64,
}

const KINDS: [&str; 5] = [
    "input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
];

/// A usage of the Messages API in the ledger's terms.
fn billed(usage: &Value) -> Value {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    let one_hour = usage["cache_creation"]["ephemeral_1h_input_tokens"]
        .as_u64()
        .unwrap_or(0);
    serde_json::json!({
        "input": n("input_tokens"),
        "cache_read": n("cache_read_input_tokens"),
        "cache_write_5m": n("cache_creation_input_tokens") - one_hour,
        "cache_write_1h": one_hour,
        "output": n("output_tokens"),
        "reasoning": 0,
    })
}

/// What the provider billed a session by kind, from its own log: for the
/// control (the client straight to the provider), the measure of the
/// ledger's `without_condense` model.
pub fn billed_by_provider(session: &Session) -> BTreeMap<&'static str, i64> {
    let mut sums = BTreeMap::new();
    let usages = session
        .entries
        .iter()
        .filter(|e| e["kind"] == "provider" && e["usage"].is_object());
    for usage in usages {
        let bill = billed(&usage["usage"]);
        for kind in KINDS {
            *sums.entry(kind).or_default() += bill[kind].as_i64().unwrap_or(0);
        }
    }
    sums
}

/// Checks each conversation's ledger on `condense` against the provider's
/// bills of `through`, and sums it.
pub async fn check(through: &Session, condense: &str, checks: &mut Checks) -> Totals {
    let mut expected: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for relay in through.entries.iter().filter(|e| e["kind"] == "relay") {
        let provider = through
            .entries
            .iter()
            .find(|p| p["kind"] == "provider" && p["id"] == relay["provider_id"]);
        let usage = provider.map(|p| &p["usage"]).filter(|u| u.is_object());
        let conversation = header(&relay["response_headers"], "x-condense-conversation");
        if let (Some(usage), Some(id)) = (usage, conversation) {
            expected
                .entry(id.to_string())
                .or_default()
                .push(billed(usage));
        }
    }
    checks.check(
        !expected.is_empty(),
        "ledger: no billed answer named its conversation",
    );
    let http = reqwest::Client::new();
    let mut totals = Totals::default();
    for (id, bills) in &expected {
        let url = format!("{condense}/v1/conversations/{id}");
        let mut ledger = Value::Null;
        // Each turn is written just after its answer ends.
        for _ in 0..600 {
            let res = http.get(&url).send().await.unwrap();
            ledger = res.json().await.unwrap_or(Value::Null);
            if ledger["turns"].as_array().map(Vec::len) == Some(bills.len()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let turns = ledger["turns"].as_array().cloned().unwrap_or_default();
        checks.check(
            turns.len() == bills.len(),
            format!(
                "ledger {id}: {} turns, the provider billed {}",
                turns.len(),
                bills.len()
            ),
        );
        for (n, (turn, bill)) in turns.iter().zip(bills).enumerate() {
            checks.check(
                &turn["billed"] == bill,
                format!(
                    "ledger {id} turn {n}: {} where the provider billed {bill}",
                    turn["billed"]
                ),
            );
        }
        let t = &ledger["totals"];
        let i = |v: &Value| v.as_i64().unwrap_or(0);
        for kind in KINDS {
            *totals.billed.entry(kind).or_default() += i(&t["billed"][kind]);
            *totals.without.entry(kind).or_default() += i(&t["without_condense"][kind]);
        }
        totals.conversations += 1;
        totals.turns += turns.len();
        totals.summary_call_tokens += i(&t["summary_call_tokens"]);
    }
    totals
}
