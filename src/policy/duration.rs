//! The one syntax of every duration setting: a whole number and a unit
//! (`500ms`, `30s`, `5m`, `2h`, `30d`). Not `humantime`'s, which also reads
//! `1month` and compound forms: one small grammar is easier to bound. It
//! lives with the profiles, the lowest layer that reads one (a profile's
//! `provider_cache_ttl`); the configuration re-exports it.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration setting of a profile: a whole number and a unit (`ms`, `s`,
/// `m`, `h`, `d`), as `5m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, utoipa::ToSchema)]
#[schema(value_type = String, example = "5m")]
pub struct Period(pub Duration);

impl Period {
    /// The provider's default prompt-cache lifetime (Anthropic's 5 minutes;
    /// OpenAI keeps a prefix 5 to 10 minutes).
    pub const CACHE_TTL: Period = Period(Duration::from_secs(300));
    /// Anthropic's `ttl: "1h"`.
    pub const HOUR: Period = Period(Duration::from_secs(3600));
}

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(self.0))
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map(Period).map_err(serde::de::Error::custom)
    }
}

const UNITS: [(&str, u64); 5] = [
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// A duration with its unit (`30s`). A bare number is refused: the old
/// names each had their own unit, so a number alone is ambiguous.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    const EXPECTED: &str = "expected a duration such as 90s or 500ms";
    if number.is_empty() || unit.starts_with('.') {
        return Err(format!(
            "{EXPECTED}: a whole number and a unit (ms, s, m, h, d)"
        ));
    }
    let Some(&(_, millis)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(match unit {
            "" => format!("needs a unit (ms, s, m, h, d), e.g. {text}s"),
            _ => format!("{EXPECTED}: `{unit}` is not a unit of time (ms, s, m, h, d)"),
        });
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(millis))
        .map(Duration::from_millis)
        .ok_or_else(|| "too long a duration".to_string())
}

/// [`parse`], also taking a bare number as seconds: the settings that had
/// no unit in their name (`CONDENSE_REQUEST_TIMEOUT=120`) keep reading so.
pub fn parse_secs(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return parse(&format!("{trimmed}s"));
    }
    parse(text)
}

/// `d` in the largest unit that holds it whole (`120s` is `2m`), as
/// [`parse`] reads it back (to the millisecond; a sliver below one is `1ms`).
pub fn format(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let millis = d.as_millis().max(1);
    let (unit, size) = UNITS
        .iter()
        .rev()
        .find(|(_, size)| millis.is_multiple_of(u128::from(*size)))
        .copied()
        .unwrap_or(UNITS[0]);
    format!("{}{unit}", millis / u128::from(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_unit() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse(" 30d "), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_what_is_not_one_number_and_one_unit() {
        for bad in [
            "", "s", "30", "30 s", "1h30m", "1.5s", "-1s", "30sec", "30S",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse("30").unwrap_err().contains("needs a unit"));
        for bad in ["1.5", "1.5s", "x", "30sec"] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.starts_with("expected a duration such as 90s"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn an_overflow_is_an_error_not_a_wrap() {
        assert!(parse("18446744073709551615d").is_err());
        assert!(parse("99999999999999999999999s").is_err());
        assert!(parse(&format!("{}ms", u64::MAX)).is_ok());
    }

    #[test]
    fn a_bare_number_is_seconds_only_where_allowed() {
        assert_eq!(parse_secs("120"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_secs("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_secs("").is_err());
    }

    #[test]
    fn formats_in_the_largest_whole_unit_and_reads_back() {
        for (d, text) in [
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(90), "90s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_secs(30 * 86_400), "30d"),
            (Duration::ZERO, "0s"),
            (Duration::from_micros(1), "1ms"),
        ] {
            assert_eq!(format(d), text);
        }
        for ms in [1u64, 999, 1000, 61_000, 3_600_000, 86_400_000 * 3650] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse(&format(d)), Ok(d));
        }
    }
}
