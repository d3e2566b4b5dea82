//! The names that spelled their unit (`CONDENSE_CACHE_TTL_DAYS=30`,
//! `--db-acquire-timeout-ms 500`), read for one more release as the
//! duration they meant (`30d`, `500ms`), each with a warning at start-up.
//! Removing this file (and its two callers in `load`) ends them.

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

use super::file::FileValue;
use super::load::{Layer, Source, long_and_env};

/// A setting's former name and the unit its number was in.
#[derive(Debug, Clone, Copy)]
pub struct Renamed {
    /// The setting now (`section.key`).
    pub id: &'static str,
    pub old_env: &'static str,
    /// Without its dashes.
    pub old_flag: &'static str,
    pub unit: &'static str,
}

const fn renamed(
    id: &'static str,
    old_env: &'static str,
    old_flag: &'static str,
    unit: &'static str,
) -> Renamed {
    Renamed {
        id,
        old_env,
        old_flag,
        unit,
    }
}

pub const RENAMED: [Renamed; 9] = [
    renamed(
        "cache.ttl",
        "CONDENSE_CACHE_TTL_DAYS",
        "cache-ttl-days",
        "d",
    ),
    renamed(
        "cache.claim_lease",
        "CONDENSE_CACHE_CLAIM_LEASE_SECS",
        "cache-claim-lease-secs",
        "s",
    ),
    renamed(
        "cache.db_acquire_timeout",
        "CONDENSE_DB_ACQUIRE_TIMEOUT_MS",
        "db-acquire-timeout-ms",
        "ms",
    ),
    renamed(
        "cache.check_interval",
        "CONDENSE_CACHE_CHECK_SECS",
        "cache-check-secs",
        "s",
    ),
    renamed(
        "cache.check_timeout",
        "CONDENSE_CACHE_CHECK_TIMEOUT_SECS",
        "cache-check-timeout-secs",
        "s",
    ),
    renamed(
        "count.timeout",
        "CONDENSE_PROVIDER_COUNT_TIMEOUT_SECS",
        "provider-count-timeout-secs",
        "s",
    ),
    renamed(
        "access.api_keys_reload",
        "CONDENSE_API_KEYS_RELOAD_SECS",
        "api-keys-reload-secs",
        "s",
    ),
    renamed(
        "server.header_read_timeout",
        "CONDENSE_HEADER_READ_TIMEOUT_SECS",
        "header-read-timeout-secs",
        "s",
    ),
    renamed(
        "server.idle_timeout",
        "CONDENSE_IDLE_TIMEOUT_SECS",
        "idle-timeout-secs",
        "s",
    ),
];

/// The value in the new syntax: the old number with its unit. Anything
/// else is passed on as it is, for the duration parser to refuse.
pub fn with_unit(old: &str, unit: &str) -> String {
    let t = old.trim();
    match !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        true => format!("{t}{unit}"),
        false => t.to_string(),
    }
}

/// A former flag found on the command line.
#[derive(Debug, Clone)]
pub struct OldFlag {
    pub renamed: Renamed,
    /// As written (`--cache-ttl-days=30`, or the two words).
    pub written: String,
    pub value: String,
}

/// `args` with each former flag (`--idle-timeout-secs 75`,
/// `--idle-timeout-secs=75`) taken out, and the flags found. `load` puts
/// them back in the new form, so that a value in the new form from the
/// command line still wins.
pub fn take_old_flags(args: Vec<OsString>) -> (Vec<OsString>, Vec<OldFlag>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut found = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--" {
            kept.push(arg);
            kept.extend(args.by_ref());
            break;
        }
        let (flag, inline) = match text.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (text.clone(), None),
        };
        let old = flag
            .strip_prefix("--")
            .and_then(|f| RENAMED.iter().find(|r| r.old_flag == f));
        match (old, inline) {
            (Some(r), Some(value)) => found.push(OldFlag {
                renamed: *r,
                written: text,
                value,
            }),
            (Some(r), None) => {
                let value = args
                    .next()
                    .map(|v| v.to_string_lossy().into_owned())
                    .unwrap_or_default();
                found.push(OldFlag {
                    renamed: *r,
                    written: format!("{text} {value}"),
                    value,
                })
            }
            (None, _) => kept.push(arg),
        }
    }
    (kept, found)
}

/// The layers of the former names in use (`first` is the parse without
/// them) and a warning for each. A flag beats the environment, and a new
/// name an old one; a former name that loses is said to be ignored.
pub(super) fn layer(
    command: &Command,
    first: &ArgMatches,
    old_flags: &[OldFlag],
    layers: &mut Vec<Layer>,
    warnings: &mut Vec<String>,
) {
    for r in RENAMED {
        let (long, env) = long_and_env(command, r.id);
        let source = first.value_source(r.id);
        let mut old = Vec::new();
        if let Some(f) = old_flags.iter().rev().find(|f| f.renamed.id == r.id) {
            let stands = source != Some(ValueSource::CommandLine);
            old.push((stands, f.written.clone(), f.value.clone()));
        }
        if let Some(v) = std::env::var(r.old_env)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            let stands = !matches!(
                source,
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            );
            old.push((stands, format!("{}={v}", r.old_env), v));
        }
        let mut taken = false;
        for (stands, written, value) in old {
            if stands && !taken {
                taken = true;
                let value = with_unit(&value, r.unit);
                warnings.push(format!(
                    "{written} is a former name, read as {env}={value} (--{long}={value}); \
                     it will stop working in a coming release"
                ));
                layers.push(Layer {
                    id: r.id.into(),
                    value: FileValue::Text(vec![value]),
                    source: Source::Renamed(written),
                });
            } else {
                warnings.push(format!(
                    "{written} is a former name of {env} and is ignored: a value given \
                     another way takes precedence"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn old_flags_are_taken_out_in_both_forms() {
        let (kept, found) = take_old_flags(os(&[
            "condense",
            "--db-acquire-timeout-ms",
            "500",
            "--listen",
            "127.0.0.1:0",
            "--cache-ttl-days=7",
        ]));
        assert_eq!(kept, os(&["condense", "--listen", "127.0.0.1:0"]));
        let found: Vec<_> = found
            .iter()
            .map(|f| (f.renamed.id, with_unit(&f.value, f.renamed.unit)))
            .collect();
        assert_eq!(
            found,
            [
                ("cache.db_acquire_timeout", "500ms".into()),
                ("cache.ttl", "7d".to_string())
            ]
        );
    }

    #[test]
    fn a_value_with_a_unit_is_left_for_the_parser() {
        assert_eq!(with_unit("30", "s"), "30s");
        assert_eq!(with_unit("30s", "s"), "30s");
        assert_eq!(with_unit("-1", "d"), "-1");
    }
}
