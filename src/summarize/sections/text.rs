//! How [`Sections`] read as text, and back: parse ∘ render is the identity.
//!
//! Plain Markdown: each section under `### Heading`; an item is `- ` and
//! its first line, further lines indented two spaces, so nothing inside it
//! looks like a heading or an item; paths and tool counts on one
//! comma-separated line when each reads back from it; `- (… N more left
//! out)` counts what a cap dropped; free text as is, a line starting with
//! `### ` or `\` escaped by a `\`. Reading is lenient (CR dropped, blank
//! lines inside an item kept); text in no such shape becomes
//! [`Sections::earlier`].

use std::fmt::Write;

use super::{
    ALSO, COMMANDS, DECISIONS, EARLIER, ERRORS, FILES, List, REQUESTS, STATE, STATED, Sections,
    TOOLS,
};

fn write_item(out: &mut String, item: &str) {
    let mut lines = item.split('\n');
    let _ = writeln!(out, "- {}", lines.next().unwrap_or(""));
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
}

fn write_list(out: &mut String, title: &str, l: &List) {
    if l.items.is_empty() && l.more == 0 {
        return;
    }
    let _ = writeln!(out, "### {title}");
    for item in &l.items {
        write_item(out, item);
    }
    write_more(out, l.more);
}

fn write_more(out: &mut String, more: usize) {
    if more > 0 {
        let _ = writeln!(out, "- (… {more} more left out)");
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

/// A list on one comma-separated line when each item reads back from it.
fn write_inline(out: &mut String, title: &str, items: &[String], more: usize) {
    if items.is_empty() && more == 0 {
        return;
    }
    let _ = writeln!(out, "### {title}");
    if !items.iter().all(|i| inline(i)) {
        items.iter().for_each(|i| write_item(out, i));
    } else if !items.is_empty() {
        let _ = writeln!(out, "{}", items.join(", "));
    }
    write_more(out, more);
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
        write_list(&mut out, REQUESTS, &self.requests);
        write_list(&mut out, STATED, &self.stated);
        write_inline(&mut out, TOOLS, &self.tools.shown(), 0);
        write_inline(&mut out, FILES, &self.files.items, self.files.more);
        write_list(&mut out, COMMANDS, &self.commands);
        write_list(&mut out, ERRORS, &self.errors);
        write_list(&mut out, DECISIONS, &self.decisions);
        write_list(&mut out, ALSO, &self.also);
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

    /// Parses a rendered summary back. Text in another shape (an LLM's
    /// summary) becomes `earlier`.
    pub fn parse(text: &str) -> Sections {
        let mut s = Sections::default();
        if !text.trim_start().starts_with("### ") {
            s.earlier = Some(text.trim().to_string()).filter(|t| !t.is_empty());
            return s;
        }
        let mut r = Reader::default();
        for line in text.trim_start().split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            r.line(&mut s, line);
        }
        r.finish(&mut s);
        s
    }
}

/// Where the reader is: the section, and the item or text being read.
#[derive(Default)]
struct Reader {
    section: Section,
    item: Option<String>,
    /// Blank lines seen inside an item, kept if the item goes on.
    blanks: usize,
    block: Vec<String>,
}

#[derive(Default, Clone, PartialEq)]
enum Section {
    #[default]
    None,
    List(&'static str),
    /// The state or a section kept verbatim (its heading).
    Block(Option<String>),
}

impl Reader {
    fn line(&mut self, s: &mut Sections, line: &str) {
        if let Some(h) = line.strip_prefix("### ") {
            self.finish(s);
            self.section = match [
                EARLIER, REQUESTS, STATED, TOOLS, FILES, COMMANDS, ERRORS, DECISIONS, ALSO,
            ]
            .into_iter()
            .find(|k| *k == h.trim())
            {
                Some(k) => Section::List(k),
                None if h.trim() == STATE => Section::Block(None),
                None => Section::Block(Some(h.to_string())),
            };
            return;
        }
        let title = match &self.section {
            Section::None => return,
            Section::Block(_) => {
                let line = line.strip_prefix('\\').unwrap_or(line);
                self.block.push(line.to_string());
                return;
            }
            Section::List(title) => *title,
        };
        if let Some(rest) = line.strip_prefix("- ") {
            self.end_item(s);
            self.item = Some(rest.to_string());
        } else if let (Some(rest), Some(item)) = (line.strip_prefix("  "), &mut self.item) {
            for _ in 0..std::mem::take(&mut self.blanks) {
                item.push('\n');
            }
            item.push('\n');
            item.push_str(rest);
        } else if line.is_empty() && self.item.is_some() {
            self.blanks += 1;
        } else if title == FILES {
            self.end_item(s);
            line.split(", ").for_each(|p| s.files.push(p));
        } else if title == TOOLS {
            self.end_item(s);
            line.split(", ").for_each(|t| tool(s, t));
        }
    }

    /// The item read so far, into its section.
    fn end_item(&mut self, s: &mut Sections) {
        self.blanks = 0;
        let (Some(item), Section::List(title)) = (self.item.take(), &self.section) else {
            return;
        };
        let list = match *title {
            EARLIER => {
                let e = s.earlier.get_or_insert_with(String::new);
                if !e.is_empty() {
                    e.push('\n');
                }
                e.push_str(&item);
                return;
            }
            TOOLS => return tool(s, &item),
            REQUESTS => &mut s.requests,
            STATED => &mut s.stated,
            FILES => &mut s.files,
            COMMANDS => &mut s.commands,
            ERRORS => &mut s.errors,
            DECISIONS => &mut s.decisions,
            _ => &mut s.also,
        };
        match item
            .strip_prefix("(… ")
            .and_then(|r| r.strip_suffix(" more left out)"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => list.more = list.more.saturating_add(n),
            None => list.push(item),
        }
    }

    /// The section read so far, into `s`.
    fn finish(&mut self, s: &mut Sections) {
        self.end_item(s);
        let block = std::mem::take(&mut self.block).join("\n");
        match std::mem::take(&mut self.section) {
            Section::Block(None) => {
                s.state = Some(block.trim().to_string()).filter(|t| !t.is_empty());
            }
            Section::Block(Some(heading)) => s.other.push((heading, block)),
            _ => {}
        }
    }
}

fn tool(s: &mut Sections, entry: &str) {
    if let Some((name, n)) = entry.rsplit_once(" ×") {
        s.tools.add(name, n.parse().unwrap_or(1));
    }
}
