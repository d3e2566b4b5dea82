//! Provider base URLs, parsed once, each with the name of its setting: a
//! route whose URL is unset says which setting would switch it on.

use reqwest::Url;

/// Why a base URL is refused.
const NOT_HTTP: &str = "is not an http:// or https:// URL";

/// A provider's base URL (None: unset) and the setting it is configured by.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseUrl {
    setting: &'static str,
    url: Option<Url>,
}

impl BaseUrl {
    /// `text` as an http(s) URL; unset or blank: the route is off.
    pub fn parse(setting: &'static str, text: Option<&str>) -> Result<Self, &'static str> {
        let url = match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => None,
            Some(text) => Some(
                Url::parse(text)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or(NOT_HTTP)?,
            ),
        };
        Ok(Self { setting, url })
    }

    pub fn url(&self) -> Option<&Url> {
        self.url.as_ref()
    }

    /// The URL without a trailing `/`, or the setting that would set it.
    pub fn get(&self) -> Result<&str, &'static str> {
        let url = self.url.as_ref().ok_or(self.setting)?;
        Ok(url.as_str().trim_end_matches('/'))
    }
}

/// The base URLs of the two provider APIs.
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
        let url = |u: Option<&str>| BaseUrl::parse("CONDENSE_X_URL", u);
        let get = |u| url(Some(u)).unwrap().get().map(str::to_string);
        assert_eq!(get("https://h/v1").as_deref(), Ok("https://h/v1"));
        assert_eq!(get(" https://h/v1// ").as_deref(), Ok("https://h/v1"));
        assert_eq!(get("HTTPS://H").as_deref(), Ok("https://h"));
        for off in [None, Some(""), Some("  ")] {
            assert_eq!(url(off).unwrap().get(), Err("CONDENSE_X_URL"), "{off:?}");
        }
        for bad in ["/", "api.openai.com/v1", "ftp://h", "https://"] {
            assert_eq!(url(Some(bad)), Err(NOT_HTTP), "{bad}");
        }
    }
}
