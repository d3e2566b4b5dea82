//! Credentials written into a URL, hidden wherever a URL is shown: one
//! function for all, so no caller picks a weaker one. A leaf.

const REDACTED: &str = "[redacted]";

/// `url` with its whole userinfo (a lone user may be a key) and every query
/// value whose name says it may be a secret replaced ([`secret_name`]);
/// works on text that is not a URL too.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(start) = out.find("://").map(|i| i + 3) {
        let authority_end = out[start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..authority_end].rfind('@') {
            out.replace_range(start..start + at, REDACTED);
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if secret_name(k) => format!("{k}={REDACTED}"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

/// A query parameter that may carry a credential: `password`,
/// `sslpassword`, `api_key`, `key`, `token`, `sig`, `X-Amz-Signature`,
/// `secret`, `auth`... Matched by what the name holds, so a new spelling
/// errs toward hiding.
pub fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "key",
        "token",
        "secret",
        "sig",
        "auth",
        "credential",
        "session",
    ]
    .iter()
    .any(|word| name.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(
            redact_url("https://bob:hunter2@llm.example:8443/v1?x=a@b"),
            "https://[redacted]@llm.example:8443/v1?x=a@b"
        );
        assert_eq!(redact_url("https://sk-abc@h/v1"), "https://[redacted]@h/v1");
        assert_eq!(
            redact_url("postgres://app:s3cr%40t@db:5432/condense?sslmode=require"),
            "postgres://[redacted]@db:5432/condense?sslmode=require"
        );
        // A lone user name may be the key: hidden too.
        assert_eq!(
            redact_url("postgres://app@db/x"),
            "postgres://[redacted]@db/x"
        );
    }

    #[test]
    fn query_passwords_are_redacted() {
        assert_eq!(
            redact_url("postgresql://db/condense?user=app&password=s3cret"),
            "postgresql://db/condense?user=app&password=[redacted]"
        );
        assert_eq!(
            redact_url("postgres://u:p@db/x?PASSWORD=q&sslmode=require"),
            "postgres://[redacted]@db/x?PASSWORD=[redacted]&sslmode=require"
        );
        assert_eq!(
            redact_url("https://h/v1?api_key=k1&key=k2&sig=s&X-Amz-Signature=a&user=u"),
            "https://h/v1?api_key=[redacted]&key=[redacted]&sig=[redacted]&X-Amz-Signature=[redacted]&user=u"
        );
        assert_eq!(
            redact_url("postgres://db/x?sslpassword=p&access_token=t&sslmode=verify-full"),
            "postgres://db/x?sslpassword=[redacted]&access_token=[redacted]&sslmode=verify-full"
        );
    }

    #[test]
    fn urls_without_credentials_are_unchanged() {
        for url in ["http://h:1/v1", "sqlite://cache.db", "not a url", "off"] {
            assert_eq!(redact_url(url), url);
        }
    }
}
