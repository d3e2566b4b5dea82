use super::*;
use crate::summarize::SummarySettings;
use crate::summarize::anchors::tests::sample;
use crate::summarize::anchors::{Kind, anchors};
use crate::tokens::{CountSpec, Encoders, Method, ModelRegistry};

fn counter() -> Counter<'static> {
    let models = ModelRegistry::embedded();
    CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global())
}

fn tokens(s: &str) -> usize {
    counter().text(s).tokens
}

fn adds_up(f: Fidelity) {
    assert_eq!(f.kept + f.added + f.missing, f.anchors, "{f:?}");
}

#[test]
fn a_summary_that_holds_everything_is_left_alone() {
    let a = anchors(&sample());
    let all: String = a.items.iter().map(|x| format!("{}\n", x.item)).collect();
    let (text, f) = repair(&all, &a, 10_000, &counter());
    assert_eq!(text, all);
    assert_eq!(f.kept, f.anchors);
    assert_eq!((f.added, f.missing), (0, 0));
}

#[test]
fn missing_anchors_are_added_most_important_first() {
    let a = anchors(&sample());
    let summary = "The agent looked at SRC/NET/RETRY.RS and ran   git status.";
    let before = check(&a, summary);
    assert_eq!(before.kept, 2, "{before:?}");
    assert_eq!(before.added, 0);
    adds_up(before);
    let (text, f) = repair(summary, &a, 10_000, &counter());
    adds_up(f);
    assert_eq!(
        (f.kept, f.added, f.missing),
        (2, f.anchors - 2, 0),
        "{text}"
    );
    let list = text.split_once(ALSO).expect("a section").1;
    let first: Vec<&str> = list.lines().skip(1).take(3).collect();
    assert!(first[0].starts_with("- \"Fix the flaky test"), "{text}");
    assert_eq!(
        first[1..],
        [
            "- \"Continue.\"",
            "- error[E0599]: no method named `jitter`"
        ]
    );
    // The rule is held by the request's line: not listed twice.
    assert!(!text.contains("- \"Never push"), "{text}");
    // Taken again on the result, the receipt is the same.
    assert_eq!(check(&a, &text), f);
}

#[test]
fn the_limit_wins_and_what_did_not_fit_is_counted() {
    let a = anchors(&sample());
    let summary = "Fixed it.";
    for limit in [3, 20, 40, 60, 90, 10_000] {
        let (text, f) = repair(summary, &a, limit, &counter());
        adds_up(f);
        assert!(
            tokens(&text) <= limit.max(tokens(summary)),
            "{limit}: {text}"
        );
        if limit == 3 {
            assert_eq!(text, summary);
            assert_eq!(f.missing, f.anchors);
        }
        if f.missing > 0 && f.added > 0 {
            assert!(text.contains(" more left out)"), "{limit}: {text}");
        }
        if limit == 10_000 {
            assert_eq!(f.missing, 0);
        }
    }
    let (_, small) = repair(summary, &a, 60, &counter());
    assert!(small.added > 0 && small.missing > 0, "{small:?}");
    // What fits first is the user's own words.
    let (text, _) = repair(summary, &a, 60, &counter());
    assert!(text.contains("Fix the flaky test"), "{text}");
}

#[test]
fn an_existing_list_is_extended_not_repeated() {
    let a = anchors(&sample());
    let prior = format!(
        "### Latest state\nDone.\n\n{ALSO}\n- \"Never push to main.\"\n- (… 4 more left out)"
    );
    let (text, f) = repair(&prior, &a, 10_000, &counter());
    assert_eq!(text.matches(ALSO).count(), 1, "{text}");
    assert!(!text.contains("4 more left out"), "{text}");
    assert_eq!(f.missing, 0);
    assert!(
        text.starts_with(
            "### Latest state\nDone.\n\n### Also in the span\n- \"Never push to main.\"\n"
        ),
        "{text}"
    );
}

#[test]
fn an_injection_keeps_its_list_last() {
    let a = anchors(&sample());
    let injection = "Earlier iterations:\n- Iteration 1: Ran the tests.\n- Iteration 2: Fixed it.";
    let (text, f) = repair(injection, &a, 10_000, &counter());
    assert_eq!(f.missing, 0);
    assert!(text.starts_with(ALSO), "{text}");
    let list = crate::summarize::iteration_summaries(&text);
    assert_eq!(list, crate::summarize::iteration_summaries(injection));
}

#[test]
fn words_need_their_boundaries_and_failures_their_status() {
    let a = anchors(&sample());
    let number = a.items.iter().find(|x| x.item == "4411").unwrap();
    assert!(!Forms::of("run 944112").holds(number));
    assert!(Forms::of("run 4411.").holds(number));
    let failed = a
        .items
        .iter()
        .find(|x| x.kind == Kind::FailedCommand)
        .unwrap();
    assert!(!Forms::of("ran `cargo test -p net`").holds(failed));
    assert!(Forms::of("`cargo test -p net` failed with exit code 101").holds(failed));
    // A request is held by its opening words, however wrapped or quoted.
    let request = &a.items[0];
    assert!(
        Forms::of("> FIX the flaky\ntest in src / net / retry.rs — never push to main; ask")
            .holds(request)
    );
}

#[test]
fn a_per_iteration_entrys_mentions_count_as_added() {
    let a = anchors(&sample());
    // Written by hand, as an injection holds it: the path in an entry's
    // facts, `git status` only in its repair, then a rolling entry whose
    // fragment [1] mentions the error and whose fragment [2] says a
    // request in its own words.
    let entry = "Earlier iterations:\n- Earlier iterations 1–2: [1] The user asked \"hi\". Also mentioned: error[E0599]: no method named `jitter`. [2] The user asked \"Continue.\".\n- Iteration 3: Files: src/net/retry.rs. Also mentioned: `git status`.";
    let f = check(&a, entry);
    adds_up(f);
    assert_eq!((f.kept, f.added), (2, 2), "{f:?}");
    assert_eq!(
        without_mentions(entry).unwrap(),
        "Earlier iterations:\n- Earlier iterations 1–2: [1] The user asked \"hi\". [2] The user asked \"Continue.\".\n- Iteration 3: Files: src/net/retry.rs. "
    );
    assert_eq!(without_mentions("No repair."), None);
}

#[test]
fn a_models_text_that_holds_nothing_gives_way_to_the_list() {
    let c = counter();
    let a = anchors(&sample());
    // Prose that names none of the anchors, as long as the whole limit.
    let prose = "The agent worked on the task and made progress. ".repeat(40);
    let limit = tokens(&prose) + 5;
    let (plain, f) = repair(&prose, &a, limit, &c);
    assert_eq!(plain, prose, "no room for a single line");
    assert_eq!(f.added, 0);
    let (text, g) = repair_written(&prose, &a, limit, &c);
    adds_up(g);
    assert!(g.added > 0 && g.missing < f.missing, "{g:?}");
    assert!(tokens(&text) <= limit);
    // The text kept its head and at least a quarter of the limit.
    assert!(text.starts_with("The agent worked on the task"));
    let body = text.split(ALSO).next().unwrap();
    assert!(tokens(body) >= limit / 4, "{text}");
    // A text that holds every anchor is left as it is.
    let all: String = a.items.iter().map(|x| format!("{}\n", x.item)).collect();
    let (same, h) = repair_written(&all, &a, tokens(&all), &c);
    assert_eq!((same, h.kept), (all.clone(), h.anchors));
}

#[test]
fn a_hybrids_narrative_stays_whole_and_its_sections_make_room() {
    let c = counter();
    let a = anchors(&sample());
    let sections = format!(
        "### Progress\n{}",
        "The agent worked on the task and made progress. ".repeat(30)
    );
    let story = "The user and the agent fixed the build together. ".repeat(6);
    let hybrid = format!("{sections}\n\n{NARRATIVE}\n{story}");
    let limit = tokens(&hybrid) + 5;
    let (text, f) = repair_written(&hybrid, &a, limit, &c);
    adds_up(f);
    assert!(f.added > 0, "{f:?}");
    assert!(tokens(&text) <= limit, "{text}");
    let (head, tail) = text
        .split_once(&format!("{NARRATIVE}\n"))
        .unwrap_or_else(|| panic!("a narrative: {text}"));
    assert_eq!(tail, story.trim_end(), "the narrative whole, and last");
    assert!(head.starts_with("### Progress\nThe agent worked"), "{text}");
    assert!(
        head.contains(ALSO),
        "the list in the sections' half: {text}"
    );
    // A narrative over the room on its own: the text is left as it was.
    let long = format!("{sections}\n\n{NARRATIVE}\n{}", story.repeat(8));
    let (same, _) = repair_written(&long, &a, tokens(&long) / 2, &c);
    assert_eq!(same, long);
}

/// The heuristic summary a compression wrote to weigh it is the one the
/// service stores: handed on under its key, it is not written again (a
/// marked copy comes back); under another key, it is not used.
#[tokio::test]
async fn a_weighed_summary_is_stored_not_written_again() {
    let settings = |limit| SummarySettings {
        prior: None,
        limit,
        writer: Writer::Heuristic,
        instructions: None,
        counter: counter(),
        fallback: false,
    };
    let service = super::super::SummaryService::new(None, crate::cache::Cache::Off);
    let mut req = SummaryRequest::new(&sample(), settings(400));
    let weighed = heuristic_now(&req);
    let written = service.write(&req).await.unwrap();
    assert_eq!(written.content, weighed.content);
    assert_eq!(written.fidelity, Some(weighed.fidelity));
    let marked = Weighed {
        content: "(as weighed)".into(),
        ..weighed
    };
    req.weighed = Some(marked.clone());
    assert_eq!(service.write(&req).await.unwrap().content, "(as weighed)");
    let mut other = SummaryRequest::new(&sample(), settings(300));
    other.weighed = Some(marked);
    assert_ne!(service.write(&other).await.unwrap().content, "(as weighed)");
}
