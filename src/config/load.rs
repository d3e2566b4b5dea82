//! Reading the settings in layers: default < file < environment < flag.
//!
//! clap reads flags and the environment but no file. Rather than a second
//! set of structs for the file (every field an `Option`, merged by hand),
//! the file's values go through clap itself: after a first parse, each
//! setting that neither a flag nor the environment gave (its
//! `ValueSource` is the default) and that the file holds is added to the
//! arguments as `--flag=value`, and the arguments are parsed again. So a
//! file value meets the same parser, and the same error, as a flag, and
//! the precedence is clap's own. The former names of renamed settings
//! (`renamed`) and `DATABASE_URL` are layered the same way, as environment.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

use super::file::{self, FileValue};
use super::renamed;
use super::show::safe;

/// The id of the argument naming the file (`--config`, `CONDENSE_CONFIG`).
pub const FILE_ARG: &str = "config_file";

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Default,
    Flag,
    Env(String),
    File(PathBuf),
    /// A former name, as written (`CONDENSE_CACHE_TTL_DAYS=30`).
    Renamed(String),
}

/// The arguments parsed in layers, and where each setting came from.
#[derive(Debug)]
pub struct Loaded {
    pub matches: ArgMatches,
    pub command: Command,
    sources: BTreeMap<String, Source>,
    /// The former names in use, one line each, for the log.
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum LoadError {
    /// Help, version, an unknown flag: clap says it as usual.
    Clap(clap::Error),
    /// A value that cannot stand, as one line naming the setting.
    Invalid(String),
}

/// A value added to the arguments for a layer clap does not read.
pub(super) struct Layer {
    pub id: String,
    pub value: FileValue,
    pub source: Source,
}

/// `args` (the program's name first) parsed by `command` in layers.
pub fn load(
    command: Command,
    args: impl IntoIterator<Item = OsString>,
) -> Result<Loaded, LoadError> {
    let (args, old_flags) = renamed::take_old_flags(args.into_iter().collect());
    let first = parse(&command, &args, &[])?;
    let mut warnings = Vec::new();
    let mut layers = Vec::new();
    let given = |id: &str| {
        matches!(
            first.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    renamed::layer(&command, &first, &old_flags, &mut layers, &mut warnings);
    // `DATABASE_URL`, the name every database tool reads: environment too.
    let db = "cache.database_url";
    if !given(db)
        && let Some(url) = std::env::var("DATABASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
    {
        layers.push(Layer {
            id: db.into(),
            value: FileValue::Text(vec![url]),
            source: Source::Env("DATABASE_URL".into()),
        });
    }
    if let Some(path) = first.get_one::<PathBuf>(FILE_ARG) {
        for (id, value) in file::read(path, &command).map_err(LoadError::Invalid)? {
            if !given(&id) && !layers.iter().any(|l| l.id == id) {
                layers.push(Layer {
                    id,
                    value,
                    source: Source::File(path.clone()),
                });
            }
        }
    }
    let matches = match layers.is_empty() {
        true => first,
        false => {
            let program = args.first().cloned().unwrap_or_else(|| "condense".into());
            let mut layered = vec![program];
            for l in &layers {
                let (long, _) = long_and_env(&command, &l.id);
                match &l.value {
                    FileValue::Switch(true) => layered.push(format!("--{long}").into()),
                    FileValue::Switch(false) => {}
                    FileValue::Text(values) => {
                        layered.extend(values.iter().map(|v| format!("--{long}={v}").into()))
                    }
                }
            }
            layered.extend(args.iter().skip(1).cloned());
            parse(&command, &layered, &layers)?
        }
    };
    let mut sources = BTreeMap::new();
    for id in file::settings(&command) {
        let source = match layers.iter().find(|l| l.id == id) {
            Some(l) => l.source.clone(),
            None => match matches.value_source(id) {
                Some(ValueSource::CommandLine) => Source::Flag,
                Some(ValueSource::EnvVariable) => Source::Env(long_and_env(&command, id).1),
                _ => Source::Default,
            },
        };
        sources.insert(id.to_string(), source);
    }
    Ok(Loaded {
        matches,
        command,
        sources,
        warnings,
    })
}

impl Loaded {
    /// Where the setting `id` came from.
    pub fn source(&self, id: &str) -> Source {
        self.sources.get(id).cloned().unwrap_or(Source::Default)
    }

    /// The setting as the operator wrote it, for a one-line error:
    /// `CONDENSE_X=…`, `--x=…`, `FILE: [section] key = …`, or a former name
    /// as written. `value` stands in where nothing was written (a default).
    pub fn name(&self, id: &str, value: &str) -> String {
        let raw = self
            .raw(id)
            .map_or_else(|| value.to_string(), |r| safe(id, &r));
        let (long, env) = long_and_env(&self.command, id);
        match self.source(id) {
            Source::Default => format!("{env}={raw} (the default)"),
            Source::Flag => format!("--{long}={raw}"),
            Source::Env(var) => format!("{var}={raw}"),
            Source::File(path) => {
                let (section, key) = id.split_once('.').unwrap_or(("", id));
                format!("{}: [{section}] {key} = {raw}", path.display())
            }
            Source::Renamed(written) => written,
        }
    }

    /// The setting's text as given (values of a list joined by commas).
    pub fn raw(&self, id: &str) -> Option<String> {
        let values = self.matches.get_raw(id)?;
        Some(
            values
                .map(|v| v.to_string_lossy())
                .collect::<Vec<_>>()
                .join(","),
        )
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

fn parse(command: &Command, args: &[OsString], layers: &[Layer]) -> Result<ArgMatches, LoadError> {
    command
        .clone()
        .try_get_matches_from(args)
        .map_err(|e| one_line(command, e, args, layers))
}

/// A bad value as one line naming where it was written; any other clap
/// error (help, an unknown flag) as clap says it.
fn one_line(command: &Command, e: clap::Error, args: &[OsString], layers: &[Layer]) -> LoadError {
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
    let env = setting.get_env().map(|v| v.to_string_lossy().into_owned());
    let name = match layers.iter().find(|l| l.id == id).map(|l| &l.source) {
        Some(Source::File(path)) => {
            let (section, key) = id.split_once('.').unwrap_or(("", id));
            format!("{}: [{section}] {key} = {value}", path.display())
        }
        Some(Source::Renamed(written)) => written.clone(),
        Some(Source::Env(var)) => format!("{var}={value}"),
        _ => match env {
            Some(var) if !on_command_line && std::env::var_os(&var).is_some() => {
                format!("{var}={value}")
            }
            _ => format!("--{long}={value}"),
        },
    };
    let reason = match e.kind() {
        ErrorKind::InvalidValue => match e.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => format!("expected one of {}", valid.join(", ")),
            _ => "not a valid value".into(),
        },
        _ => std::error::Error::source(&e)
            .map_or_else(|| "not a valid value".into(), |s| s.to_string()),
    };
    LoadError::Invalid(format!("{name}: {reason}"))
}
