//! The TOML file (`--config`): one section per group of settings, each key
//! a setting (`[cache] ttl = "30d"`). Read into the text of each value, so
//! that `load` can hand it to the same parsers as a flag; a key that names
//! no setting is an error, so a typo cannot pass for a default.

use std::path::Path;

use clap::{ArgAction, Command};

/// One setting's value from the file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileValue {
    /// A switch (`shadow = true`).
    Switch(bool),
    /// The text of a value, or of each element of a list.
    Text(Vec<String>),
}

/// The file's settings as `(id, value)`, in the file's order, checked
/// against the settings of `command`. An error is one line.
pub fn read(path: &Path, command: &Command) -> Result<Vec<(String, FileValue)>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config={shown}: {e}"))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map_or(1, |s| text[..s.start].lines().count().max(1));
        format!("{shown}:{line}: {}", e.message().trim())
    })?;
    let sections: Vec<&str> = {
        let mut s: Vec<&str> = settings(command)
            .filter_map(|id| id.split_once('.'))
            .map(|(s, _)| s)
            .collect();
        s.dedup();
        s
    };
    let mut out = Vec::new();
    for (section, body) in &table {
        let Some(body) = body.as_table() else {
            let home = settings(command)
                .find(|id| id.split_once('.').is_some_and(|(_, k)| k == section))
                .map_or_else(String::new, |id| {
                    format!(
                        " (`{section}` belongs in [{}])",
                        id.split('.').next().unwrap_or("")
                    )
                });
            return Err(format!("{shown}: `{section}` is outside any section{home}"));
        };
        if !sections.contains(&section.as_str()) {
            return Err(format!(
                "{shown}: [{section}] is not a section of settings (they are [{}])",
                sections.join("], [")
            ));
        }
        for (key, value) in body {
            let id = format!("{section}.{key}");
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == id.as_str())
                .ok_or_else(|| format!("{shown}: [{section}] {key} is not a setting"))?;
            let switch = matches!(arg.get_action(), ArgAction::SetTrue);
            let value = convert(value, switch)
                .map_err(|want| format!("{shown}: [{section}] {key}: expected {want}"))?;
            out.push((id, value));
        }
    }
    Ok(out)
}

/// The ids of the settings (those with a place in the file).
pub fn settings(command: &Command) -> impl Iterator<Item = &str> {
    command
        .get_arguments()
        .map(|a| a.get_id().as_str())
        .filter(|id| id.contains('.'))
}

fn convert(value: &toml::Value, switch: bool) -> Result<FileValue, &'static str> {
    use toml::Value as V;
    let scalar = |v: &V| match v {
        V::String(s) => Some(s.clone()),
        V::Integer(i) => Some(i.to_string()),
        V::Float(f) => Some(f.to_string()),
        _ => None,
    };
    match (value, switch) {
        (V::Boolean(b), true) => Ok(FileValue::Switch(*b)),
        (_, true) => Err("true or false"),
        (V::Array(items), false) => items
            .iter()
            .map(scalar)
            .collect::<Option<Vec<_>>>()
            .map(FileValue::Text)
            .ok_or("a list of strings or numbers"),
        (v, false) => scalar(v)
            .map(|s| FileValue::Text(vec![s]))
            .ok_or("a string or a number"),
    }
}
