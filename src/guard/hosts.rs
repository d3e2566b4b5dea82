//! The `Host` names condense answers to (`CONDENSE_ALLOWED_HOSTS`), and
//! which browser origins may call it.
//!
//! Both stop a web page from using condense through its visitor's browser.
//! A page on another origin can send a request to `127.0.0.1:8080` (a
//! `text/plain` POST needs no preflight), and with DNS rebinding it can even
//! read the answer: its own name is made to resolve to 127.0.0.1, so the
//! browser thinks the page and condense share an origin. The request still
//! says what it is: its `Host` is the attacker's name, and its `Origin`
//! another site's. So a condense on loopback answers only the names of
//! loopback, and every route refuses an origin that is neither condense's
//! own nor listed in `CONDENSE_CORS_ORIGINS`.

use std::net::SocketAddr;

use super::Cors;

/// The names a request's `Host` may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hosts {
    /// Any name: a server reached through a load balancer or ingress,
    /// whose names condense cannot know.
    Any,
    /// These names (lowercase, without port or brackets).
    Names(Vec<String>),
}

/// The names of loopback, the default allow-list of a server listening there.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl Hosts {
    /// The setting's entries (`*` for any), or without any: the names of
    /// loopback when condense listens there (a laptop's setup, where
    /// rebinding is the threat), any name otherwise.
    pub fn parse(entries: &[String], listen: SocketAddr) -> anyhow::Result<Hosts> {
        let entries: Vec<&str> = entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            return Ok(if listen.ip().is_loopback() {
                let mut names: Vec<String> = LOOPBACK.iter().map(|n| n.to_string()).collect();
                names.push(listen.ip().to_string());
                names.dedup();
                Hosts::Names(names)
            } else {
                Hosts::Any
            });
        }
        if entries.contains(&"*") {
            anyhow::ensure!(
                entries.len() == 1,
                "CONDENSE_ALLOWED_HOSTS: `*` allows every name; list names or `*`, not both"
            );
            return Ok(Hosts::Any);
        }
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

    /// A request whose `Host` is `value` may be answered. A request without
    /// `Host` (HTTP/1.0, a test calling the router) is not a browser's.
    pub fn allows(&self, value: Option<&str>) -> bool {
        match (self, value) {
            (Hosts::Any, _) | (_, None) => true,
            (Hosts::Names(names), Some(v)) => {
                host_name(v).is_some_and(|h| names.iter().any(|n| n == &h))
            }
        }
    }
}

/// The name in a `Host` value or an origin's authority: lowercase, its
/// port and an IPv6 address's brackets taken off. `None` for what is not
/// a name (empty, a path, user info).
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

fn port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// A request from a page at `origin` may be served: condense's own origin
/// (the playground: the origin's authority is the request's `Host`), or
/// one CORS allows. `Origin: null` (a sandboxed frame, a file) is foreign.
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

    fn at(addr: &str) -> SocketAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn on_loopback_only_the_names_of_loopback_are_answered() {
        let hosts = Hosts::parse(&[], at("127.0.0.1:8080")).unwrap();
        for ok in [
            "localhost:8080",
            "LOCALHOST",
            "127.0.0.1:8080",
            "[::1]:8080",
            "127.0.0.1",
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
        ] {
            assert!(!hosts.allows(Some(refused)), "{refused}");
        }
        assert!(hosts.allows(None));
        assert_eq!(Hosts::parse(&[], at("0.0.0.0:8080")).unwrap(), Hosts::Any);
        assert!(
            Hosts::parse(&[], at("[::1]:8080"))
                .unwrap()
                .allows(Some("[::1]:8080"))
        );
    }

    #[test]
    fn listed_names_replace_the_default() {
        let hosts = Hosts::parse(
            &["condense.internal".into(), " Localhost ".into()],
            at("127.0.0.1:1"),
        )
        .unwrap();
        assert!(hosts.allows(Some("condense.internal:8443")));
        assert!(hosts.allows(Some("localhost")));
        assert!(!hosts.allows(Some("127.0.0.1")));
        assert_eq!(
            Hosts::parse(&["*".into()], at("127.0.0.1:1")).unwrap(),
            Hosts::Any
        );
        for bad in ["*,a", "http://a", "a/b", "a:99999999"] {
            let entries: Vec<String> = bad.split(',').map(String::from).collect();
            assert!(Hosts::parse(&entries, at("127.0.0.1:1")).is_err(), "{bad}");
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
