//! The session's ledger (`GET /v1/conversations/{id}`, docs/proxy.md "The
//! ledger") against what the scripted provider billed: turn by turn, each
//! conversation's billed tokens are the provider's usage, for either client
//! (`tests/agents/emulator/anthropic_cache.py` bills by Anthropic's prompt
//! caching rules, `openai_cache.py` by OpenAI's automatic prefix caching).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::harness::Cli;
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

impl Totals {
    /// Billed with condense minus without, kind by kind, and every input
    /// token however billed (`input_total`): negative is saved.
    pub fn difference(&self) -> BTreeMap<&'static str, i64> {
        let (b, w) = (&self.billed, &self.without);
        let get = |m: &BTreeMap<&'static str, i64>, k| m.get(k).copied().unwrap_or(0);
        let mut out: BTreeMap<_, _> = KINDS.iter().map(|&k| (k, get(b, k) - get(w, k))).collect();
        out.insert(
            "input_total",
            KINDS[..4].iter().map(|&k| get(b, k) - get(w, k)).sum(),
        );
        out
    }
}

const KINDS: [&str; 5] = [
    "input",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
    "output",
];

/// How a provider's `usage` names what it billed.
#[derive(Debug, Clone, Copy)]
enum Usage {
    /// Anthropic's Messages API: input, cache read and cache writes apart.
    Messages,
    /// OpenAI's Responses API: the cached part counted inside
    /// `input_tokens`, no writes billed.
    Responses,
}

impl Usage {
    fn of(cli: Cli) -> Usage {
        match cli {
            Cli::ClaudeCode => Usage::Messages,
            Cli::Codex => Usage::Responses,
        }
    }

    /// `usage` in the ledger's terms (as `src/proxy/bill` maps it).
    fn billed(self, usage: &Value) -> Value {
        let n = |path: &[&str]| path.iter().fold(usage, |v, k| &v[k]).as_u64().unwrap_or(0);
        match self {
            Usage::Messages => {
                let one_hour = n(&["cache_creation", "ephemeral_1h_input_tokens"]);
                serde_json::json!({
                    "input": n(&["input_tokens"]),
                    "cache_read": n(&["cache_read_input_tokens"]),
                    "cache_write_5m": n(&["cache_creation_input_tokens"]) - one_hour,
                    "cache_write_1h": one_hour,
                    "output": n(&["output_tokens"]),
                    "reasoning": 0,
                })
            }
            Usage::Responses => {
                let cached = n(&["input_tokens_details", "cached_tokens"]);
                serde_json::json!({
                    "input": n(&["input_tokens"]) - cached,
                    "cache_read": cached,
                    "cache_write_5m": 0,
                    "cache_write_1h": 0,
                    "output": n(&["output_tokens"]),
                    "reasoning": n(&["output_tokens_details", "reasoning_tokens"]),
                })
            }
        }
    }
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
    let shape = Usage::of(session.cli);
    for usage in usages {
        let bill = shape.billed(&usage["usage"]);
        for kind in KINDS {
            *sums.entry(kind).or_default() += bill[kind].as_i64().unwrap_or(0);
        }
    }
    sums
}

/// Checks each conversation's ledger on `condense` against the provider's
/// bills of `through`, and sums it.
pub async fn check(through: &Session, condense: &str, checks: &mut Checks) -> Totals {
    let shape = Usage::of(through.cli);
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
                .push(shape.billed(usage));
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
