//! The layout is the architecture: imports between the top-level modules of
//! `src/` point one way, from the edge to the core, and never form a cycle.
//!
//! The check reads the source: every `crate::NAME` outside a comment is an
//! edge from the module whose file holds it to `NAME`.
//!
//! Within a module too, no two files import each other, directly or in a
//! circle: a file that both uses and is used by another cannot be read,
//! tested or moved alone. That check follows the paths themselves
//! (`super::`, `crate::`, `self::`, a module in scope) to the file that
//! holds the module they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The domain layers, lowest first: a layer may import only those before it.
const LAYERS: [&str; 11] = [
    // Every layer records metrics; they know nothing of the crate.
    "metrics",
    // Hiding credentials in URLs, for every layer that logs one.
    "redact",
    "thread",
    "tokens",
    "upstream",
    "cache",
    "policy",
    "summarize",
    "compress",
    "proxy",
    "http",
];

fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in sources() {
        let first = file.split('/').next().unwrap();
        let module = first.trim_end_matches(".rs").to_string();
        let targets = graph.entry(module.clone()).or_default();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for (at, _) in code.match_indices("crate::") {
                let name: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    targets.insert(name);
                }
            }
        }
    }
    graph
}

fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = edges();
    assert!(graph.contains_key("compress") && graph.contains_key("thread"));
    if let Some(c) = cycle(&graph) {
        panic!("import cycle: {}\ngraph: {graph:#?}", c.join(" -> "));
    }
}

#[test]
fn domain_layers_import_only_lower_layers() {
    let graph = edges();
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut wrong = Vec::new();
    for (from, targets) in &graph {
        let Some(r) = rank(from) else { continue };
        for to in targets {
            // Wiring modules (state, error, config) are outside the layers;
            // the cycle check covers them.
            if rank(to).is_some_and(|t| t >= r) {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering {LAYERS:?}: {wrong:?}"
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&graph).unwrap(), ["a", "b", "a"]);
}

#[test]
fn the_checker_sees_every_circle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", "b"),
        ("b", "c"),
        ("c", "ad"),
        ("d", "e"),
        ("e", "d"),
        ("f", "a"),
    ]
    .into_iter()
    .map(|(n, to)| (n.to_string(), to.chars().map(String::from).collect()))
    .collect();
    let set = |s: &str| s.chars().map(String::from).collect::<BTreeSet<_>>();
    assert_eq!(circles(&graph), [set("abc"), set("de")]);
}

/// The circles between files of `src/` that exist today, each as the files
/// it ties together. Any other circle fails `no_two_files_import_each_other`;
/// an entry whose circle has gone fails it too, so the list only shrinks.
const ALLOWED_CIRCLES: &[&[&str]] = &[];

/// A token of Rust source, with comments gone: enough to follow paths.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    /// `::`
    Colons,
    Punct(char),
}

fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    // Skips a string whose opening quote is at `i`, ending with `hashes` #s.
    let string = |i: usize, hashes: usize, raw: bool| -> (usize, String) {
        let mut j = i + 1;
        loop {
            if j >= c.len() {
                return (j, c[i + 1..].iter().collect());
            }
            if !raw && c[j] == '\\' {
                j += 2;
                continue;
            }
            if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                return (j + 1 + hashes, c[i + 1..j].iter().collect());
            }
            j += 1;
        }
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= c.len() {
                    break;
                } else if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            let (end, s) = string(i, 0, false);
            out.push(Tok::Str(s));
            i = end;
        } else if ch == '\'' {
            // A char literal, or a lifetime (whose name is read as a word).
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br") && at(i + hashes) == '"' {
                let (end, s) = string(i + hashes, hashes, true);
                out.push(Tok::Str(s));
                i = end;
            } else if word == "r" && hashes == 1 {
                i += 1; // a raw identifier: the word follows
            } else {
                out.push(Tok::Word(word));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Colons);
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push(Tok::Punct(ch));
            }
            i += 1;
        }
    }
    out
}

fn word(toks: &[Tok], i: usize) -> Option<&str> {
    match toks.get(i) {
        Some(Tok::Word(w)) => Some(w),
        _ => None,
    }
}

/// Follows the inline modules (`mod tests { .. }`) of a file's tokens:
/// `each(i, stack)` sees every token with the names of the inline modules
/// around it, innermost last.
fn walk_inline(toks: &[Tok], mut each: impl FnMut(usize, &[String])) {
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut depth = 0;
    for i in 0..toks.len() {
        each(i, &names);
        match &toks[i] {
            Tok::Punct('{') => {
                if word(toks, i.wrapping_sub(2)) == Some("mod") {
                    let name = word(toks, i - 1).unwrap().to_string();
                    stack.push((name.clone(), depth));
                    names.push(name);
                }
                depth += 1;
            }
            Tok::Punct('}') => {
                depth -= 1;
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                    names.pop();
                }
            }
            _ => {}
        }
    }
}

/// The crate's files (paths relative to `src/`, with their module and
/// tokens) and modules (each module's path, to the file that holds it and
/// whether it is visible outside its parent), found by following `mod`
/// declarations from `lib.rs`.
#[derive(Default)]
struct Tree {
    files: BTreeMap<String, (Vec<String>, Vec<Tok>)>,
    modules: BTreeMap<Vec<String>, (String, bool)>,
}

impl Tree {
    fn new(sources: &BTreeMap<String, String>) -> Tree {
        let mut tree = Tree::default();
        tree.declare("lib.rs", Vec::new(), sources);
        tree.modules
            .insert(Vec::new(), ("lib.rs".to_string(), true));
        tree
    }

    fn declare(&mut self, file: &str, module: Vec<String>, sources: &BTreeMap<String, String>) {
        let toks = tokens(&sources[file]);
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        let children = match file.rsplit_once('/').map_or(file, |(_, f)| f) {
            "lib.rs" | "mod.rs" => dir.to_string(),
            _ => file.trim_end_matches(".rs").to_string(),
        };
        let join = |d: &str, f: &str| {
            if d.is_empty() {
                f.to_string()
            } else {
                format!("{d}/{f}")
            }
        };
        let mut found = Vec::new();
        let mut path_attr = None;
        walk_inline(&toks, |i, inline| {
            if word(&toks, i) == Some("path")
                && toks.get(i + 1) == Some(&Tok::Punct('='))
                && let Some(Tok::Str(p)) = toks.get(i + 2)
            {
                path_attr = Some(p.clone());
            }
            if word(&toks, i) != Some("mod") {
                return;
            }
            let Some(name) = word(&toks, i + 1) else {
                return;
            };
            let public = word(&toks, i.wrapping_sub(1)) == Some("pub")
                || toks.get(i.wrapping_sub(1)) == Some(&Tok::Punct(')'));
            let mut path = module.clone();
            path.extend(inline.iter().cloned());
            path.push(name.to_string());
            match toks.get(i + 2) {
                Some(Tok::Punct('{')) => found.push((path, file.to_string(), public)),
                Some(Tok::Punct(';')) if inline.is_empty() => {
                    let child = match path_attr.take() {
                        Some(p) => join(dir, &p),
                        None => {
                            let flat = join(&children, &format!("{name}.rs"));
                            if sources.contains_key(&flat) {
                                flat
                            } else {
                                join(&children, &format!("{name}/mod.rs"))
                            }
                        }
                    };
                    found.push((path, child, public));
                }
                _ => {}
            }
        });
        self.files.insert(file.to_string(), (module, toks));
        for (path, child, public) in found {
            self.modules.insert(path.clone(), (child.clone(), public));
            if child != file {
                self.declare(&child, path, sources);
            }
        }
    }

    /// `base::name`, when that is a module code in module `here` can see.
    fn child(&self, here: &[String], base: &[String], name: &str) -> Option<Vec<String>> {
        let mut path = base.to_vec();
        path.push(name.to_string());
        let (_, public) = self.modules.get(&path)?;
        (*public || here.starts_with(base)).then_some(path)
    }

    /// The modules a path named from module `here` reaches, from `base`
    /// (what it names up to `toks[i]`) on: its last module when it goes no
    /// further, else each one it reaches through `::`, `{..}` and `*`.
    fn follow(
        &self,
        toks: &[Tok],
        mut i: usize,
        here: &[String],
        mut base: Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) -> usize {
        loop {
            if toks.get(i) != Some(&Tok::Colons) {
                out.push(base);
                return i;
            }
            i += 1;
            match toks.get(i) {
                Some(Tok::Word(w)) if w == "super" => {
                    base.pop();
                    i += 1;
                }
                Some(Tok::Word(w)) => match self.child(here, &base, w) {
                    Some(next) => {
                        base = next;
                        i += 1;
                    }
                    None => {
                        out.push(base);
                        return i + 1;
                    }
                },
                Some(Tok::Punct('{')) => {
                    i += 1;
                    loop {
                        match toks.get(i) {
                            None => return i,
                            Some(Tok::Punct('}')) => return i + 1,
                            Some(Tok::Word(w)) => match self.child(here, &base, w) {
                                Some(next) => i = self.follow(toks, i + 1, here, next, out),
                                None => out.push(base.clone()),
                            },
                            Some(_) => out.push(base.clone()),
                        }
                        // The rest of this item (`as x`, `Enum::{A, B}`).
                        let mut depth = 0;
                        while let Some(t) = toks.get(i) {
                            match t {
                                Tok::Punct('{') => depth += 1,
                                Tok::Punct('}') if depth == 0 => break,
                                Tok::Punct('}') => depth -= 1,
                                Tok::Punct(',') if depth == 0 => {
                                    i += 1;
                                    break;
                                }
                                _ => {}
                            }
                            i += 1;
                        }
                    }
                }
                _ => {
                    out.push(base);
                    return i;
                }
            }
        }
    }

    /// Which files each file imports from: every path in its code that
    /// starts at `crate`, `super`, `self` or a module in scope, resolved to
    /// the file of the module it names. A module's `mod` declarations and
    /// its re-exports (`pub use part::Item`) of its own parts are its face,
    /// not imports.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (file, (module, toks)) in &self.files {
            let mut named = Vec::new();
            let mut reexport = false;
            walk_inline(toks, |i, inline| {
                match &toks[i] {
                    Tok::Word(w) if w == "use" => {
                        reexport = word(toks, i.wrapping_sub(1)) == Some("pub")
                            || toks.get(i.wrapping_sub(1)) == Some(&Tok::Punct(')'));
                    }
                    Tok::Punct(';') => reexport = false,
                    _ => {}
                }
                let Some(w) = word(toks, i) else {
                    return;
                };
                let starts = toks.get(i + 1) == Some(&Tok::Colons)
                    && i.checked_sub(1).is_none_or(|p| toks[p] != Tok::Colons)
                    && word(toks, i.wrapping_sub(1)) != Some("in");
                if !starts {
                    return;
                }
                let mut here = module.clone();
                here.extend(inline.iter().cloned());
                let base = match w {
                    "crate" => Some(Vec::new()),
                    "self" => Some(here.clone()),
                    "super" => Some(here[..here.len().saturating_sub(1)].to_vec()),
                    // A module in scope: a child of this module or of a
                    // module around it in this file.
                    _ => (module.len()..=here.len())
                        .rev()
                        .find_map(|n| self.child(&here, &here[..n], w)),
                };
                if let Some(base) = base {
                    let mut reached = Vec::new();
                    self.follow(toks, i + 1, &here, base, &mut reached);
                    named.extend(reached.into_iter().map(|m| (m, reexport)));
                }
            });
            let targets: BTreeSet<String> = named
                .iter()
                .map(|(m, reexport)| {
                    let target = &self.modules[m].0;
                    let part = self.files[target].0.starts_with(module);
                    (target, *reexport && part)
                })
                .filter(|(target, face)| !face && *target != file)
                .map(|(target, _)| target.clone())
                .collect();
            graph.insert(file.clone(), targets);
        }
        graph
    }
}

/// The groups of files that import each other, directly or in a circle
/// (the strongly connected components of more than one file).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let at = self.stack.iter().rposition(|n| *n == node).unwrap();
                let group: BTreeSet<String> = self.stack.drain(at..).map(str::to_string).collect();
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !t.index.contains_key(node.as_str()) {
            t.visit(node);
        }
    }
    t.found.sort();
    t.found
}

/// One circle through `group`'s files, to name it.
fn one_circle(graph: &BTreeMap<String, BTreeSet<String>>, group: &BTreeSet<String>) -> String {
    let inside: BTreeMap<String, BTreeSet<String>> = group
        .iter()
        .map(|f| (f.clone(), &graph[f] & group))
        .collect();
    cycle(&inside).unwrap().join(" -> ")
}

fn sources() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).unwrap();
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>();
                sources.insert(rel.join("/"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    sources
}

#[test]
fn no_two_files_import_each_other() {
    let sources = sources();
    let tree = Tree::new(&sources);
    // The binary is a crate of its own; every other file is a module.
    let unreached: Vec<_> = sources
        .keys()
        .filter(|f| *f != "main.rs" && !tree.files.contains_key(*f))
        .collect();
    assert!(
        unreached.is_empty(),
        "files the check did not reach: {unreached:?}"
    );
    let graph = tree.graph();
    let found = circles(&graph);
    let allowed: Vec<BTreeSet<String>> = ALLOWED_CIRCLES
        .iter()
        .map(|c| c.iter().map(|f| f.to_string()).collect())
        .collect();
    let mut wrong = Vec::new();
    for group in &found {
        if !allowed.iter().any(|a| group.is_subset(a)) {
            let circle = one_circle(&graph, group);
            wrong.push(format!(
                "files that import each other: {circle}\n  (tied: {group:?})"
            ));
        }
    }
    for a in &allowed {
        if !found.iter().any(|g| g.intersection(a).count() > 1) {
            wrong.push(format!(
                "no circle left among {a:?}: remove it from ALLOWED_CIRCLES"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_file_graph_resolves_paths() {
    let sources: BTreeMap<String, String> = [
        // Re-exporting a part is no import; `a::d` is private, so an item of `a`.
        ("lib.rs", "pub mod a;\nmod b;\npub use b::B;\nuse a::d;\n// crate::b::x in a comment\n"),
        // Declaring a child is no import; calling into one is.
        ("a/mod.rs", "pub mod c;\nmod d;\npub struct Top;\nuse d::{self as dd, D};\nfn g() { c::h() }\n"),
        // A child importing its parent's item; a string is no path.
        ("a/c.rs", "use super::{Top, d::D};\nconst S: &str = \"crate::b::B\";\n"),
        ("a/d.rs", "pub struct D;\n#[cfg(test)]\n#[path = \"d_tests.rs\"]\nmod tests;\n"),
        ("a/d_tests.rs", "use super::super::super::b::B;\n"),
        // An inline module's `super`, a lifetime, a char, `pub(in ..)`.
        ("b/mod.rs", "pub(in crate::a) struct B<'x>(&'x str);\nfn q() -> char { '\"' }\nmod t {\n    use super::super::a::Top;\n    fn f() { crate::a::c::g(); }\n}\n"),
    ]
    .into_iter()
    .map(|(f, s)| (f.to_string(), s.to_string()))
    .collect();
    let graph = Tree::new(&sources).graph();
    let edges = |f: &str| graph[f].iter().map(String::as_str).collect::<Vec<_>>();
    assert_eq!(edges("lib.rs"), ["a/mod.rs"]);
    assert_eq!(edges("a/mod.rs"), ["a/c.rs", "a/d.rs"]);
    assert_eq!(edges("a/c.rs"), ["a/d.rs", "a/mod.rs"]);
    assert!(edges("a/d.rs").is_empty());
    assert_eq!(edges("a/d_tests.rs"), ["b/mod.rs"]);
    assert_eq!(edges("b/mod.rs"), ["a/c.rs", "a/mod.rs"]);
    let circle = BTreeSet::from(["a/c.rs".to_string(), "a/mod.rs".to_string()]);
    assert_eq!(circles(&graph), std::slice::from_ref(&circle));
    assert_eq!(one_circle(&graph, &circle), "a/c.rs -> a/mod.rs -> a/c.rs");
}
