//! Secrets of the upstream: the API key, a string that cannot be printed by
//! accident, and credentials written into a URL (`https://user:pass@host`),
//! which reqwest sends as `Authorization: Basic …` and which must no more
//! reach a log line, an error or `--help` than the key.

use std::fmt;

/// Debug and Display print `[redacted]`; the value is read only where it is
/// put into a request header. `PartialEq` lets a whole `Config` be compared;
/// it is not constant-time, so it must never check a caller's credentials.
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

/// Blanks the upstream's credentials out of text it wrote (some servers
/// echo request headers in their errors): the API key, and the userinfo
/// of its URL, both as written and as the `Basic` token reqwest sends.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

/// The token of the `Authorization: Basic …` header reqwest sends for the
/// userinfo of `url`, derived as reqwest derives it (`extract_authority`,
/// `basic_auth`): percent-decoded user and password, `user:password` in
/// standard base64; none when the user name is not UTF-8 or there is no
/// userinfo.
fn basic_token(url: &reqwest::Url) -> Option<String> {
    use base64::Engine;
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    let user = decode(url.username())?;
    let password = url.password().and_then(decode);
    if user.is_empty() && password.is_none() {
        return None;
    }
    let pair = format!("{user}:{}", password.unwrap_or_default());
    Some(base64::engine::general_purpose::STANDARD.encode(pair))
}

impl Scrubber {
    pub fn new(key: &Secret, url: &str) -> Self {
        let mut secrets = Vec::new();
        if !key.is_empty() {
            secrets.push(key.expose().to_string());
        }
        if let Ok(parsed) = reqwest::Url::parse(url) {
            match parsed.password() {
                Some(password) => secrets.push(password.to_string()),
                // A lone user name is the secret (`https://KEY@host`).
                None => secrets.push(parsed.username().to_string()),
            }
            if let Some(token) = basic_token(&parsed) {
                secrets.push(token);
            }
        }
        secrets.retain(|s| !s.is_empty());
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
        let s = Scrubber::new(&Secret::new("sk-1"), "http://bob:hunter2@h/v1");
        // base64("bob:hunter2")
        let echoed = "key sk-1, auth Basic Ym9iOmh1bnRlcjI=, pass hunter2";
        assert_eq!(
            s.scrub(echoed),
            "key [redacted], auth Basic [redacted], pass [redacted]"
        );
        let plain = Scrubber::new(&Secret::default(), "http://h/v1");
        assert_eq!(plain.scrub("nothing secret"), "nothing secret");
    }

    #[test]
    fn basic_token_is_the_one_reqwest_sends() {
        // RFC 7617's example.
        let aladdin = reqwest::Url::parse("http://Aladdin:open%20sesame@h/").unwrap();
        assert_eq!(
            basic_token(&aladdin).as_deref(),
            Some("QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        );
        let client = reqwest::Client::new();
        for url in [
            "http://Aladdin:open%20sesame@h/",
            "https://KEY@h/v1",
            "http://:pw@h",
            "http://u:@h",
            "http://us%C3%A9r:p%40ss%3A@h",
            "http://%FF:x@h",
            "http://h/v1",
        ] {
            let url = reqwest::Url::parse(url).unwrap();
            let request = client.get(url.clone()).build().unwrap();
            let sent = request
                .headers()
                .get(reqwest::header::AUTHORIZATION)
                .map(|v| v.to_str().unwrap().strip_prefix("Basic ").unwrap());
            assert_eq!(basic_token(&url).as_deref(), sent, "{url}");
        }
    }

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s} {s:?}"), "[redacted] [redacted]");
        assert_eq!(s.expose(), "sk-live-123");
    }
}
