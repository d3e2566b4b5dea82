//! The origins a browser may call condense from (`CONDENSE_CORS_ORIGINS`);
//! off by default (the playground is same-origin).

use axum::http::HeaderValue;

/// Which cross-origin callers a browser lets read condense's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cors {
    /// `*`: any origin (no credentials; the `Authorization` header still works).
    Any,
    /// Exactly these origins (`scheme://host[:port]`).
    Origins(Vec<HeaderValue>),
}

impl Cors {
    /// The setting's entries, checked at start (`None`: CORS off).
    pub fn parse(entries: &[String]) -> anyhow::Result<Option<Cors>> {
        let entries = match listed(entries, "CONDENSE_CORS_ORIGINS", "origin")? {
            Listed::Nothing => return Ok(None),
            Listed::Any => return Ok(Some(Cors::Any)),
            Listed::Items(items) => items,
        };
        let origins = entries
            .iter()
            .map(|&e| origin(e).ok_or_else(|| anyhow::anyhow!(
                "CONDENSE_CORS_ORIGINS: `{e}` is not an origin; write scheme://host[:port], without a path or a trailing slash (e.g. https://app.example.com)"
            )))
            .collect::<anyhow::Result<_>>()?;
        Ok(Some(Cors::Origins(origins)))
    }
}

/// A comma-separated allow-list setting, read: nothing, `*`, or items.
pub(super) enum Listed<'a> {
    Nothing,
    Any,
    Items(Vec<&'a str>),
}

/// The entries of the allow-list `setting` (of `what`s), trimmed, empty
/// ones dropped; `*` must stand alone.
pub(super) fn listed<'a>(
    entries: &'a [String],
    setting: &str,
    what: &str,
) -> anyhow::Result<Listed<'a>> {
    let entries: Vec<&str> = entries
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return Ok(Listed::Nothing);
    }
    if entries.contains(&"*") {
        anyhow::ensure!(
            entries.len() == 1,
            "{setting}: `*` allows every {what}; list {what}s or `*`, not both"
        );
        return Ok(Listed::Any);
    }
    Ok(Listed::Items(entries))
}

/// `scheme://host[:port]` as a browser sends it in `Origin`.
fn origin(e: &str) -> Option<HeaderValue> {
    let (scheme, rest) = e.split_once("://")?;
    let scheme_ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let host_ok = !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    (scheme_ok && host_ok)
        .then(|| HeaderValue::from_str(e).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::Cors;

    fn parse(list: &[&str]) -> anyhow::Result<Option<Cors>> {
        Cors::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn origins_are_checked() {
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&[" "]).unwrap(), None);
        assert_eq!(parse(&["*"]).unwrap(), Some(Cors::Any));
        let Some(Cors::Origins(o)) = parse(&["https://a.example", "http://[::1]:8080"]).unwrap()
        else {
            panic!("a list");
        };
        assert_eq!(o.len(), 2);
        for bad in [
            "https://a.example/",
            "a.example",
            "https://a.example/path",
            "*, https://a",
        ] {
            assert!(parse(&[bad]).is_err(), "{bad}");
        }
        assert!(parse(&["*", "https://a.example"]).is_err());
    }
}
