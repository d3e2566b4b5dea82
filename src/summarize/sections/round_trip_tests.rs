//! parse ∘ render is the identity on any sections: items with line breaks,
//! `- ` and `### ` at line starts, blank lines, commas, backslashes.

use proptest::prelude::*;

use super::{ALSO, COMMANDS, DECISIONS, EARLIER, ERRORS, FILES, List, REQUESTS, STATE, STATED};
use super::{Sections, TOOLS};

/// Text made of the pieces that could confuse a reader of the format.
fn text() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "- ", "### ", "\n", "  ", " ", "a", "é", ", ", ",", "\\", " ×", "×2", "`x`", "…", "\n\n",
        "(", ")", "#",
    ]);
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
}

fn list() -> impl Strategy<Value = List> {
    (prop::collection::vec(text(), 0..5), 0..3usize).prop_map(|(items, more)| {
        let mut l = List::default();
        items.into_iter().for_each(|i| l.push(i));
        l.more = more;
        l
    })
}

/// A heading this code does not write.
fn heading() -> impl Strategy<Value = String> {
    text().prop_filter("one line, not a known heading", |h| {
        let known = [
            EARLIER, REQUESTS, STATED, TOOLS, FILES, COMMANDS, ERRORS, DECISIONS, ALSO, STATE,
        ];
        !h.contains('\n') && !known.contains(&h.trim())
    })
}

fn sections() -> impl Strategy<Value = Sections> {
    let lists = (list(), list(), list(), list(), list(), list(), list());
    let tools = prop::collection::vec((text(), 0..4usize), 0..4);
    let other = prop::collection::vec((heading(), text()), 0..3);
    let earlier = prop::option::of(text().prop_filter("non-empty", |t| !t.is_empty()));
    // The state is stored trimmed (it is read back trimmed).
    let state = prop::option::of(text().prop_map(|t| t.trim().to_string()));
    (lists, tools, other, earlier, state).prop_map(
        |(
            (requests, stated, files, commands, errors, decisions, also),
            tools,
            other,
            earlier,
            state,
        )| {
            let mut s = Sections {
                earlier,
                requests,
                stated,
                files,
                commands,
                errors,
                decisions,
                also,
                other,
                state: state.filter(|t| !t.is_empty()),
                ..Sections::default()
            };
            tools.iter().for_each(|(name, n)| s.tools.add(name, *n));
            s
        },
    )
}

proptest! {
    #[test]
    fn parse_after_render_is_the_identity(s in sections()) {
        let text = s.render();
        prop_assert_eq!(Sections::parse(&text), s, "{}", text);
    }
}
