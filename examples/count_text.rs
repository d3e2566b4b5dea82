//! Single-threaded counting speed on one large text, three ways, for
//! `bench/all.py`: raw `bpe-openai` (the floor condense builds on), condense's
//! `Encoders::count` (what `/v1/tokens` runs on a `text`), and the token
//! count itself so the Python side can be checked against it.
//!
//! ```text
//! cargo run --release --example count_text -- FILE [--iterations N]
//! ```
//!
//! Each way counts the whole file once per pass; the reported time is the
//! median of N passes after one warm-up pass. Prints one JSON object; MB are
//! 10^6 bytes.

use std::time::Instant;

use anyhow::Context;
use condense::tokens::{Encoders, Encoding};
use serde_json::json;

fn median_secs(iterations: usize, mut pass: impl FnMut() -> usize) -> (f64, usize) {
    let tokens = pass(); // warm-up
    let mut times: Vec<f64> = (0..iterations)
        .map(|_| {
            let start = Instant::now();
            let n = pass();
            assert_eq!(n, tokens, "a count changed between passes");
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], tokens)
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .context("usage: count_text FILE [--iterations N]")?;
    let iterations = match (args.next().as_deref(), args.next()) {
        (Some("--iterations"), Some(n)) => n.parse().context("--iterations N")?,
        _ => 5,
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    let mb = text.len() as f64 / 1e6;
    let encoders = Encoders::global();
    let (raw, raw_tokens) = median_secs(iterations, || bpe_openai::o200k_base().count(&text));
    let (ours, tokens) = median_secs(iterations, || encoders.count(Encoding::O200kBase, &text));
    anyhow::ensure!(raw_tokens == tokens, "condense and bpe-openai disagree");
    println!(
        "{}",
        json!({
            "bytes": text.len(),
            "encoding": "o200k_base",
            "tokens": tokens,
            "raw_bpe_mb_s": mb / raw,
            "condense_mb_s": mb / ours,
        })
    );
    Ok(())
}
