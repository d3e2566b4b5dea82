//! `condense config`: the configuration in effect as a TOML file `--config`
//! reads back, each value with its source; secrets hidden (then commented out).

use clap::ArgAction;

use super::load::{Loaded, Source, hidden, safe, settings};

const HEADER: &str = "\
# The configuration condense runs with: defaults, then the file (--config),
# then the environment, then flags. Secrets are hidden; `#` lines are unset
# or hidden values.
";

/// The settings of `loaded` as TOML, section by section.
pub fn render(loaded: &Loaded) -> String {
    let mut out = HEADER.to_string();
    let mut section = "";
    for id in settings(&loaded.command) {
        let (s, key) = id.split_once('.').unwrap_or(("", id));
        if s != section {
            section = s;
            out.push_str(&format!("\n[{section}]\n"));
        }
        let line = match value(loaded, id) {
            Shown::Value(v) => format!("{key} = {v}"),
            Shown::Hidden(v) => format!("# {key} = {v}"),
        };
        out.push_str(&format!("{line}  # {}\n", describe(&loaded.source(id))));
    }
    out
}

enum Shown {
    Value(String),
    /// Commented out: unset, or not shown as it is.
    Hidden(String),
}

fn value(loaded: &Loaded, id: &str) -> Shown {
    let arg = loaded.command.get_arguments().find(|a| a.get_id() == id);
    if arg.is_some_and(|a| matches!(a.get_action(), ArgAction::SetTrue)) {
        return Shown::Value(loaded.matches.get_flag(id).to_string());
    }
    let Some(values) = loaded.matches.get_raw(id) else {
        return Shown::Hidden("(unset)".into());
    };
    let values: Vec<String> = values.map(|v| v.to_string_lossy().into_owned()).collect();
    let list = arg.is_some_and(|a| matches!(a.get_action(), ArgAction::Append));
    if hidden(id) && values.iter().any(|v| !v.is_empty()) {
        return Shown::Hidden(match list {
            true => format!("({} hidden)", values.len()),
            false => "(hidden)".into(),
        });
    }
    if id.ends_with("url") {
        let shown: Vec<String> = values.iter().map(|u| safe(id, u)).collect();
        if shown != values {
            return Shown::Hidden(format!("{} (credentials hidden)", toml_string(&shown[0])));
        }
    }
    Shown::Value(match list {
        // A JSON array of strings is a TOML array.
        true => serde_json::to_string(&values).unwrap_or_default(),
        false => scalar(&values.join(",")),
    })
}

/// A number as a TOML number, anything else as a string.
fn scalar(text: &str) -> String {
    let numeric = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.parse::<f64>().is_ok();
    match numeric {
        true => text.to_string(),
        false => toml_string(text),
    }
}

/// A TOML basic string: JSON's escapes are all TOML escapes.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn describe(source: &Source) -> String {
    match source {
        Source::Default => "default".into(),
        Source::Flag => "flag".into(),
        Source::Env(var) => format!("environment {var}"),
        Source::File(path) => format!("file {}", path.display()),
    }
}
