//! The caps applied to [`Sections`]: each list cut to its cap (what it
//! left out counted), each item and text shortened to its characters, and
//! what one list says not said again by another.

use super::{Caps, Sections};
use crate::summarize::fit::{How, Size, fit};
use crate::summarize::salience::{sentences, telling_sentences};

impl Sections {
    /// Applies `caps` to every list and text.
    pub fn apply(&mut self, caps: Caps) {
        // More requests than fit: each is written compactly, its sentences
        // of small talk left out, so that more of them fit.
        if self.requests.items.len() > caps.requests {
            self.requests.compact(compact_quoted);
        }
        self.requests.cap(caps.requests, true);
        self.stated.cap(caps.stated, false);
        self.commands.cap(caps.commands, false);
        self.errors.cap(caps.errors, false);
        self.decisions.cap(caps.decisions, false);
        self.also.cap(caps.also, false);
        // The first request (the task) keeps twice as much.
        let ident = caps.text.max(160);
        let quote = caps.text.max(120);
        for (i, item) in self.requests.items.iter_mut().enumerate() {
            *item = condense_quoted(item, quote * if i == 0 { 2 } else { 1 });
        }
        for item in self
            .stated
            .items
            .iter_mut()
            .chain(&mut self.decisions.items)
        {
            *item = fit(item, Size::Chars(caps.text), How::Telling);
        }
        for list in [&mut self.errors, &mut self.commands, &mut self.also] {
            for item in &mut list.items {
                *item = fit(item, Size::Chars(ident), How::End);
            }
        }
        self.state = self
            .state
            .as_deref()
            .map(|s| fit(s, Size::Chars(caps.text * 2), How::Telling));
        // The latest state's sentences a kept decision or statement says
        // are not said twice (unless that is all it says).
        let listed = |t: &str| {
            let t = t.trim();
            self.decisions
                .items
                .iter()
                .chain(&self.stated.items)
                .any(|i| i.contains(t))
        };
        if let Some(state) = &self.state {
            let rest: Vec<&str> = sentences(state).filter(|t| !listed(t)).collect();
            if !rest.is_empty() && rest.len() < sentences(state).count() {
                self.state = Some(rest.concat().trim().to_string());
            }
        }
        // A path a kept request, command, error or statement says is not
        // listed again: its room goes to one said nowhere else.
        let said: Vec<&String> = [
            &self.requests,
            &self.commands,
            &self.errors,
            &self.stated,
            &self.decisions,
        ]
        .into_iter()
        .flat_map(|l| &l.items)
        .collect();
        self.files.retain(|f| !said.iter().any(|i| i.contains(f)));
        self.files.cap(caps.files, false);
        self.earlier = self
            .earlier
            .as_deref()
            .map(|s| fit(s, Size::Chars(caps.text * 4), How::Telling));
        for (_, body) in &mut self.other {
            *body = fit(body, Size::Chars(caps.text * 4), How::Telling);
        }
    }
}

/// The quote of a quoted item (`"…"`, `(system) "…"`): the text before it and
/// its inside; None when `item` is not quoted.
fn quoted(item: &str) -> Option<(&str, &str)> {
    match item.find('"') {
        Some(open) if item.len() > open + 1 && item.ends_with('"') => {
            Some((&item[..=open], &item[open + 1..item.len() - 1]))
        }
        _ => None,
    }
}

/// A quoted item with only its telling sentences inside the quotes (all of
/// it when none tells anything).
fn compact_quoted(item: &str) -> String {
    match quoted(item).and_then(|(lead, inner)| Some((lead, telling_sentences(inner)?))) {
        Some((lead, told)) => format!("{lead}{told}\""),
        None => item.to_string(),
    }
}

/// A quoted item (`"…"`, `(system) "…"`) condensed inside its quotes.
fn condense_quoted(item: &str, max: usize) -> String {
    if item.chars().count() <= max {
        return item.to_string();
    }
    match quoted(item) {
        Some((lead, inner)) => {
            format!(
                "{lead}{}\"",
                fit(
                    inner,
                    Size::Chars(max.saturating_sub(lead.len() + 1)),
                    How::Telling
                )
            )
        }
        _ => fit(item, Size::Chars(max), How::Telling),
    }
}
