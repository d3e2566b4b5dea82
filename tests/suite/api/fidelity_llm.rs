//! Anchor recall of real `llm` and `hybrid` summaries, before and after the
//! repair, on the fixture threads (the local model, see `llm_e2e.rs`).
//!
//! "Before" is what the written text held on its own (the receipt's `kept`,
//! taken again here on the text without its `### Also in the span` list),
//! "after" what the repaired summary holds. A tiny model keeps few anchors;
//! the repair must lift every summary to at least 98%. One line per
//! summary, `--nocapture` friendly:
//! `fidelity <strategy> <thread>: anchors N, recall before X% after Y%, repair +T tokens`.

use std::time::Instant;

use serde_json::{Value, json};

use condense::summarize::ALSO;
use condense::tokens::{CountSpec, Encoders, Method, ModelRegistry};

use super::fidelity::{receipt, retaken};
use crate::support::common::{app_with_local_llm, post, thread};

/// The fixtures the model summarizes: the small ones by default, every
/// one with `CONDENSE_TEST_FIDELITY_ALL=1` (the tiny model decodes a few
/// tokens a second on two shared cores, and a medium thread takes several
/// chunks of up to the limit each).
fn threads() -> Vec<&'static str> {
    let all = std::env::var("CONDENSE_TEST_FIDELITY_ALL").is_ok_and(|v| v == "1");
    let mut t = vec!["small-00", "small-01"];
    if all {
        t.extend(["medium-02", "medium-03", "large-04"]);
    }
    t
}

/// Room for the model's text and the repair's list: the bound must hold,
/// and the model's share (the limit less the list's room) is what it decodes.
const MAX_SUMMARY_TOKENS: u64 = 1500;

const MIN_RECALL: f64 = 0.98;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repair_lifts_real_summaries_to_full_recall() {
    let Some(url) = crate::support::live::llm("the_repair_lifts_real_summaries_to_full_recall")
    else {
        return;
    };
    let app = app_with_local_llm(url);
    let models = ModelRegistry::embedded();
    let c =
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global());
    let mut failures = Vec::new();
    for strategy in ["llm", "hybrid"] {
        let (mut anchors, mut before, mut after) = (0, 0, 0);
        for name in threads() {
            let t = thread(&format!("{name}.openai"));
            let messages: Vec<Value> = t["messages"].as_array().unwrap().clone();
            let body = json!({"messages": messages, "tools": t["tools"], "model": "gpt-4o",
                "force": true, "summarizer": {"strategy": strategy},
                "config": {"max_summary_tokens": MAX_SUMMARY_TOKENS, "on_upstream_error": "fail"}});
            let started = Instant::now();
            let r = post(&app, "/v1/compress", &body).await;
            assert_eq!(r.status, 200, "{strategy} {name}: {}", r.text());
            let out = r.json();
            assert_eq!(out["summary"]["strategy"], strategy, "{}", out["warnings"]);
            let f = receipt(&out);
            assert_eq!(f, retaken(&messages, &out), "{strategy} {name}");
            let content = out["summary"]["content"].as_str().unwrap();
            let written = content.split(ALSO).next().unwrap_or(content).trim_end();
            let repair = c
                .text(content)
                .tokens
                .saturating_sub(c.text(written).tokens);
            assert!(c.text(content).tokens as u64 <= MAX_SUMMARY_TOKENS);
            let pct = |n: usize| 100.0 * n as f64 / f.anchors as f64;
            eprintln!(
                "fidelity {strategy} {name}: anchors {}, recall before {:.1}% after {:.1}%, repair +{repair} tokens ({} missing, {} left out; {:.0} s)",
                f.anchors,
                pct(f.kept),
                pct(f.kept + f.added),
                f.missing,
                f.left_out,
                started.elapsed().as_secs_f64()
            );
            if ((f.kept + f.added) as f64) < MIN_RECALL * f.anchors as f64 {
                failures.push(format!("{strategy} {name}: {f:?}"));
            }
            (anchors, before, after) = (
                anchors + f.anchors,
                before + f.kept,
                after + f.kept + f.added,
            );
        }
        eprintln!(
            "fidelity {strategy} (all {} threads): anchors {anchors}, recall before {:.1}% after {:.1}%",
            threads().len(),
            100.0 * before as f64 / anchors as f64,
            100.0 * after as f64 / anchors as f64,
        );
    }
    assert!(
        failures.is_empty(),
        "below {MIN_RECALL} after repair: {failures:#?}"
    );
}
