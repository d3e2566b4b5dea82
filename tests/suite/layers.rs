//! The layout is the architecture: imports between the top-level modules of
//! `src/` point one way, from the edge to the core, and never form a cycle.
//!
//! The check reads the source: every `crate::NAME` outside a comment is an
//! edge from the module whose file holds it to `NAME`.

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel.components().next().unwrap().as_os_str();
            let module = Path::new(first)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
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
