//! The tables of settings in docs/configuration.md are the settings: one
//! row per setting, under its section, with its variable, flag, default and
//! range as the code has them, and no row for a setting that does not
//! exist. Run with `CONDENSE_UPDATE_DOCS=1` to rewrite those cells from the
//! code (the meaning column is left as written).

use std::collections::BTreeMap;

use clap::CommandFactory;
use condense::config::validate::bounds;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");

/// The cells a setting's row must start with.
fn expected() -> BTreeMap<String, [String; 5]> {
    let ranges: BTreeMap<&str, String> = bounds(&condense::Config::default())
        .iter()
        .map(|b| (b.id, b.range()))
        .collect();
    let command = condense::cli::Cli::command();
    let mut rows = BTreeMap::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        let Some((_, key)) = id.split_once('.') else {
            continue;
        };
        let switch = matches!(arg.get_action(), clap::ArgAction::SetTrue);
        let default: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.is_empty())
            .collect();
        let range = match (ranges.get(id), arg.get_possible_values()) {
            (Some(r), _) => r.clone(),
            (None, values) if !values.is_empty() && !switch => values
                .iter()
                .map(|v| format!("`{}`", v.get_name()))
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        };
        rows.insert(
            id.to_string(),
            [
                format!("`{key}`"),
                format!("`{}`", arg.get_env().unwrap().to_string_lossy()),
                format!("`--{}`", arg.get_long().unwrap()),
                match switch {
                    // A switch is off unless given.
                    true => "`false`".into(),
                    false => default
                        .first()
                        .map_or_else(String::new, |d| format!("`{d}`")),
                },
                range,
            ],
        );
    }
    rows
}

/// The rows of the page's tables, each under a heading that names its
/// section (`## Server: `[server]``): (line index, section, cells).
fn rows(doc: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut section = None;
    let mut out = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        if line.starts_with('#') {
            section = line
                .split_once("`[")
                .and_then(|(_, s)| s.split_once("]`"))
                .map(|(s, _)| s.to_string());
        } else if let (Some(s), Some(row)) = (&section, line.strip_prefix("| `")) {
            let cells = format!("`{row}")
                .trim_end_matches(" |")
                .splitn(6, " | ")
                .map(str::to_string)
                .collect();
            out.push((i, s.clone(), cells));
        }
    }
    out
}

/// Whether `cell` says `want`: exactly, or (for a default or an
/// environment) starting with it and explaining it in words after.
fn fits(column: usize, cell: &str, want: &str) -> bool {
    match (column, want.is_empty()) {
        (3, true) => !cell.starts_with('`'),
        (1 | 3, false) => cell == want || cell.starts_with(&format!("{want} (")),
        _ => cell == want,
    }
}

#[test]
fn the_configuration_page_lists_every_setting_as_the_code_has_it() {
    let doc = std::fs::read_to_string(DOC).unwrap();
    let want = expected();
    let found = rows(&doc);
    let update = std::env::var("CONDENSE_UPDATE_DOCS").is_ok_and(|v| v == "1");
    let mut lines: Vec<String> = doc.lines().map(str::to_string).collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (line, section, cells) in &found {
        let key = cells[0].trim_matches('`');
        let id = format!("{section}.{key}");
        let Some(cells_wanted) = want.get(&id) else {
            problems.push(format!(
                "docs/configuration.md row [{section}] {key}: no such setting"
            ));
            continue;
        };
        seen.push(id.clone());
        assert_eq!(
            cells.len(),
            6,
            "docs/configuration.md row {id} has six cells"
        );
        for (column, wanted) in cells_wanted.iter().enumerate() {
            if !fits(column, &cells[column], wanted) {
                problems.push(format!(
                    "docs/configuration.md row {id}: `{}` should be `{wanted}`",
                    cells[column]
                ));
            }
        }
        if update {
            let mut new = cells.clone();
            for (column, wanted) in cells_wanted.iter().enumerate() {
                if !fits(column, &new[column], wanted) {
                    new[column] = wanted.clone();
                }
            }
            lines[*line] = format!("| {} |", new.join(" | "));
        }
    }
    for id in want.keys().filter(|id| !seen.contains(id)) {
        problems.push(format!("no docs/configuration.md row for {id}"));
    }
    if update {
        std::fs::write(DOC, lines.join("\n") + "\n").unwrap();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
