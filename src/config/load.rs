//! Reading the settings in layers: default < file < environment < flag. The
//! file's values (and `DATABASE_URL`) become clap's defaults, so they meet
//! the same parsers and errors as flags.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::num::IntErrorKind;
use std::path::{Path, PathBuf};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

use crate::redact::redact_url;

/// The id of the argument naming the file (`--config`, `CONDENSE_CONFIG`).
pub const FILE_ARG: &str = "config_file";

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Default,
    Flag,
    Env(String),
    File(PathBuf),
}

/// The arguments parsed in layers, and where each setting came from.
#[derive(Debug)]
pub struct Loaded {
    pub matches: ArgMatches,
    pub command: Command,
    /// The settings whose default the file or `DATABASE_URL` replaced.
    layered: BTreeMap<String, Source>,
}

#[derive(Debug)]
pub enum LoadError {
    /// Help, version, an unknown flag: clap says it as usual.
    Clap(clap::Error),
    /// A value that cannot stand, as one line naming the setting.
    Invalid(String),
}

/// `args` (the program's name first) parsed by `command` in layers.
pub fn load(
    mut command: Command,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Loaded, LoadError> {
    let args: Vec<OsString> = args.into_iter().collect();
    // Settings are accepted after the subcommand too (`condense config --config x.toml`).
    command = command.mut_args(|a| a.global(true));
    let mut layered = BTreeMap::new();
    let mut defaults = BTreeMap::new();
    // The file may be named by a flag or the environment: clap finds it.
    let first = parse(&command, &args, &layered)?;
    if let Some(path) = first.get_one::<PathBuf>(FILE_ARG) {
        for (id, values) in read(path, &command).map_err(LoadError::Invalid)? {
            layered.insert(id.clone(), Source::File(path.clone()));
            defaults.insert(id, values);
        }
    }
    if let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        let id = "cache.database_url".to_string();
        layered.insert(id.clone(), Source::Env("DATABASE_URL".into()));
        defaults.insert(id, vec![url]);
    }
    // `mut_args`, not `mut_arg`: the settings keep their order.
    command = command.mut_args(|a| match defaults.remove(a.get_id().as_str()) {
        Some(values) => a.default_values(values),
        None => a,
    });
    let matches = match layered.is_empty() {
        true => first,
        false => parse(&command, &args, &layered)?,
    };
    Ok(Loaded {
        matches,
        command,
        layered,
    })
}

/// The ids of the settings (those with a place in the file).
pub fn settings(command: &Command) -> impl Iterator<Item = &str> {
    command
        .get_arguments()
        .map(|a| a.get_id().as_str())
        .filter(|id| id.contains('.'))
}

/// The file's settings as `(id, texts)`; a key that names no setting is an
/// error, so a typo cannot pass for a default.
fn read(path: &Path, command: &Command) -> Result<Vec<(String, Vec<String>)>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config={shown}: {e}"))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map_or(1, |s| text[..s.start].lines().count().max(1));
        format!("{shown}:{line}: {}", e.message().trim())
    })?;
    let section_of = |id: &str| id.split_once('.').map_or("", |(s, _)| s).to_string();
    let mut out = Vec::new();
    for (section, body) in &table {
        let Some(body) = body.as_table() else {
            let home = settings(command)
                .find(|id| id.ends_with(&format!(".{section}")))
                .map_or_else(String::new, |id| {
                    format!(" (`{section}` belongs in [{}])", section_of(id))
                });
            return Err(format!("{shown}: `{section}` is outside any section{home}"));
        };
        if !settings(command).any(|id| section_of(id) == *section) {
            let mut sections: Vec<String> = settings(command).map(section_of).collect();
            sections.dedup();
            // Profiles have a file of their own.
            let hint = match section.as_str() {
                "profiles" => {
                    "; profiles go in their own file, named by [models] profiles_file (CONDENSE_PROFILES_FILE)"
                }
                _ => "",
            };
            return Err(format!(
                "{shown}: [{section}] is not a section of settings (they are [{}]){hint}",
                sections.join("], [")
            ));
        }
        for (key, value) in body {
            let id = format!("{section}.{key}");
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == id.as_str())
                .ok_or_else(|| format!("{shown}: [{section}] {key} is not a setting"))?;
            let values = texts(value, arg.get_action())
                .map_err(|want| format!("{shown}: [{section}] {key}: expected {want}"))?;
            out.push((id, values));
        }
    }
    Ok(out)
}

/// A file value as the texts clap parses.
fn texts(value: &toml::Value, action: &ArgAction) -> Result<Vec<String>, &'static str> {
    use toml::Value as V;
    let scalar = |v: &V| match v {
        V::String(s) => Some(s.clone()),
        V::Integer(i) => Some(i.to_string()),
        V::Float(f) => Some(f.to_string()),
        _ => None,
    };
    match (value, action) {
        (V::Boolean(b), ArgAction::SetTrue) => Ok(vec![b.to_string()]),
        (_, ArgAction::SetTrue) => Err("true or false"),
        (V::Array(items), ArgAction::Append) => items
            .iter()
            .map(scalar)
            .collect::<Option<Vec<_>>>()
            .ok_or("a list of strings or numbers"),
        (v, _) => scalar(v).map(|s| vec![s]).ok_or("a string or a number"),
    }
}

impl Loaded {
    /// Where the setting `id` came from.
    pub fn source(&self, id: &str) -> Source {
        match self.matches.value_source(id) {
            Some(ValueSource::CommandLine) => Source::Flag,
            Some(ValueSource::EnvVariable) => Source::Env(long_and_env(&self.command, id).1),
            _ => self.layered.get(id).cloned().unwrap_or(Source::Default),
        }
    }

    /// The setting as the operator wrote it; `value` stands in for a default.
    pub fn name(&self, id: &str, value: &str) -> String {
        // As given, a list's values joined by commas.
        let raw = self.matches.get_raw(id).map_or_else(
            || value.to_string(),
            |r| {
                safe(
                    id,
                    &r.map(|v| v.to_string_lossy()).collect::<Vec<_>>().join(","),
                )
            },
        );
        written(&self.command, id, &self.source(id), &raw)
    }
}

/// `CONDENSE_X=…`, `--x=…` or `FILE: [section] key = …`.
fn written(command: &Command, id: &str, source: &Source, raw: &str) -> String {
    let (long, env) = long_and_env(command, id);
    match source {
        Source::Default => format!("{env}={raw} (the default)"),
        Source::Flag => format!("--{long}={raw}"),
        Source::Env(var) => format!("{var}={raw}"),
        Source::File(path) => {
            let (section, key) = id.split_once('.').unwrap_or(("", id));
            format!("{}: [{section}] {key} = {raw}", path.display())
        }
    }
}

/// The API keys of callers and of providers.
pub(super) fn hidden(id: &str) -> bool {
    id.ends_with(".api_key") || id.ends_with(".api_keys")
}

/// `raw` as setting `id` may be shown: a key hidden, a URL without credentials.
pub fn safe(id: &str, raw: &str) -> String {
    match (hidden(id), id.ends_with("url")) {
        (true, _) if !raw.is_empty() => "(hidden)".into(),
        (_, true) => redact_url(raw),
        _ => raw.to_string(),
    }
}

/// The flag (without dashes) and the environment variable of setting `id`.
pub(super) fn long_and_env(command: &Command, id: &str) -> (String, String) {
    let arg = command.get_arguments().find(|a| a.get_id() == id);
    let long = arg.and_then(|a| a.get_long()).unwrap_or(id).to_string();
    let env = arg
        .and_then(|a| a.get_env())
        .map_or_else(String::new, |e| e.to_string_lossy().into_owned());
    (long, env)
}

fn parse(
    command: &Command,
    args: &[OsString],
    layered: &BTreeMap<String, Source>,
) -> Result<ArgMatches, LoadError> {
    command
        .clone()
        .try_get_matches_from(args)
        .map_err(|e| one_line(command, e, args, layered))
}

/// A bad value as one line naming where it was written; other errors as clap's.
fn one_line(
    command: &Command,
    e: clap::Error,
    args: &[OsString],
    layered: &BTreeMap<String, Source>,
) -> LoadError {
    if !matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) {
        return LoadError::Clap(e);
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), value) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue).unwrap_or_default(),
    ) else {
        return LoadError::Clap(e);
    };
    let long = arg
        .trim_start_matches('-')
        .split([' ', '='])
        .next()
        .unwrap_or_default();
    let Some(setting) = command.get_arguments().find(|a| a.get_long() == Some(long)) else {
        return LoadError::Clap(e);
    };
    let id = setting.get_id().as_str();
    let value = safe(id, &value);
    let on_command_line = args.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a == format!("--{long}") || a.starts_with(&format!("--{long}="))
    });
    let env = setting
        .get_env()
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|var| std::env::var_os(var).is_some());
    let source = match (on_command_line, env) {
        (false, Some(var)) => Source::Env(var),
        (false, None) => layered.get(id).cloned().unwrap_or(Source::Flag),
        (true, _) => Source::Flag,
    };
    let name = written(command, id, &source, &value);
    let reason = match e.kind() {
        ErrorKind::InvalidValue => match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => format!("expected one of {}", valid.join(", ")),
            _ => "not a valid value".into(),
        },
        _ => match std::error::Error::source(&e) {
            Some(s) => match s
                .downcast_ref::<std::num::ParseIntError>()
                .map(|p| p.kind())
            {
                Some(IntErrorKind::PosOverflow | IntErrorKind::NegOverflow) | None => s.to_string(),
                Some(_) => "expected a whole number".into(),
            },
            None => "not a valid value".into(),
        },
    };
    LoadError::Invalid(format!("{name}: {reason}"))
}
