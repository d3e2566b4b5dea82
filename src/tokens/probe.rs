//! Ways of counting that production does not take, for the benchmarks that
//! tell where a count's time goes (`benches/count.rs`, group `stage`): not
//! an API.

use super::Encoding;
use super::pieces::{Way, count_as};

/// One stage of a count, or a count without one of its shortcuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Only cut into pieces, by the regex (the pre-tokenizer before).
    SplitByRegex,
    /// Only cut into pieces, by hand (the regex where the scan gives up).
    SplitByHand,
    /// The count as it was: cut by the regex, short pieces memoized.
    CountByRegex,
    /// The count as it is, without the memo: every piece through the BPE.
    CountNoMemo,
    /// The count as it is ([`Encoders::count`](super::Encoders::count)).
    Count,
}

/// What `stage` gives on `text` under `encoding` (o200k or cl100k): the
/// number of pieces for a split, else the number of tokens.
pub fn run(encoding: Encoding, text: &str, stage: Stage) -> usize {
    let (tokenizer, slot) = match encoding {
        Encoding::O200kBase => (bpe_openai::o200k_base(), 0),
        Encoding::Cl100kBase => (bpe_openai::cl100k_base(), 1),
        other => panic!("{other} is not cut by pieces"),
    };
    let way = match stage {
        Stage::SplitByRegex => Way {
            regex_only: true,
            split_only: true,
            ..Way::default()
        },
        Stage::SplitByHand => Way {
            split_only: true,
            ..Way::default()
        },
        Stage::CountByRegex => Way {
            regex_only: true,
            ..Way::default()
        },
        Stage::CountNoMemo => Way {
            no_memo: true,
            ..Way::default()
        },
        Stage::Count => Way::default(),
    };
    count_as(tokenizer, slot, text, way)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{Encoding, Stage, run};

    /// Every string of the thread fixtures' JSON (texts, arguments, results).
    fn corpus() -> Vec<String> {
        fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) if !s.is_empty() => out.push(s.clone()),
                serde_json::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
                serde_json::Value::Object(o) => o.values().for_each(|v| strings(v, out)),
                _ => {}
            }
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/threads");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("data/threads")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths {
            let v = serde_json::from_slice(&std::fs::read(p).expect("readable")).expect("JSON");
            strings(&v, &mut out);
        }
        out
    }

    /// Where a count's time goes, each stage timed in turn over rounds and
    /// its fastest round kept (a shared machine slows some rounds, never
    /// speeds one up).
    #[test]
    #[ignore = "a measurement: cargo test --release --lib tokens::probe -- --ignored --nocapture"]
    fn stage_speeds() {
        let texts = corpus();
        let bytes: usize = texts.iter().map(String::len).sum();
        let stages = [
            ("split_by_regex", Some(Stage::SplitByRegex)),
            ("split_by_hand", Some(Stage::SplitByHand)),
            ("count_by_regex (before)", Some(Stage::CountByRegex)),
            ("count_no_memo", Some(Stage::CountNoMemo)),
            ("count (after)", Some(Stage::Count)),
            ("bpe_openai", None),
        ];
        println!("{} texts, {bytes} bytes", texts.len());
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tokenizer = match encoding {
                Encoding::O200kBase => bpe_openai::o200k_base(),
                _ => bpe_openai::cl100k_base(),
            };
            let mut best = [Duration::MAX; 6];
            let mut answers = [0; 6];
            for _ in 0..15 {
                for (i, (_, stage)) in stages.iter().enumerate() {
                    let start = Instant::now();
                    answers[i] = texts
                        .iter()
                        .map(|t| match stage {
                            Some(stage) => run(encoding, std::hint::black_box(t), *stage),
                            None => tokenizer.count(std::hint::black_box(t.as_str())),
                        })
                        .sum::<usize>();
                    best[i] = best[i].min(start.elapsed());
                }
            }
            assert_eq!(answers[0], answers[1], "pieces");
            assert!(answers[2..].iter().all(|&n| n == answers[2]), "{answers:?}");
            for ((name, _), time) in stages.iter().zip(best) {
                let mbs = bytes as f64 / time.as_secs_f64() / 1e6;
                println!(
                    "{encoding} {name:24} {:8.2} ms {mbs:7.1} MB/s",
                    time.as_secs_f64() * 1e3
                );
            }
            let ratio = best[2].as_secs_f64() / best[4].as_secs_f64();
            println!("{encoding} after/before: {ratio:.2}x");
        }
    }
}
