//! Anchor recall: of the facts said word for word in a span, how many its
//! heuristic summary still says word for word, overall and by the half of
//! the span they were said in.

use std::sync::LazyLock;

use serde_json::Value;

use condense::cache::Cache;
use condense::summarize::{
    SummaryRequest, SummaryService, SummarySettings, Writer, canonical, heuristic,
};
use condense::thread::{self, RawThread};
use condense::tokens::{CountSpec, Encoders, Encoding, Method, ModelRegistry};

use crate::support::block_on;

/// The default `max_summary_tokens`.
pub const LIMIT: usize = 2000;

pub fn tokens(text: &str) -> usize {
    Encoders::global().count(Encoding::O200kBase, text)
}

/// The heuristic summary of `messages` (OpenAI or Anthropic form) extending
/// `prior`, as the compressor writes it: canonical span, o200k count.
pub fn summarize(messages: &[Value], prior: Option<&str>) -> String {
    let t = thread::parse(RawThread {
        messages,
        ..Default::default()
    })
    .expect("a valid thread");
    heuristic(&canonical(&t.messages), prior, LIMIT, tokens)
}

/// The per-iteration injection of `messages` extending `prior`, as the
/// compressor writes it (`group_by: "iteration"`, heuristic, repaired entry
/// by entry): an iteration opens at each user request (a user message
/// carrying only tool results answers the agent's calls and belongs to
/// its iteration), numbered from `first`.
pub fn injection(messages: &[Value], first: u64, prior: Option<&str>) -> String {
    let t = thread::parse(RawThread {
        messages,
        ..Default::default()
    })
    .expect("a valid thread");
    let mut it = first.saturating_sub(1);
    let its: Vec<u64> = messages
        .iter()
        .map(|m| {
            it += u64::from(opens(m));
            it.max(first)
        })
        .collect();
    written(&t.messages, Some(&its), prior, LIMIT)
}

/// The heuristic summary (o200k, `limit` tokens) of `span` extending
/// `prior`, as the compressor has it written: through the service,
/// repaired, its receipt taken; per iteration when `its` gives each
/// message's iteration.
pub fn written(
    span: &[condense::thread::Message],
    its: Option<&[u64]>,
    prior: Option<&str>,
    limit: usize,
) -> String {
    write(span, its, prior, limit).content
}

/// [`written`] with its receipt and warnings.
pub fn write(
    span: &[condense::thread::Message],
    its: Option<&[u64]>,
    prior: Option<&str>,
    limit: usize,
) -> condense::summarize::Written {
    let models = ModelRegistry::embedded();
    let counter =
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global());
    let settings = SummarySettings {
        prior: prior.map(str::to_string),
        limit,
        writer: Writer::Heuristic,
        instructions: None,
        counter,
        fallback: true,
    };
    let req = match its {
        Some(its) => SummaryRequest::by_iteration(span, its, settings),
        None => SummaryRequest::new(span, settings),
    };
    static SERVICE: LazyLock<SummaryService> =
        LazyLock::new(|| SummaryService::new(None, Cache::Off));
    block_on(SERVICE.write(&req)).expect("no upstream to fail")
}

/// Whether `m` opens an iteration (see [`injection`]).
pub fn opens(m: &Value) -> bool {
    let tool_results = m["content"]
        .as_array()
        .is_some_and(|c| !c.is_empty() && c.iter().all(|b| b["type"] == "tool_result"));
    m["role"] == "user" && !tool_results
}

/// Facts kept, of facts said, overall and per half of the span.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recall {
    pub kept: usize,
    pub total: usize,
    pub first: (usize, usize),
    pub second: (usize, usize),
}

impl Recall {
    /// `facts` as (text, where in the span in [0, 1)); each text once, at
    /// its first place.
    pub fn of(summary: &str, facts: &[(String, f64)]) -> Recall {
        let mut seen = std::collections::HashSet::new();
        let mut r = Recall::default();
        for (text, at) in facts {
            if !seen.insert(text.as_str()) {
                continue;
            }
            let kept = usize::from(summary.contains(text.as_str()));
            r.kept += kept;
            r.total += 1;
            let half = if *at < 0.5 {
                &mut r.first
            } else {
                &mut r.second
            };
            half.0 += kept;
            half.1 += 1;
        }
        r
    }

    pub fn add(&mut self, o: Recall) {
        self.kept += o.kept;
        self.total += o.total;
        self.first.0 += o.first.0;
        self.first.1 += o.first.1;
        self.second.0 += o.second.0;
        self.second.1 += o.second.1;
    }

    pub fn pct(&self) -> f64 {
        pct(self.kept, self.total)
    }
    pub fn first_pct(&self) -> f64 {
        pct(self.first.0, self.first.1)
    }
    pub fn second_pct(&self) -> f64 {
        pct(self.second.0, self.second.1)
    }

    pub fn row(&self, name: &str, tokens: usize) -> String {
        format!(
            "| {name} | {}/{} | {:.1}% | {:.1}% | {:.1}% | {tokens} |",
            self.kept,
            self.total,
            self.pct(),
            self.first_pct(),
            self.second_pct()
        )
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A fixture thread's span (its messages but the system prompt, the newest
/// 10% kept out) and its planted facts that the span says, with where.
pub fn fixture_span(name: &str) -> (Vec<Value>, Vec<(String, f64)>) {
    let read = |f: &str| -> Value {
        let path = format!("{}/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("fixture readable");
        serde_json::from_str(&text).expect("fixture is JSON")
    };
    let thread = read(&format!("data/threads/{name}.json"));
    let stem = name.split('.').next().unwrap();
    let facts = read(&format!("tests/fixtures/facts/{stem}.facts.json"));
    let all: Vec<Value> = thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    let span = all[..all.len() * 9 / 10].to_vec();
    // Each message as it reads in JSON, to find where a fact is said.
    let texts: Vec<String> = span.iter().map(|m| m.to_string()).collect();
    let mut planted = Vec::new();
    for key in [
        "paths",
        "commands",
        "errors",
        "user_constraints",
        "decisions",
    ] {
        for fact in facts[key].as_array().unwrap() {
            let fact = fact.as_str().unwrap();
            let quoted = Value::from(fact).to_string();
            let needle = &quoted[1..quoted.len() - 1];
            if let Some(i) = texts.iter().position(|t| t.contains(needle)) {
                planted.push((fact.to_string(), i as f64 / span.len() as f64));
            }
        }
    }
    (span, planted)
}

/// The heuristic summary of `messages` in at most `limit` tokens, as the
/// compressor writes and repairs it (the service: extracted, written,
/// checked against its anchors, the missing ones appended within the limit).
pub fn repaired(messages: &[Value], limit: usize) -> String {
    let t = thread::parse(RawThread {
        messages,
        ..Default::default()
    })
    .expect("a valid thread");
    let models = ModelRegistry::embedded();
    let counter =
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global());
    let settings = SummarySettings {
        prior: None,
        limit,
        writer: Writer::Heuristic,
        instructions: None,
        counter,
        fallback: true,
    };
    let req = SummaryRequest::new(&t.messages, settings);
    static SERVICE: LazyLock<SummaryService> =
        LazyLock::new(|| SummaryService::new(None, Cache::Off));
    block_on(SERVICE.write(&req))
        .expect("no upstream to fail")
        .content
}
