//! A strict reader of the Prometheus text exposition format (0.0.4), for
//! tests that scrape `GET /metrics`: every sample must belong to a family
//! declared by `# HELP` and `# TYPE`, labels must be well quoted, values
//! numbers. Small enough to read; no crate needed for it.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// `counter`, `gauge`, `histogram`…
    pub kind: String,
    pub help: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub families: BTreeMap<String, Family>,
    pub samples: Vec<Sample>,
}

impl Scrape {
    /// The samples named `name` whose labels include every pair of `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v))
        })
    }

    /// The value of the one series `name` with exactly `labels`; 0 when the
    /// series does not exist yet (nothing was recorded under those labels:
    /// a family with no series at all is not written either).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<&Sample> = self
            .matching(name, labels)
            .filter(|s| s.labels.len() == labels.len())
            .collect();
        match found.as_slice() {
            [] => 0.0,
            [one] => one.value,
            many => panic!("{} series of {name} {labels:?}: {many:?}", many.len()),
        }
    }

    /// The family a sample name belongs to (a histogram's `_bucket`, `_sum`
    /// and `_count` belong to the histogram).
    pub fn family_of(&self, sample: &str) -> Option<(&str, &Family)> {
        if let Some((name, f)) = self.families.get_key_value(sample) {
            return (f.kind != "histogram").then_some((name.as_str(), f));
        }
        ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
            let base = sample.strip_suffix(suffix)?;
            let (name, f) = self.families.get_key_value(base)?;
            (f.kind == "histogram").then_some((name.as_str(), f))
        })
    }
}

/// Parses an exposition; panics naming the line that is not the format.
/// `GET {base}/metrics` of a server on a socket, parsed.
pub async fn scrape(client: &reqwest::Client, base: &str) -> Scrape {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("/metrics answers")
        .text()
        .await
        .expect("a text body");
    parse(&text)
}

pub fn parse(text: &str) -> Scrape {
    let mut scrape = Scrape::default();
    let mut help: BTreeMap<String, String> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(valid_name(name), "bad metric name, {}", at());
            help.insert(name.to_string(), text.to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at()));
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "unknown type, {}",
                at()
            );
            let help = help
                .get(name)
                .unwrap_or_else(|| panic!("TYPE without HELP, {}", at()));
            let family = Family {
                kind: kind.to_string(),
                help: help.clone(),
            };
            assert!(
                scrape.families.insert(name.to_string(), family).is_none(),
                "family declared twice, {}",
                at()
            );
        } else if line.starts_with('#') {
            // A comment.
        } else {
            let sample = sample(line).unwrap_or_else(|e| panic!("{e}, {}", at()));
            assert!(
                scrape.family_of(&sample.name).is_some(),
                "a sample of no declared family, {}",
                at()
            );
            scrape.samples.push(sample);
        }
    }
    scrape
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("a sample needs a value")?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err(format!("bad sample name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = rest.split_once("=\"").ok_or("a label needs =\"")?;
            if !valid_name(key) || key.contains(':') {
                return Err(format!("bad label name {key:?}"));
            }
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().ok_or("an unclosed label value")? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next().ok_or("a dangling escape")?.1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (_, c) => value.push(c),
                }
            };
            if labels.insert(key.to_string(), value).is_some() {
                return Err(format!("label {key} twice"));
            }
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let value = rest
        .strip_prefix(' ')
        .ok_or("a space before the value")?
        .split(' ')
        .next()
        .unwrap_or_default();
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().map_err(|e| format!("bad value {v:?}: {e}"))?,
    };
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}
