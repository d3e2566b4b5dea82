//! The fidelity receipt on the example threads (issue 36's Done-when: "the
//! receipt's recall on the example threads stays at or above today's"):
//! the plain heuristic summary of each thread's span (the newest 10% kept
//! out), at the default 2,000-token bound, as the service writes and
//! repairs it. Recall is `(kept + added) / anchors`; the threshold is the
//! issue's "today's" (99.8% before t46-plain's denser first summary).
//!
//! `cargo test --test suite recall::receipt -- --nocapture` prints the figures.

use condense::summarize::anchors::{Anchors, anchors};
use condense::summarize::canonical;
use condense::summarize::receipt::check;
use condense::thread::{self, RawThread};

use super::FIXTURES;
use super::measure::{LIMIT, fixture_span, tokens, write};

#[test]
fn the_receipt_on_the_example_threads() {
    let (mut held, mut total) = (0, 0);
    for name in FIXTURES {
        let (span, _) = fixture_span(name);
        let t = thread::parse(RawThread {
            messages: &span,
            ..Default::default()
        })
        .expect("a valid thread");
        let w = write(&t.messages, None, None, LIMIT);
        let f = w.fidelity.expect("a receipt");
        println!(
            "{name}: {} of {} anchors ({} kept, {} added, {} missing), {} tokens",
            f.kept + f.added,
            f.anchors,
            f.kept,
            f.added,
            f.missing,
            tokens(&w.content)
        );
        if std::env::var_os("RECEIPT_SHOW").is_some_and(|v| name.starts_with(v.to_str().unwrap())) {
            println!("{}\n", w.content);
            let all = anchors(&canonical(&t.messages));
            for a in &all.items {
                let one = Anchors {
                    items: vec![a.clone()],
                    left_out: 0,
                };
                if check(&one, &w.content).missing > 0 {
                    println!("missing {:?}: {}", a.kind, a.item);
                }
            }
        }
        held += f.kept + f.added;
        total += f.anchors;
    }
    let pct = 100.0 * held as f64 / total as f64;
    println!("example threads: {held} of {total} anchors ({pct:.1}%)");
    // Measured: 458 of 458. Before t46-plain 477 of 478, after it 463 of
    // 478: the 15 were URLs from licence headers and Cargo.toml links in the
    // bodies of files large-04 and small-00 write, which the anchors no
    // longer count (`anchors::called`); no summary changed but the three
    // whose repair had listed some of them.
    assert!(pct >= 99.8, "{held} of {total} anchors");
}
