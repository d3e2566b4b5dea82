use super::*;

fn sample() -> Sections {
    let mut s = Sections::default();
    s.requests.push("\"fix the build\"");
    s.tools.add("read_file", 3);
    s.files.push("src/a.rs");
    s.files.push("src/b.rs");
    s.commands.push("`cargo test` (exit status 101)");
    s.errors.push("error[E0308]: mismatched types");
    s.state = Some("Tests pass now.\nNext: docs.".into());
    s
}

#[test]
fn render_parse_round_trip() {
    let s = sample();
    assert_eq!(Sections::parse(&s.render()), s);
}

#[test]
fn caps_count_what_they_leave_out_and_survive_a_round_trip() {
    let mut s = sample();
    for i in 0..10 {
        s.files.push(format!("src/f{i}.rs"));
    }
    s.apply(Caps {
        files: 4,
        ..Caps::default()
    });
    // One of each stretch of three, the newest of it: spread over the span.
    assert_eq!(
        s.files.items,
        ["src/f0.rs", "src/f3.rs", "src/f6.rs", "src/f9.rs"]
    );
    assert_eq!(s.files.more, 8);
    assert_eq!(Sections::parse(&s.render()).files.more, 8);
}

#[test]
fn merging_keeps_order_dedupes_and_sums_tools() {
    let mut newer = Sections::default();
    newer.files.push("src/a.rs");
    newer.files.push("src/c.rs");
    newer.tools.add("read_file", 2);
    newer.tools.add("grep", 1);
    let m = sample().merge(newer);
    assert_eq!(m.files.items, ["src/b.rs", "src/a.rs", "src/c.rs"]);
    assert_eq!(
        m.tools.0,
        [("read_file".to_string(), 5), ("grep".to_string(), 1)]
    );
    assert_eq!(m.state.as_deref(), Some("Tests pass now.\nNext: docs."));
}

#[test]
fn requests_over_their_cap_are_written_compactly() {
    let mut s = Sections::default();
    for r in [
        "\"Fix the build. Thanks!\"",
        "\"Hi Caroline! My sister Elena moved to Porto. How are you?\"",
        "\"Haha, totally. My sister Elena moved to Porto.\"",
        "\"ok\"",
    ] {
        s.requests.push(r);
    }
    s.apply(Caps {
        requests: 2,
        ..Caps::default()
    });
    // The task whole; the repeat gone; small talk left out.
    assert_eq!(
        s.requests.items,
        [
            "\"Fix the build. Thanks!\"",
            "\"My sister Elena moved to Porto.\""
        ]
    );
    assert_eq!(s.requests.more, 1);
}

#[test]
fn foreign_text_is_kept_as_earlier_context() {
    let s = Sections::parse("The user wants X. We did Y.");
    assert_eq!(s.earlier.as_deref(), Some("The user wants X. We did Y."));
}
