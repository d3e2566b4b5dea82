//! Heuristic compression of the largest fixture thread (large-04, ~320
//! messages, ~140k tokens), in both wire formats: what `/v1/compress` does
//! per request minus HTTP and JSON (de)serialization.

use std::path::Path;
use std::time::Duration;

use condense::compress::{Compression, Compressor};
use condense::policy::Profile;
use condense::summarize::Strategy;
use condense::thread::{self, RawThread, WireFormat};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;

fn bench(c: &mut Criterion) {
    let compressor = Compressor::offline();
    let mut group = c.benchmark_group("compress");
    group
        .measurement_time(Duration::from_secs(8))
        .sample_size(20);
    for (name, format) in [
        ("large-04.openai", WireFormat::OpenAi),
        ("large-04.anthropic", WireFormat::Anthropic),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/threads/{name}.json"));
        let bytes = std::fs::read(&path).expect("fixture readable");
        let body: Value = serde_json::from_slice(&bytes).expect("fixture is JSON");
        let model = body["model"].as_str().unwrap().to_string();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("heuristic/{name}"), |b| {
            b.iter(|| {
                let messages = body["messages"].as_array().unwrap();
                let t = thread::parse(RawThread {
                    format: Some(format),
                    messages,
                    system: body.get("system"),
                    tools: body.get("tools"),
                })
                .unwrap();
                let out = compressor
                    .run_offline(Compression {
                        model: Some(model.clone()),
                        strategy: Strategy::Heuristic,
                        force: true,
                        ..Compression::new(t, Profile::default())
                    })
                    .unwrap();
                assert!(out.compressed);
                out.tokens_after
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
