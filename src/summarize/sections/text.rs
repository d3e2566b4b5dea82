//! [`Sections`] as Markdown, and back (parse ∘ render is the identity): a
//! section per `### Heading`; an item is `- ` and its first line, further
//! lines indented two spaces; paths and tools on one comma-separated line
//! when they read back; `- (… N more left out)` counts what a cap dropped;
//! free text with `### ` and `\` line starts escaped by a `\`.

use std::fmt::Write;

use super::{
    ALSO, COMMANDS, DECISIONS, EARLIER, ERRORS, FILES, List, REQUESTS, SINCE, STATE, STATED,
    Sections, TOOLS,
};

fn write_item(out: &mut String, item: &str) {
    let mut lines = item.split('\n');
    let _ = writeln!(out, "- {}", lines.next().unwrap_or(""));
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
}

/// Whether `item` can share a comma-separated line and be read back whole.
fn inline(item: &str) -> bool {
    !item.is_empty()
        && !item.contains(", ")
        && !item.contains(['\n', '\r'])
        && item.trim() == item
        && !item.starts_with("- ")
        && !item.starts_with("### ")
        && !item.starts_with('\\')
}

/// A list, with `one_line` on one comma-separated line when each item reads back from it.
fn write_list(out: &mut String, title: &str, items: &[String], more: usize, one_line: bool) {
    if items.is_empty() && more == 0 {
        return;
    }
    let _ = writeln!(out, "### {title}");
    if !one_line || !items.iter().all(|i| inline(i)) {
        items.iter().for_each(|i| write_item(out, i));
    } else if !items.is_empty() {
        let _ = writeln!(out, "{}", items.join(", "));
    }
    if more > 0 {
        let _ = writeln!(out, "- (… {more} more left out)");
    }
}

/// Free text, with lines that would read as a heading escaped.
fn write_block(out: &mut String, text: &str) {
    for line in text.split('\n') {
        if line.starts_with("### ") || line.starts_with('\\') {
            out.push('\\');
        }
        let _ = writeln!(out, "{line}");
    }
}

impl Sections {
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(e) = &self.earlier {
            let _ = writeln!(out, "### {EARLIER}");
            write_item(&mut out, e);
        }
        let list =
            |out: &mut String, title, l: &List| write_list(out, title, &l.items, l.more, false);
        list(&mut out, REQUESTS, &self.requests);
        list(&mut out, STATED, &self.stated);
        write_list(&mut out, TOOLS, &self.tools.shown(), 0, true);
        write_list(&mut out, FILES, &self.files.items, self.files.more, true);
        list(&mut out, COMMANDS, &self.commands);
        list(&mut out, ERRORS, &self.errors);
        list(&mut out, DECISIONS, &self.decisions);
        list(&mut out, ALSO, &self.also);
        for (heading, body) in &self.other {
            let _ = writeln!(out, "### {heading}");
            if !body.is_empty() {
                write_block(&mut out, body);
            }
        }
        if let Some(state) = &self.state {
            let _ = writeln!(out, "### {STATE}");
            write_block(&mut out, state);
        }
        // The last line break only: the text ends where the last item does.
        out.pop();
        out
    }

    /// Parses a rendered summary back; other text (an LLM's) becomes `earlier`.
    pub fn parse(text: &str) -> Sections {
        let mut s = Sections::default();
        let text = text.trim_start();
        if !text.starts_with("### ") {
            s.earlier = Some(text.trim().to_string()).filter(|t| !t.is_empty());
            return s;
        }
        // Each section: its heading and the lines up to the next one.
        let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            match (line.strip_prefix("### "), sections.last_mut()) {
                (Some(heading), _) => sections.push((heading, Vec::new())),
                (None, Some((_, lines))) => lines.push(line),
                (None, None) => {}
            }
        }
        for (heading, lines) in sections {
            let title = heading.trim();
            // An addendum's sections read on into the ones before it.
            if title == SINCE {
                continue;
            }
            let lists = [
                EARLIER, REQUESTS, STATED, TOOLS, FILES, COMMANDS, ERRORS, DECISIONS, ALSO,
            ];
            if !lists.contains(&title) {
                let unescaped = lines.iter().map(|l| l.strip_prefix('\\').unwrap_or(l));
                let block = unescaped.collect::<Vec<_>>().join("\n");
                match title {
                    STATE => {
                        let state = Some(block.trim().to_string()).filter(|t| !t.is_empty());
                        // An addendum's state: the older one stays as a statement.
                        if let Some(old) = state.and_then(|t| s.state.replace(t)) {
                            s.stated.push(old);
                        }
                    }
                    _ => s.other.push((heading.to_string(), block)),
                }
                continue;
            }
            for (whole, entry) in entries(&lines, title == FILES || title == TOOLS) {
                s.read(title, whole, entry);
            }
        }
        s
    }

    /// An entry of the list under `title` (`whole`: a `- ` item).
    fn read(&mut self, title: &str, whole: bool, entry: String) {
        let list = match title {
            EARLIER => {
                let e = self.earlier.get_or_insert_with(String::new);
                if !e.is_empty() {
                    e.push('\n');
                }
                return e.push_str(&entry);
            }
            TOOLS => {
                if let Some((name, n)) = entry.rsplit_once(" ×") {
                    self.tools.add(name, n.parse().unwrap_or(1));
                }
                return;
            }
            FILES if !whole => return self.files.push(entry),
            REQUESTS => &mut self.requests,
            STATED => &mut self.stated,
            FILES => &mut self.files,
            COMMANDS => &mut self.commands,
            ERRORS => &mut self.errors,
            DECISIONS => &mut self.decisions,
            _ => &mut self.also,
        };
        match entry
            .strip_prefix("(… ")
            .and_then(|r| r.strip_suffix(" more left out)"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => list.more = list.more.saturating_add(n),
            None => list.push(entry),
        }
    }
}

/// A list section's entries: each `- ` item with its further lines (`true`),
/// and with `inline`, each piece of a comma-separated line (`false`).
fn entries(lines: &[&str], inline: bool) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut item: Option<String> = None;
    // Blank lines inside an item, kept if the item goes on.
    let mut blanks = 0;
    for line in lines {
        if let Some(rest) = line.strip_prefix("- ") {
            out.extend(item.replace(rest.to_string()).map(|i| (true, i)));
            blanks = 0;
        } else if let (Some(rest), Some(item)) = (line.strip_prefix("  "), &mut item) {
            item.push_str(&"\n".repeat(std::mem::take(&mut blanks) + 1));
            item.push_str(rest);
        } else if line.is_empty() && item.is_some() {
            blanks += 1;
        } else if inline {
            out.extend(item.take().map(|i| (true, i)));
            blanks = 0;
            out.extend(line.split(", ").map(|p| (false, p.to_string())));
        }
    }
    out.extend(item.map(|i| (true, i)));
    out
}
