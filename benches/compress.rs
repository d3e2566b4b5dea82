//! Heuristic compression of the largest fixture thread (large-04, ~320
//! messages, ~140k tokens), in every wire format: what `/v1/compress` does
//! per request minus HTTP and JSON (de)serialization: the thread parsed and
//! then compressed by `Compressor::run` on a current-thread runtime, CPU work on
//! its blocking pool as in the handler (no upstream, no cache). Beside it, tool-result
//! clearing (`clear_tool_results` with the default `clear` settings) on the
//! same thread; before measuring, each case prints its tokens before and
//! after, so the two can be compared.

use std::path::Path;
use std::time::Duration;

use condense::compress::{Compression, Compressor, Outcome};
use condense::policy::Profile;
use condense::summarize::Strategy;
use condense::thread::{self, RawThread, WireFormat};
use condense::tokens::cancel::cpu;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;

fn bench(c: &mut Criterion) {
    let compressor = Compressor::offline();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let mut group = c.benchmark_group("compress");
    group
        .measurement_time(Duration::from_secs(8))
        .sample_size(20);
    // The thread's file, its format, and its fields for the thread and its instructions.
    for (name, format, (key, system)) in [
        (
            "data/threads/large-04.openai",
            WireFormat::OpenAi,
            ("messages", "system"),
        ),
        (
            "data/threads/large-04.anthropic",
            WireFormat::Anthropic,
            ("messages", "system"),
        ),
        (
            "tests/fixtures/responses/large-04.responses",
            WireFormat::Responses,
            ("input", "instructions"),
        ),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("{name}.json"));
        // Named as before the files moved: `threads/large-04.openai`.
        let name = name
            .trim_start_matches("data/")
            .trim_start_matches("tests/fixtures/");
        let bytes = std::fs::read(&path).expect("fixture readable");
        let body: Value = serde_json::from_slice(&bytes).expect("fixture is JSON");
        let model = body["model"].as_str().unwrap().to_string();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let body = std::sync::Arc::new(body);
        // As `/v1/compress` runs it: the thread parsed by a CPU task on the
        // blocking pool (the handler's `app.cpu`), then compressed.
        let run = |strategy: Strategy| -> Outcome {
            let (body, model, compressor) = (body.clone(), model.clone(), &compressor);
            runtime.block_on(async move {
                let t = cpu(move || {
                    thread::parse(RawThread {
                        format: Some(format),
                        messages: body[key].as_array().unwrap(),
                        system: body.get(system),
                        tools: body.get("tools"),
                    })
                    .unwrap()
                })
                .await;
                let req = Compression {
                    model: Some(model),
                    strategy,
                    // Clearing keeps its own default trigger (100,000 tokens).
                    force: strategy != Strategy::ClearToolResults,
                    ..Compression::new(t, Profile::default())
                };
                compressor.run(req).await.unwrap()
            })
        };
        for strategy in [Strategy::Heuristic, Strategy::ClearToolResults] {
            let out = run(strategy);
            assert!(out.compressed);
            println!(
                "{name} {}: tokens {} -> {}, messages {} -> {}, edits {:?}",
                strategy.as_str(),
                out.tokens_before,
                out.tokens_after,
                body[key].as_array().unwrap().len(),
                out.thread.messages.len(),
                out.applied_edits
            );
            group.bench_function(format!("{}/{name}", strategy.as_str()), |b| {
                b.iter(|| run(strategy).tokens_after)
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
