//! Credentials written into a URL, hidden wherever a URL is shown: one
//! function for all, so no caller picks a weaker one. A leaf.

const REDACTED: &str = "[redacted]";

/// `url` with its whole userinfo (a lone user may be a key) and every
/// `password=` query value replaced; works on text that is not a URL too.
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
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}={REDACTED}"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
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
    }

    #[test]
    fn urls_without_credentials_are_unchanged() {
        for url in ["http://h:1/v1", "sqlite://cache.db", "not a url", "off"] {
            assert_eq!(redact_url(url), url);
        }
    }
}
