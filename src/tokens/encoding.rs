//! The BPE encodings, built once: `bpe-openai`'s tables (linear where
//! tiktoken is quadratic) and our own rank table and merge
//! ([`merge`](super::merge)) for o200k/cl100k, `tiktoken-rs` for the
//! legacy p50k/r50k.
//! Special-token text such as `<|endoftext|>` counts as ordinary text.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::Memo;

/// A tiktoken encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
    P50kBase,
    R50kBase,
}

impl Encoding {
    pub const ALL: [Encoding; 4] = [
        Encoding::O200kBase,
        Encoding::Cl100kBase,
        Encoding::P50kBase,
        Encoding::R50kBase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::P50kBase => "p50k_base",
            Encoding::R50kBase => "r50k_base",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Encoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown encoding `{}`; expected one of o200k_base, cl100k_base, p50k_base, r50k_base",
                    crate::thread::echo(s)
                )
            })
    }
}

/// The four encoders, loaded eagerly so the first request pays nothing.
pub struct Encoders {
    p50k: tiktoken_rs::CoreBPE,
    r50k: tiktoken_rs::CoreBPE,
    /// Per-message counts and records of recent requests (see [`Memo`]).
    pub memo: Memo<super::Memoized>,
}

static GLOBAL: LazyLock<Encoders> =
    LazyLock::new(|| Encoders::load().expect("the built-in rank tables parse"));

impl Encoders {
    /// The process-wide encoders, built on first use and shared by every `AppState`.
    pub fn global() -> &'static Encoders {
        &GLOBAL
    }

    /// Builds every encoder. Takes a few hundred milliseconds; prefer [`Encoders::global`].
    pub fn load() -> anyhow::Result<Self> {
        // Force the lazily built bpe-openai tables now rather than on the first request.
        bpe_openai::o200k_base().count("warm up");
        bpe_openai::cl100k_base().count("warm up");
        std::sync::LazyLock::force(&super::merge::RANKS);
        let encoders = Self {
            p50k: tiktoken_rs::p50k_base()?,
            r50k: tiktoken_rs::r50k_base()?,
            memo: Memo::default(),
        };
        super::resident::release_build_memory();
        Ok(encoders)
    }

    /// Number of tokens of `text` under `encoding`, special tokens as plain text.
    pub fn count(&self, encoding: Encoding, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match encoding {
            Encoding::O200kBase => super::pieces::count(bpe_openai::o200k_base(), 0, text),
            Encoding::Cl100kBase => super::pieces::count(bpe_openai::cl100k_base(), 1, text),
            // Legacy encodings: one uninterrupted call per string.
            Encoding::P50kBase | Encoding::R50kBase => {
                let bpe = if encoding == Encoding::P50kBase {
                    &self.p50k
                } else {
                    &self.r50k
                };
                let n = bpe.encode_ordinary(text).len();
                super::pieces::tokenized(text.len());
                n
            }
        }
    }
}

impl fmt::Debug for Encoders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoders").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in Encoding::ALL {
            assert_eq!(e.as_str().parse::<Encoding>().unwrap(), e);
        }
        assert!("gpt2".parse::<Encoding>().is_err());
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        let enc = Encoders::load().unwrap();
        for e in Encoding::ALL {
            // `<|endoftext|>` as one special token would count 1; as text it is several.
            assert!(enc.count(e, "<|endoftext|>") > 1, "{e}");
        }
    }
}
