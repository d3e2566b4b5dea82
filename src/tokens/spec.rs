//! From a request's `model`, `encoding` and `method` to a configured counter.

use super::{CachePrices, Counter, Encoders, Encoding, Method, ModelRegistry};

/// Everything decided about how to count, with the warnings the choice carries.
#[derive(Debug, Clone)]
pub struct CountSpec {
    pub model: String,
    pub encoding: Encoding,
    pub method: Method,
    pub calibration: f64,
    /// The cookbook formula is exact for this model/encoding/method.
    pub exact_model: bool,
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// The model's prompt-cache prices (the policy's payback rule).
    pub cache: CachePrices,
    pub warnings: Vec<String>,
}

impl CountSpec {
    pub fn resolve(
        registry: &ModelRegistry,
        default_model: &str,
        model: Option<&str>,
        encoding: Option<Encoding>,
        method: Method,
    ) -> Self {
        let model = model.unwrap_or(default_model).to_string();
        let (spec, known) = registry.resolve(&model, default_model);
        let mut warnings = Vec::new();
        // Warnings quote the model name; the caller wrote it, so only a prefix.
        let shown = crate::thread::echo(&model);
        if !known {
            warnings.push(format!(
                "unknown model `{shown}`: counted with {} as an estimate; add it to the model registry for a better count",
                spec.encoding
            ));
        }
        let chosen = encoding.unwrap_or(spec.encoding);
        if chosen != spec.encoding {
            warnings.push(format!(
                "encoding {chosen} overrides {} for `{shown}`: the count is an estimate",
                spec.encoding
            ));
        }
        // The model's calibration applies only to the registry's encoding.
        let uncalibrated = encoding.is_some() && spec.calibration != 1.0;
        let calibration = if uncalibrated { 1.0 } else { spec.calibration };
        if uncalibrated && method == Method::Bpe {
            warnings.push(format!(
                "`encoding` {chosen} is counted as it is: the x{} calibration of `{shown}` is not applied",
                spec.calibration
            ));
        } else if !spec.is_openai() && known && method == Method::Bpe {
            warnings.push(format!(
                "`{shown}` does not use an OpenAI tokenizer: {chosen} x {calibration} calibration is an estimate",
            ));
        }
        Self {
            exact_model: spec.is_openai() && chosen == spec.encoding && method == Method::Bpe,
            calibration,
            encoding: chosen,
            method,
            context_window: spec.context_window,
            max_output_tokens: spec.max_output_tokens,
            cache: spec.cache_prices(),
            model,
            warnings,
        }
    }

    pub fn counter<'a>(&self, encoders: &'a Encoders) -> Counter<'a> {
        Counter {
            encoders,
            encoding: self.encoding,
            method: self.method,
            calibration: self.calibration,
            exact_model: self.exact_model,
            memoize: true,
        }
    }
}
