//! Secrets of the upstream: the API key, which cannot be printed by
//! accident, and a URL's credentials, blanked out of what the upstream writes.

use std::fmt;

/// Debug and Display print `[redacted]`. `PartialEq` (to compare configs) is
/// not constant-time: never check a caller's credentials with it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place it belongs: an outgoing header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::new(s))
    }
}

/// Blanks the upstream's credentials out of text it wrote: the API key, and
/// its URL's userinfo, as written and as the `Basic` token reqwest sends.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    /// `http` sends to `url`: the `Basic` token is read off a request it builds.
    pub fn new(key: &Secret, url: &reqwest::Url, http: &reqwest::Client) -> Self {
        let basic = http.get(url.clone()).build().ok().and_then(|r| {
            let auth = r.headers().get(reqwest::header::AUTHORIZATION)?;
            Some(auth.to_str().ok()?.strip_prefix("Basic ")?.to_string())
        });
        // A lone user name is the secret (`https://KEY@host`).
        let userinfo = url.password().unwrap_or(url.username()).to_string();
        let mut secrets: Vec<String> = [Some(key.expose().to_string()), Some(userinfo), basic]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect();
        // Longest first: a secret that contains another is blanked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets }
    }

    pub fn scrub(&self, text: &str) -> String {
        self.secrets
            .iter()
            .fold(text.to_string(), |t, s| t.replace(s.as_str(), "[redacted]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_key_password_and_basic_token() {
        let new = |key, url| {
            let url = reqwest::Url::parse(url).unwrap();
            Scrubber::new(&key, &url, &reqwest::Client::new())
        };
        let s = new(Secret::new("sk-1"), "http://bob:hunter2@h/v1");
        // base64("bob:hunter2")
        let echoed = "key sk-1, auth Basic Ym9iOmh1bnRlcjI=, pass hunter2";
        assert_eq!(
            s.scrub(echoed),
            "key [redacted], auth Basic [redacted], pass [redacted]"
        );
        let plain = new(Secret::default(), "http://h/v1");
        assert_eq!(plain.scrub("nothing secret"), "nothing secret");
    }

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s} {s:?}"), "[redacted] [redacted]");
        assert_eq!(s.expose(), "sk-live-123");
    }
}
