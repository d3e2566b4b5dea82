//! [`Config::validate`]: every numeric setting within its range (so nothing
//! below panics or wraps), and the timeouts consistent, checked at start-up.
//! A duration is never 0: a timeout that should not bite is written long.

use std::fmt;
use std::time::Duration;

use clap::CommandFactory;

use super::{Config, duration};
use crate::upstream::BaseUrl;

const MS: Duration = Duration::from_millis(1);
const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
const MINUTE: Duration = secs(60);
const HOUR: Duration = secs(3600);
const DAY: Duration = secs(86_400);
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One numeric setting's value, of its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Time(Duration),
    Count(u64),
    /// Shown in MiB or GiB where it is whole.
    Bytes(u64),
    Rate(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Time(d) => f.write_str(&duration::format(d)),
            Value::Count(n) => write!(f, "{n}"),
            Value::Bytes(n) if n >= MIB && n % MIB == 0 => match n % GIB {
                0 => write!(f, "{} GiB", n / GIB),
                _ => write!(f, "{} MiB", n / MIB),
            },
            Value::Bytes(n) => write!(f, "{n} bytes"),
            Value::Rate(r) => write!(f, "{r}"),
        }
    }
}

impl Value {
    fn number(self) -> f64 {
        match self {
            Value::Time(d) => d.as_secs_f64(),
            Value::Count(n) | Value::Bytes(n) => n as f64,
            Value::Rate(r) => r,
        }
    }
}

/// What one numeric setting may hold: `min..=max`, or 0 where 0 turns
/// the limit off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The setting (`section.key`).
    pub id: &'static str,
    pub value: Value,
    pub min: Value,
    pub max: Value,
    pub zero_is_off: bool,
}

impl Bound {
    /// The range as the README's table shows it.
    pub fn range(&self) -> String {
        let range = format!("{} to {}", self.min, self.max);
        match self.zero_is_off {
            true => format!("0 (off), {range}"),
            false => range,
        }
    }

    fn check(&self) -> Result<(), Invalid> {
        let v = self.value.number();
        let problem = if v.is_nan() {
            "is not a number".to_string()
        } else if (self.zero_is_off && v == 0.0)
            || (self.min.number()..=self.max.number()).contains(&v)
        {
            return Ok(());
        } else if v < self.min.number() {
            format!("is below its minimum of {}", self.min)
        } else {
            format!("is above its maximum of {}", self.max)
        };
        Err(Invalid::new(self.id, self.value.to_string(), problem))
    }
}

/// Every numeric setting of `c` with its range (`off`: 0 turns it off).
pub fn bounds(c: &Config) -> Vec<Bound> {
    let (s, l, a, u, k) = (&c.server, &c.limits, &c.access, &c.upstream, &c.cache);
    // A table, one setting a line: its kind, value, minimum and maximum.
    macro_rules! table {
        (@off) => { false };
        (@off off) => { true };
        (@ Time $v:expr) => { Value::Time($v) };
        (@ Rate $v:expr) => { Value::Rate($v) };
        (@ $kind:ident $v:expr) => { Value::$kind(u64::try_from($v).unwrap_or(u64::MAX)) };
        ($($id:literal: $kind:ident $v:expr, $min:expr, $max:expr $(, $off:ident)?;)*) => {
            vec![$( Bound {
                id: $id,
                value: table!(@ $kind $v),
                min: table!(@ $kind $min),
                max: table!(@ $kind $max),
                zero_is_off: table!(@off $($off)?),
            }, )*]
        };
    }
    table! {
        "server.max_connections": Count s.max_connections, 1, 65_536;
        "server.max_connections_per_address": Count s.max_connections_per_address, 1, 65_536, off;
        "server.probe_max_connections": Count s.probe_max_connections, 1, 1024;
        "server.header_read_timeout": Time s.header_read_timeout, secs(1), 10 * MINUTE;
        "server.idle_timeout": Time s.idle_timeout, secs(1), HOUR;
        "limits.body_limit": Bytes l.body_limit, 1024, GIB;
        "limits.request_timeout": Time l.request_timeout, secs(1), DAY;
        "limits.max_messages": Count l.max_messages, 1, 1_000_000, off;
        "limits.max_total_chars": Count l.max_total_chars, 1, 1_000_000_000, off;
        "limits.max_concurrency": Count l.max_concurrency, 1, 4096, off;
        "limits.memory_budget_bytes": Bytes l.memory_budget_bytes, MIB, 1024 * GIB, off;
        "access.api_keys_reload": Time a.api_keys_reload, secs(1), DAY;
        "access.rate_limit_per_sec": Rate a.rate_limit_per_sec, 0.001, 1_000_000.0, off;
        "access.rate_limit_burst": Count a.rate_limit_burst, 1, 1_000_000;
        "upstream.timeout": Time u.timeout, secs(1), HOUR;
        "upstream.retry_budget": Time u.retry_budget, secs(1), DAY;
        "upstream.max_retries": Count u.max_retries, 0, 100;
        "upstream.max_concurrency": Count u.max_concurrency, 1, 4096;
        "upstream.precompute_concurrency": Count u.precompute_concurrency, 1, 4096, off;
        "upstream.context_window": Count u.context_window, 1024, 10_000_000;
        "upstream.result_chars": Count u.result_chars, 40, 1_000_000;
        "cache.ttl": Time k.ttl, MINUTE, 3650 * DAY;
        "cache.max_rows": Count k.max_rows, 1, 1_000_000_000;
        "cache.claim_lease": Time k.claim_lease, secs(1), HOUR;
        "cache.db_max_connections": Count k.db_max_connections, 1, 1000;
        "cache.db_acquire_timeout": Time k.db_acquire_timeout, MS, MINUTE;
        "cache.check_interval": Time k.check_interval, secs(1), HOUR;
        "cache.check_timeout": Time k.check_timeout, 100 * MS, MINUTE;
        "proxy.idle_timeout": Time c.proxy.idle_timeout, secs(1), DAY;
        "count.timeout": Time c.count.timeout, 100 * MS, 10 * MINUTE;
    }
}

/// A setting that stops start-up, and why (one line: [`Invalid::describe`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The setting (`section.key`).
    pub id: &'static str,
    /// Its value, as this module formats it.
    pub value: String,
    pub problem: String,
    /// The setting it conflicts with, and that one's value.
    pub other: Option<(&'static str, String)>,
    /// Why the two conflict.
    pub why: &'static str,
}

impl Invalid {
    fn new(id: &'static str, value: String, problem: impl Into<String>) -> Self {
        Self {
            id,
            value,
            problem: problem.into(),
            other: None,
            why: "",
        }
    }

    /// The line, each setting named by `name(id, value)`.
    pub fn describe(&self, name: impl Fn(&str, &str) -> String) -> String {
        let mut line = format!("{} {}", name(self.id, &self.value), self.problem);
        if let Some((other, value)) = &self.other {
            line = format!("{line} {}", name(other, value));
        }
        if !self.why.is_empty() {
            line = format!("{line}: {}", self.why);
        }
        line
    }
}

/// `CONDENSE_X=value`: a setting named by its environment variable.
fn env_name(id: &str, value: &str) -> String {
    let (_, env) = super::load::long_and_env(&Config::command(), id);
    format!("{env}={value}")
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(env_name))
    }
}

impl std::error::Error for Invalid {}

/// The timeouts that must be shorter (`<`) or at most as long (`<=`) as
/// others, and why; upstream and count ones only when configured.
const ORDER: [(&str, &str); 6] = [
    (
        "upstream.timeout < limits.request_timeout",
        "one upstream call must fit in a request",
    ),
    (
        "upstream.retry_budget <= limits.request_timeout",
        "retries after the request's time limit would never be answered",
    ),
    (
        "upstream.timeout <= upstream.retry_budget",
        "the retry budget would cut every call first",
    ),
    (
        "cache.db_acquire_timeout < limits.request_timeout",
        "a request must outlast its wait for the cache",
    ),
    (
        "count.timeout < limits.request_timeout",
        "a count must fit in its request",
    ),
    (
        "cache.check_timeout <= cache.check_interval",
        "one check must end before the next begins",
    ),
];

/// Setting `id`'s base URL (configured by `setting`), parsed once.
pub(super) fn base_url(
    id: &'static str,
    setting: &'static str,
    value: Option<&str>,
) -> Result<BaseUrl, Invalid> {
    BaseUrl::parse(setting, value).map_err(|problem| {
        let text = value.unwrap_or_default().trim();
        Invalid::new(id, super::load::safe(id, text), problem)
    })
}

/// The database URL: `postgres://`, `postgresql://`, `sqlite://` or `off`.
fn database_url(value: Option<&str>) -> Result<(), Invalid> {
    let Some(text) = value.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(());
    };
    let scheme = text.split(':').next().unwrap_or("").to_ascii_lowercase();
    let ok = text.eq_ignore_ascii_case("off")
        || (["postgres", "postgresql", "sqlite"].contains(&scheme.as_str())
            && reqwest::Url::parse(text).is_ok());
    let id = "cache.database_url";
    match ok {
        true => Ok(()),
        false => Err(Invalid::new(
            id,
            super::load::safe(id, text),
            "is not a postgres://, postgresql:// or sqlite:// URL, nor off",
        )),
    }
}

impl Config {
    /// The first problem: a value out of range, a URL, or the timeouts' order.
    pub fn validate(&self) -> Result<(), Invalid> {
        for bound in bounds(self) {
            bound.check()?;
        }
        self.upstream.client()?;
        self.proxy.urls()?;
        self.count.client()?;
        database_url(self.cache.database_url.as_deref())?;
        for (id, model) in [
            ("models.default_model", &self.models.default_model),
            ("upstream.model", &self.upstream.model),
        ] {
            if model.trim().is_empty() {
                return Err(Invalid::new(id, String::new(), "is empty: name a model"));
            }
        }
        self.cross_check()
    }

    /// The timeouts against each other ([`ORDER`]): errors, not warnings, since
    /// a setting that cannot take effect is always a misunderstanding.
    fn cross_check(&self) -> Result<(), Invalid> {
        let upstream = self.upstream.url().is_some();
        let counts = self.count.openai_url.is_some() || self.count.anthropic_url.is_some();
        let bounds = bounds(self);
        let time = |id: &str| match bounds.iter().find(|b| b.id == id).map(|b| b.value) {
            Some(Value::Time(d)) => d,
            _ => unreachable!("{id} is a bounded duration"),
        };
        for (rule, why) in ORDER {
            let (a, or_equal, b) = match rule.split_once(" <= ") {
                Some((a, b)) => (a, true, b),
                None => rule.split_once(" < ").map(|(a, b)| (a, false, b)).unwrap(),
            };
            let (va, vb) = (time(a), time(b));
            let off =
                (a.starts_with("upstream.") && !upstream) || (a.starts_with("count.") && !counts);
            if off || va < vb || (or_equal && va == vb) {
                continue;
            }
            return Err(Invalid {
                id: a,
                value: duration::format(va),
                problem: match or_equal {
                    true => "must not be longer than".into(),
                    false => "must be shorter than".into(),
                },
                other: Some((b, duration::format(vb))),
                why,
            });
        }
        if let Some(probe) = self.server.probe_listen
            && probe == self.server.listen
            && probe.port() != 0
        {
            return Err(Invalid {
                id: "server.probe_listen",
                value: probe.to_string(),
                problem: "must differ from".into(),
                other: Some(("server.listen", self.server.listen.to_string())),
                why: "the probes need a listener of their own",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
