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
}

fn one() -> f64 {
    1.0
}

impl ModelSpec {
    /// Whether the OpenAI cookbook formula describes this model's chat format.
    pub fn is_openai(&self) -> bool {
        self.family == "openai"
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
        });
        // An unknown model is never "openai": its count can only be an estimate.
        spec.family = "unknown".into();
        spec.calibration = 1.0;
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
    fn bad_rows_are_rejected() {
        let bad = "[[model]]\nprefix='x'\nfamily='a'\nencoding='o200k_base'\ncontext_window=0\nmax_output_tokens=1\n";
        assert!(ModelRegistry::parse(bad).is_err());
        let typo = "[[model]]\nprefix='x'\nfamily='a'\nencoding='o200k'\ncontext_window=5\nmax_output_tokens=1\n";
        assert!(ModelRegistry::parse(typo).is_err());
    }
}
