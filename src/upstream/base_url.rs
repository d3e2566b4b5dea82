//! Provider base URLs as the proxy and the provider count are configured
//! with them. Each carries the name of its setting: a route whose URL is
//! unset says which setting would switch it on.

/// A provider's base URL and the setting it is configured by.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseUrl {
    setting: &'static str,
    url: Option<String>,
}

impl BaseUrl {
    pub fn new(setting: &'static str, url: Option<String>) -> Self {
        Self { setting, url }
    }

    /// The URL a path is appended to: without surrounding blanks (the
    /// configuration's check allows them) or a trailing `/`. Unset or blank:
    /// the name of the setting that would set it, for the error or warning
    /// that says the route is off.
    pub fn get(&self) -> Result<&str, &'static str> {
        self.url
            .as_deref()
            .map(|u| u.trim().trim_end_matches('/'))
            .filter(|u| !u.is_empty())
            .ok_or(self.setting)
    }
}

/// The base URLs of the two provider APIs, as one service is configured
/// with them.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderUrls {
    /// OpenAI-compatible base URL (`https://api.openai.com/v1`).
    pub openai: BaseUrl,
    /// Anthropic base URL (`https://api.anthropic.com`).
    pub anthropic: BaseUrl,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_takes_a_path_or_names_its_setting() {
        let url = |u: Option<&str>| BaseUrl::new("CONDENSE_X_URL", u.map(String::from));
        assert_eq!(url(Some("https://h/v1")).get(), Ok("https://h/v1"));
        assert_eq!(url(Some(" https://h/v1// ")).get(), Ok("https://h/v1"));
        for off in [None, Some(""), Some("  "), Some("/")] {
            assert_eq!(url(off).get(), Err("CONDENSE_X_URL"), "{off:?}");
        }
    }
}
