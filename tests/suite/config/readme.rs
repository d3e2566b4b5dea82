//! The README's tables of settings are the settings: one row per setting,
//! under its section, with its variable, flag, default and range as the
//! code has them, and no row for a setting that does not exist. Run with
//! `CONDENSE_UPDATE_README=1` to rewrite those cells from the code (the
//! meaning column is left as written).

use std::collections::BTreeMap;

use clap::CommandFactory;
use condense::config::validate::bounds;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

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

/// The rows of the README's "## Configuration" tables: (line index,
/// section, cells).
fn rows(readme: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut section = None;
    let mut inside = false;
    let mut out = Vec::new();
    for (i, line) in readme.lines().enumerate() {
        if line.starts_with("## ") {
            inside = line == "## Configuration";
            section = None;
        } else if inside && line.starts_with("### ") {
            section = line
                .split_once("`[")
                .and_then(|(_, s)| s.split_once("]`"))
                .map(|(s, _)| s.to_string());
        } else if let (true, Some(s), Some(row)) = (inside, &section, line.strip_prefix("| `")) {
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
fn the_readme_lists_every_setting_as_the_code_has_it() {
    let readme = std::fs::read_to_string(README).unwrap();
    let want = expected();
    let found = rows(&readme);
    let update = std::env::var("CONDENSE_UPDATE_README").is_ok_and(|v| v == "1");
    let mut lines: Vec<String> = readme.lines().map(str::to_string).collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (line, section, cells) in &found {
        let key = cells[0].trim_matches('`');
        let id = format!("{section}.{key}");
        let Some(cells_wanted) = want.get(&id) else {
            problems.push(format!("README row [{section}] {key}: no such setting"));
            continue;
        };
        seen.push(id.clone());
        assert_eq!(cells.len(), 6, "README row {id} has six cells");
        for (column, wanted) in cells_wanted.iter().enumerate() {
            if !fits(column, &cells[column], wanted) {
                problems.push(format!(
                    "README row {id}: `{}` should be `{wanted}`",
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
        problems.push(format!("no README row for {id}"));
    }
    if update {
        std::fs::write(README, lines.join("\n") + "\n").unwrap();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
