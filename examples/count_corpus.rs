//! Single-threaded counting throughput of condense on the thread-fixture corpus,
//! for the same-run comparison with Python tiktoken (`bench/run.sh`).
//!
//! ```text
//! cargo run --release --example count_corpus -- [--iterations N] [--fixtures DIR] [--dump-corpus FILE]
//! ```
//!
//! The corpus is every non-empty text of every `*.openai.json` / `*.anthropic.json`
//! thread fixture (message texts, thinking, tool-call arguments, tool results),
//! in file order: the same list `benches/count.rs` measures. `--dump-corpus`
//! writes it as a JSON array of strings so the Python side counts exactly the
//! same texts. Each text is counted with one `Encoders::count` call; a pass
//! counts all of them; the reported time is the median of N passes after one
//! warm-up pass. The same is timed with the piece memo unused (`cold`: every
//! piece merged), with `bpe-openai`'s own count (the library condense
//! builds on), and as condense counted before its own merge (`before`,
//! `before_cold`: pieces merged by `bpe-openai`). Prints one JSON object on stdout; MB are 10^6 bytes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use condense::thread::{self, Part, RawThread, WireFormat};
use condense::tokens::probe::{self, Stage};
use condense::tokens::{Encoders, Encoding};
use serde_json::{Value, json};

struct Args {
    iterations: usize,
    fixtures: PathBuf,
    dump_corpus: Option<PathBuf>,
}

fn args() -> anyhow::Result<Args> {
    let mut out = Args {
        iterations: 10,
        fixtures: Path::new(env!("CARGO_MANIFEST_DIR")).join("data/threads"),
        dump_corpus: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--iterations" => {
                out.iterations = value()?.parse().context("--iterations")?;
                anyhow::ensure!(out.iterations > 0, "--iterations must be > 0");
            }
            "--fixtures" => out.fixtures = value()?.into(),
            "--dump-corpus" => out.dump_corpus = Some(value()?.into()),
            other => bail!(
                "unknown argument `{other}`; usage: count_corpus [--iterations N] [--fixtures DIR] [--dump-corpus FILE]"
            ),
        }
    }
    Ok(out)
}

fn collect_texts(part: &Part, out: &mut Vec<String>) {
    let mut texts = Vec::new();
    part.texts(&mut texts);
    out.extend(texts.into_iter().map(str::to_string));
}

/// Every non-empty text of every fixture thread, files sorted by name.
fn corpus(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let format = if name.ends_with(".openai.json") {
            WireFormat::OpenAi
        } else if name.ends_with(".anthropic.json") {
            WireFormat::Anthropic
        } else {
            continue;
        };
        files.push((path, format));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    anyhow::ensure!(!files.is_empty(), "no thread fixtures in {}", dir.display());

    let mut texts = Vec::new();
    for (path, format) in files {
        let body: Value = serde_json::from_slice(&std::fs::read(&path)?)
            .with_context(|| format!("parsing {}", path.display()))?;
        let raw = RawThread {
            format: Some(format),
            messages: body["messages"].as_array().map_or(&[], Vec::as_slice),
            system: body.get("system"),
            tools: body.get("tools"),
        };
        let thread = thread::parse(raw)
            .map_err(|e| anyhow::anyhow!("{} is not a valid thread: {e:?}", path.display()))?;
        for m in thread.system.iter().chain(&thread.messages) {
            m.parts.iter().for_each(|p| collect_texts(p, &mut texts));
        }
    }
    texts.retain(|t| !t.is_empty());
    Ok(texts)
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    let texts = corpus(&args.fixtures)?;
    let bytes: usize = texts.iter().map(String::len).sum();
    if let Some(path) = &args.dump_corpus {
        std::fs::write(path, serde_json::to_vec(&texts)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }

    let encoders = Encoders::load()?;
    // Timed passes of `count` over every text: the median and the fastest.
    let time = |count: &dyn Fn(&str) -> usize| -> (usize, f64, f64) {
        let pass = || -> usize {
            texts
                .iter()
                .map(|t| count(std::hint::black_box(t.as_str())))
                .sum()
        };
        let tokens = pass(); // warm-up, and the total to check against tiktoken
        let mut secs: Vec<f64> = (0..args.iterations)
            .map(|_| {
                let start = Instant::now();
                let n = pass();
                let elapsed = start.elapsed().as_secs_f64();
                assert_eq!(n, tokens, "counting is deterministic");
                elapsed
            })
            .collect();
        secs.sort_by(f64::total_cmp);
        (tokens, secs[secs.len() / 2], secs[0])
    };
    let mut results = Vec::new();
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let (tokens, median, min) = time(&|t| encoders.count(encoding, t));
        // A cold memo at its coldest (every piece merged) and the library
        // condense builds on, in the same run.
        let (cold_tokens, cold, _) = time(&|t| probe::run(encoding, t, Stage::CountNoMemo));
        let library = match encoding {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            _ => bpe_openai::cl100k_base(),
        };
        let (library_tokens, library_median, _) = time(&|t| library.count(t));
        // As before the merge of `tokens::merge` (each piece merged by
        // bpe-openai), warm and cold.
        let (_, before, _) = time(&|t| probe::run(encoding, t, Stage::CountLibraryMerge));
        let (_, before_cold, _) =
            time(&|t| probe::run(encoding, t, Stage::CountNoMemoLibraryMerge));
        anyhow::ensure!(
            cold_tokens == tokens && library_tokens == tokens,
            "{encoding}: {tokens} tokens, {cold_tokens} cold, {library_tokens} by bpe-openai"
        );
        results.push(json!({
            "encoding": encoding.as_str(),
            "tokens": tokens,
            "seconds_median": median,
            "seconds_min": min,
            "mb_per_s": bytes as f64 / median / 1e6,
            "cold_mb_per_s": bytes as f64 / cold / 1e6,
            "bpe_openai_mb_per_s": bytes as f64 / library_median / 1e6,
            "before_mb_per_s": bytes as f64 / before / 1e6,
            "before_cold_mb_per_s": bytes as f64 / before_cold / 1e6,
        }));
    }

    let out = json!({
        "implementation": "condense",
        "texts": texts.len(),
        "bytes": bytes,
        "iterations": args.iterations,
        "results": results,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
