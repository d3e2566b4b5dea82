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
    /// The count before the merge of [`merge`](super::merge): pieces cut
    /// by hand, memoized, merged by `bpe-openai` (a warm memo).
    CountLibraryMerge,
    /// The same without the memo: every piece through `bpe-openai`'s merge
    /// (a cold memo, at its coldest).
    CountNoMemoLibraryMerge,
    /// The count as it is, without the memo: every piece through the merge.
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
        Stage::CountLibraryMerge => Way {
            library_merge: true,
            ..Way::default()
        },
        Stage::CountNoMemoLibraryMerge => Way {
            no_memo: true,
            library_merge: true,
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

// Linux: CPU time read with `libc`.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::Duration;

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

    /// This thread's CPU time: on a machine shared with other builds, the
    /// wall clock counts the time the thread waited for a core.
    fn cpu_time() -> Duration {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    /// Where a count's time goes, each stage timed in turn over rounds and
    /// its fastest round kept (a shared machine slows some rounds, never
    /// speeds one up), in CPU time.
    #[test]
    #[ignore = "a measurement: cargo test --release --lib tokens::probe -- --ignored --nocapture"]
    fn stage_speeds() {
        let texts = corpus();
        let bytes: usize = texts.iter().map(String::len).sum();
        let stages = [
            ("split_by_regex", Some(Stage::SplitByRegex)),
            ("split_by_hand", Some(Stage::SplitByHand)),
            ("count_by_regex", Some(Stage::CountByRegex)),
            ("count_library_merge", Some(Stage::CountLibraryMerge)),
            (
                "count_no_memo_library",
                Some(Stage::CountNoMemoLibraryMerge),
            ),
            ("count_no_memo (cold)", Some(Stage::CountNoMemo)),
            ("count (warm)", Some(Stage::Count)),
            ("bpe_openai", None),
        ];
        println!("{} texts, {bytes} bytes", texts.len());
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let tokenizer = match encoding {
                Encoding::O200kBase => bpe_openai::o200k_base(),
                _ => bpe_openai::cl100k_base(),
            };
            let mut best = [Duration::MAX; 8];
            let mut answers = [0; 8];
            for _ in 0..15 {
                for (i, (_, stage)) in stages.iter().enumerate() {
                    let start = cpu_time();
                    answers[i] = texts
                        .iter()
                        .map(|t| match stage {
                            Some(stage) => run(encoding, std::hint::black_box(t), *stage),
                            None => tokenizer.count(std::hint::black_box(t.as_str())),
                        })
                        .sum::<usize>();
                    best[i] = best[i].min(cpu_time() - start);
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
            let ratio = |before: usize, after: usize| {
                best[before].as_secs_f64() / best[after].as_secs_f64()
            };
            println!(
                "{encoding} merge, warm: {:.2}x; cold: {:.2}x; cold over bpe_openai: {:.2}x",
                ratio(3, 6),
                ratio(4, 5),
                ratio(7, 5)
            );
        }
    }
}
