//! The model registry: a model name's encoding, window and calibration.
//! Data (`data/models.toml`, embedded), so `--models-file` can add a model.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Encoding;

const EMBEDDED: &str = include_str!("../../data/models.toml");

/// One registry row; a model name matches the longest prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[schema(min_length = 1)]
    pub prefix: String,
    /// `openai` marks models the cookbook formula counts exactly.
    pub family: String,
    pub encoding: Encoding,
    #[schema(minimum = 1)]
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// Multiplier applied to BPE counts (1 for OpenAI models, the default).
    #[serde(default = "one")]
    #[schema(required = true, exclusive_minimum = 0, maximum = 10)]
    pub calibration: f64,
    /// A cached input token's price (a prompt-cache read), as a multiple of
    /// the input price; absent: the family's (anthropic 0.1, openai 0.5,
    /// any other 1: no cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, exclusive_minimum = 0, maximum = 10)]
    pub cache_read: Option<f64>,
    /// A token written into the prompt cache, as a multiple of the input
    /// price; absent: the family's (anthropic 1.25, the 5-minute cache; any
    /// other 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, exclusive_minimum = 0, maximum = 10)]
    pub cache_write: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl ModelSpec {
    /// Whether the OpenAI cookbook formula describes this model's chat format.
    pub fn is_openai(&self) -> bool {
        self.family == "openai"
    }

    /// The model's prompt-cache prices: its own, else its family's.
    pub fn cache_prices(&self) -> CachePrices {
        let family = CachePrices::of_family(&self.family);
        CachePrices {
            read: self.cache_read.unwrap_or(family.read),
            write: self.cache_write.unwrap_or(family.write),
        }
    }
}

/// What a provider's prompt cache charges, as multiples of the model's input
/// price: what a summary costs is the prefix it makes the provider write
/// again, against the reads it saves later (the policy's payback rule).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CachePrices {
    /// A token read from the cache.
    pub read: f64,
    /// A token written into it (uncached input where writing costs nothing extra).
    pub write: f64,
}

impl CachePrices {
    /// No prompt cache: every token at the input price, so a summary pays
    /// as soon as it makes the prompt smaller.
    pub const NONE: Self = Self {
        read: 1.0,
        write: 1.0,
    };

    /// A family's published default: Anthropic writes at 1.25x and reads at
    /// 0.1x (the 5-minute cache); OpenAI writes at no premium and reads at
    /// 0.5x (gpt-4o; newer models list their own); any other family is
    /// assumed to have no cache.
    pub fn of_family(family: &str) -> Self {
        match family {
            "anthropic" => Self {
                read: 0.1,
                write: 1.25,
            },
            "openai" => Self {
                read: 0.5,
                write: 1.0,
            },
            _ => Self::NONE,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    model: Vec<ModelSpec>,
}

#[derive(Debug, Clone)]
pub struct ModelRegistry {
    models: Vec<ModelSpec>,
}

impl ModelRegistry {
    /// The registry compiled into the binary.
    pub fn embedded() -> Self {
        Self::parse(EMBEDDED).expect("the embedded data/models.toml is valid")
    }

    /// A registry read from a TOML file with the same shape as `data/models.toml`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the models file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing the models file {}", path.display()))
    }

    fn parse(text: &str) -> anyhow::Result<Self> {
        let file: RegistryFile = toml::from_str(text)?;
        anyhow::ensure!(!file.model.is_empty(), "the registry lists no model");
        for m in &file.model {
            anyhow::ensure!(!m.prefix.is_empty(), "a model has an empty prefix");
            anyhow::ensure!(
                m.context_window > 0,
                "model {}: context_window must be > 0",
                m.prefix
            );
            anyhow::ensure!(
                m.calibration.is_finite() && m.calibration > 0.0 && m.calibration <= 10.0,
                "model {}: calibration must be in (0, 10]",
                m.prefix
            );
            for (name, v) in [("cache_read", m.cache_read), ("cache_write", m.cache_write)] {
                anyhow::ensure!(
                    v.is_none_or(|v| v.is_finite() && v > 0.0 && v <= 10.0),
                    "model {}: {name} must be in (0, 10]",
                    m.prefix
                );
            }
        }
        Ok(Self { models: file.model })
    }

    pub fn models(&self) -> &[ModelSpec] {
        &self.models
    }

    /// The longest-prefix match and true; for an unknown model,
    /// `default_model`'s row (or o200k with a 128k window) and false.
    pub fn resolve(&self, model: &str, default_model: &str) -> (ModelSpec, bool) {
        if let Some(spec) = self.lookup(model) {
            return (spec.clone(), true);
        }
        let mut spec = self.lookup(default_model).cloned().unwrap_or(ModelSpec {
            prefix: String::new(),
            family: "unknown".into(),
            encoding: Encoding::O200kBase,
            context_window: 128_000,
            max_output_tokens: 4096,
            calibration: 1.0,
            cache_read: None,
            cache_write: None,
        });
        // An unknown model is never "openai": its count can only be an
        // estimate; nor are its cache prices known.
        spec.family = "unknown".into();
        spec.calibration = 1.0;
        (spec.cache_read, spec.cache_write) = (None, None);
        (spec, false)
    }

    fn lookup(&self, model: &str) -> Option<&ModelSpec> {
        self.models
            .iter()
            .filter(|m| model.starts_with(&m.prefix))
            .max_by_key(|m| m.prefix.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let r = ModelRegistry::embedded();
        assert_eq!(
            r.resolve("gpt-4o-mini", "gpt-4o").0.encoding,
            Encoding::O200kBase
        );
        assert_eq!(
            r.resolve("gpt-4-0613", "gpt-4o").0.encoding,
            Encoding::Cl100kBase
        );
        assert_eq!(
            r.resolve("gpt-4-turbo-2024", "gpt-4o").0.context_window,
            128_000
        );
        assert_eq!(
            r.resolve("claude-sonnet-4-5", "gpt-4o").0.max_output_tokens,
            64_000
        );
    }

    #[test]
    fn unknown_model_falls_back_and_is_marked() {
        let r = ModelRegistry::embedded();
        let (spec, known) = r.resolve("my-own-model", "gpt-4o");
        assert!(!known);
        assert!(!spec.is_openai());
        assert_eq!(spec.encoding, Encoding::O200kBase);
    }

    #[test]
    fn cache_prices_are_the_model_s_else_its_family_s() {
        let r = ModelRegistry::embedded();
        let prices = |m: &str| r.resolve(m, "gpt-4o").0.cache_prices();
        assert_eq!(
            prices("claude-sonnet-4-5"),
            CachePrices {
                read: 0.1,
                write: 1.25
            }
        );
        assert_eq!(prices("gpt-4o-mini").read, 0.5);
        assert_eq!(prices("gpt-4.1").read, 0.25);
        assert_eq!(prices("gpt-5").read, 0.1);
        assert_eq!(prices("gpt-5").write, 1.0);
        assert_eq!(prices("my-own-model"), CachePrices::NONE);
        let bad = "[[model]]\nprefix='x'\nfamily='a'\nencoding='o200k_base'\ncontext_window=5\nmax_output_tokens=1\ncache_read=0\n";
        assert!(ModelRegistry::parse(bad).is_err());
    }

    #[test]
    fn bad_rows_are_rejected() {
        let bad = "[[model]]\nprefix='x'\nfamily='a'\nencoding='o200k_base'\ncontext_window=0\nmax_output_tokens=1\n";
        assert!(ModelRegistry::parse(bad).is_err());
        let typo = "[[model]]\nprefix='x'\nfamily='a'\nencoding='o200k'\ncontext_window=5\nmax_output_tokens=1\n";
        assert!(ModelRegistry::parse(typo).is_err());
    }
}
