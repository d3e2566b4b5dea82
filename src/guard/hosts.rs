//! The `Host` names condense answers to (`CONDENSE_ALLOWED_HOSTS`), and which
//! browser origins may call it: both stop a web page from using condense
//! through its visitor's browser. With DNS rebinding a page can read
//! condense's answers, but its `Host` is still the attacker's name; so
//! without API keys condense answers only addresses and `localhost`.

use std::net::IpAddr;

use super::cors::{Cors, Listed, listed};

/// The names a request's `Host` may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hosts {
    /// Any name: API keys stop a rebound page at a 401.
    Any,
    /// An IP address or `localhost`: rebinding needs a name.
    Addresses,
    /// These names (lowercase, without port or brackets), and no others.
    Names(Vec<String>),
}

impl Hosts {
    /// The setting's entries (`*` for any); none: any name when API keys are
    /// required, else only addresses (`docker run -p` listens on all).
    pub fn parse(entries: &[String], keys_required: bool) -> anyhow::Result<Hosts> {
        let entries = match listed(entries, "CONDENSE_ALLOWED_HOSTS", "name")? {
            Listed::Nothing if keys_required => return Ok(Hosts::Any),
            Listed::Nothing => return Ok(Hosts::Addresses),
            Listed::Any => return Ok(Hosts::Any),
            Listed::Items(items) => items,
        };
        let names = entries
            .iter()
            .map(|&e| {
                host_name(e)
                    .filter(|n| n.len() == e.trim_start_matches('[').trim_end_matches(']').len())
                    .ok_or_else(|| anyhow::anyhow!(
                        "CONDENSE_ALLOWED_HOSTS: `{e}` is not a host name; write names without scheme or port (e.g. condense.internal,localhost)"
                    ))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Hosts::Names(names))
    }

    /// A request whose `Host` is `value` may be answered (none: not a browser).
    pub fn allows(&self, value: Option<&str>) -> bool {
        let Some(v) = value else { return true };
        match self {
            Hosts::Any => true,
            Hosts::Addresses => host_name(v).is_some_and(|h| {
                h.trim_end_matches('.') == "localhost" || h.parse::<IpAddr>().is_ok()
            }),
            Hosts::Names(names) => host_name(v).is_some_and(|h| names.iter().any(|n| n == &h)),
        }
    }
}

/// The name in a `Host` value or an authority: lowercase, no port or brackets.
fn host_name(authority: &str) -> Option<String> {
    let a = authority.trim();
    let name = if let Some(rest) = a.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        (after.is_empty() || port(after.strip_prefix(':')?)).then_some(inside)?
    } else {
        match a.rsplit_once(':') {
            Some((n, p)) if port(p) => n,
            Some(_) => return None,
            None => a,
        }
    };
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c));
    ok.then(|| name.to_ascii_lowercase())
}

/// A TCP port (`99999` is none).
fn port(p: &str) -> bool {
    p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
}

/// A request from a page at `origin` may be served: condense's own origin
/// (the playground), or one CORS allows.
pub fn origin_allowed(cors: Option<&Cors>, origin: &str, host: Option<&str>) -> bool {
    let same = origin
        .split_once("://")
        .is_some_and(|(_, authority)| host.is_some_and(|h| authority.eq_ignore_ascii_case(h)));
    same || match cors {
        Some(Cors::Any) => true,
        Some(Cors::Origins(list)) => list.iter().any(|o| o.as_bytes() == origin.as_bytes()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_keys_only_addresses_and_localhost_are_answered() {
        let hosts = Hosts::parse(&[], false).unwrap();
        for ok in [
            "localhost:8080",
            "LOCALHOST",
            "localhost.",
            "127.0.0.1:8080",
            "[::1]:8080",
            "10.1.2.3",
            "[fe80::1]",
        ] {
            assert!(hosts.allows(Some(ok)), "{ok}");
        }
        for refused in [
            "evil.example:8080",
            "127.0.0.1.nip.io:8080",
            "localhost.evil",
            "",
            "a b",
            "localhost:80:80",
            "localhost:99999",
            "[::1]:65536",
            "localhost:+80",
            "condense",
        ] {
            assert!(!hosts.allows(Some(refused)), "{refused}");
        }
        assert!(hosts.allows(None));
        assert_eq!(Hosts::parse(&[], true).unwrap(), Hosts::Any);
    }

    #[test]
    fn listed_names_replace_the_default() {
        let hosts =
            Hosts::parse(&["condense.internal".into(), " Localhost ".into()], false).unwrap();
        assert!(hosts.allows(Some("condense.internal:8443")));
        assert!(hosts.allows(Some("localhost")));
        assert!(!hosts.allows(Some("127.0.0.1")));
        assert_eq!(Hosts::parse(&["*".into()], false).unwrap(), Hosts::Any);
        for bad in ["*,a", "http://a", "a/b", "a:99999999"] {
            let entries: Vec<String> = bad.split(',').map(String::from).collect();
            assert!(Hosts::parse(&entries, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_own_origin_and_the_listed_ones_are_served() {
        let host = Some("127.0.0.1:8080");
        assert!(origin_allowed(None, "http://127.0.0.1:8080", host));
        assert!(!origin_allowed(None, "http://127.0.0.1:8081", host));
        assert!(!origin_allowed(None, "https://evil.example", host));
        assert!(!origin_allowed(None, "null", host));
        assert!(!origin_allowed(None, "http://127.0.0.1:8080", None));
        let listed = Cors::parse(&["https://app.example.com".into()]).unwrap();
        assert!(origin_allowed(
            listed.as_ref(),
            "https://app.example.com",
            host
        ));
        assert!(!origin_allowed(
            listed.as_ref(),
            "https://evil.example",
            host
        ));
        assert!(origin_allowed(
            Some(&Cors::Any),
            "https://evil.example",
            host
        ));
    }
}
