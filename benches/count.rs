//! Token-counting benchmarks on the thread fixtures (realistic coding-agent threads).
//!
//! - `text/*`: raw BPE throughput of [`Encoders::count`] over every text of every
//!   fixture thread (message texts, thinking, tool-call arguments, tool results),
//!   one call per text as the service counts them (`pieces`), and once more with
//!   all texts joined into one long string (`joined`).
//! - `stage/*`: where a count's time goes, on the same texts: cutting into
//!   pieces only (`split_by_regex`, `split_by_hand`), the count as it was
//!   (`count_by_regex`: regex pieces, memo), with `bpe-openai`'s merge
//!   (`count_library_merge`, and `count_no_memo_library_merge`: every piece
//!   merged, a cold memo), as it is without the memo (`count_no_memo`) and
//!   as it is (`count`), and `bpe-openai`'s own count
//!   (`bpe_openai`, the library condense builds on).
//! - `thread/*`: a whole request thread, large-04 in both wire formats: counting
//!   an already parsed [`Thread`] (`count`), parsing the JSON value and counting
//!   (`parse_count`), and the full path from JSON text (`json_parse_count`).
//!
//! Throughput is in decimal MB/s of input (text bytes for `text/*`, JSON file
//! bytes for `thread/*`). See `bench/README.md`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use condense::thread::{self, Part, RawThread, Thread, WireFormat};
use condense::tokens::probe::{self, Stage};
use condense::tokens::{CountSpec, Encoders, Encoding, Method, ModelRegistry};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/threads")
}

/// The thread fixtures (`*.openai.json`, `*.anthropic.json`), sorted by name.
fn fixture_files() -> Vec<(PathBuf, WireFormat)> {
    let mut files: Vec<(PathBuf, WireFormat)> = std::fs::read_dir(fixtures_dir())
        .expect("data/threads is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let format = if name.ends_with(".openai.json") {
                WireFormat::OpenAi
            } else if name.ends_with(".anthropic.json") {
                WireFormat::Anthropic
            } else {
                return None;
            };
            Some((p, format))
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!files.is_empty(), "no thread fixtures found");
    files
}

fn raw(body: &Value, format: WireFormat) -> RawThread<'_> {
    RawThread {
        format: Some(format),
        messages: body["messages"].as_array().map_or(&[], Vec::as_slice),
        system: body.get("system"),
        tools: body.get("tools"),
    }
}

fn parse_file(path: &Path, format: WireFormat) -> (Value, Thread) {
    let body: Value = serde_json::from_slice(&std::fs::read(path).expect("fixture readable"))
        .expect("fixture is JSON");
    let thread = thread::parse(raw(&body, format))
        .unwrap_or_else(|e| panic!("{} does not parse: {e:?}", path.display()));
    (body, thread)
}

fn collect_texts(part: &Part, out: &mut Vec<String>) {
    let mut texts = Vec::new();
    part.texts(&mut texts);
    out.extend(texts.into_iter().map(str::to_string));
}

/// The text corpus: every non-empty text of every fixture thread, in file order.
/// `examples/count_corpus.rs` builds the same list for the tiktoken comparison.
fn corpus() -> Vec<String> {
    let mut texts = Vec::new();
    for (path, format) in fixture_files() {
        let (_, thread) = parse_file(&path, format);
        for m in thread.system.iter().chain(&thread.messages) {
            m.parts.iter().for_each(|p| collect_texts(p, &mut texts));
        }
    }
    texts.retain(|t| !t.is_empty());
    texts
}

fn bench_text(c: &mut Criterion, encoders: &Encoders) {
    let texts = corpus();
    let joined = texts.join("\n");
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("text");
    // Each iteration takes tens of milliseconds: same iteration count per sample.
    group.sampling_mode(SamplingMode::Flat);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        group.throughput(Throughput::BytesDecimal(bytes as u64));
        group.bench_function(format!("{encoding}/pieces"), |b| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|t| encoders.count(encoding, std::hint::black_box(t)))
                    .sum::<usize>()
            })
        });
        group.throughput(Throughput::BytesDecimal(joined.len() as u64));
        group.bench_function(format!("{encoding}/joined"), |b| {
            b.iter(|| encoders.count(encoding, std::hint::black_box(&joined)))
        });
    }
    group.finish();
}

fn bench_stage(c: &mut Criterion) {
    let texts = corpus();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("stage");
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::BytesDecimal(bytes as u64));
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for (name, stage) in [
            ("split_by_regex", Stage::SplitByRegex),
            ("split_by_hand", Stage::SplitByHand),
            ("count_by_regex", Stage::CountByRegex),
            ("count_library_merge", Stage::CountLibraryMerge),
            (
                "count_no_memo_library_merge",
                Stage::CountNoMemoLibraryMerge,
            ),
            ("count_no_memo", Stage::CountNoMemo),
            ("count", Stage::Count),
        ] {
            group.bench_function(format!("{encoding}/{name}"), |b| {
                b.iter(|| {
                    texts
                        .iter()
                        .map(|t| probe::run(encoding, std::hint::black_box(t), stage))
                        .sum::<usize>()
                })
            });
        }
        let tokenizer = match encoding {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            _ => bpe_openai::cl100k_base(),
        };
        group.bench_function(format!("{encoding}/bpe_openai"), |b| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|t| tokenizer.count(std::hint::black_box(t.as_str())))
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

fn bench_thread(c: &mut Criterion, encoders: &Encoders) {
    let registry = ModelRegistry::embedded();
    let mut group = c.benchmark_group("thread");
    group.sampling_mode(SamplingMode::Flat);
    for (suffix, format) in [
        ("openai", WireFormat::OpenAi),
        ("anthropic", WireFormat::Anthropic),
    ] {
        let path = fixtures_dir().join(format!("large-04.{suffix}.json"));
        let json = std::fs::read_to_string(&path).expect("large-04 fixture readable");
        let (body, parsed) = parse_file(&path, format);
        // Count as the service would for the thread's own model.
        let spec = CountSpec::resolve(
            &registry,
            "gpt-4o",
            body["model"].as_str(),
            None,
            Method::Bpe,
        );
        let counter = spec.counter(encoders);
        let name = format!("large-04.{suffix}/{}", spec.encoding);
        group.throughput(Throughput::BytesDecimal(json.len() as u64));

        group.bench_function(format!("count/{name}"), |b| {
            b.iter(|| counter.thread(std::hint::black_box(&parsed)).total)
        });
        group.bench_function(format!("parse_count/{name}"), |b| {
            b.iter(|| {
                let t = thread::parse(raw(std::hint::black_box(&body), format)).unwrap();
                counter.thread(&t).total
            })
        });
        group.bench_function(format!("json_parse_count/{name}"), |b| {
            b.iter(|| {
                let body: Value = serde_json::from_str(std::hint::black_box(&json)).unwrap();
                let t = thread::parse(raw(&body, format)).unwrap();
                counter.thread(&t).total
            })
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    let encoders = Encoders::load().expect("encoders load");
    bench_stage(c);
    bench_text(c, &encoders);
    bench_thread(c, &encoders);
}

criterion_group! {
    name = count;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(count);
