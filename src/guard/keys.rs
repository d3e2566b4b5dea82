//! API keys: how they are written down, and how a presented one is found. A
//! key is stored only as its SHA-256 digest and compared with every digest in
//! constant time (`subtle`), so timing tells neither how much of a key was
//! right nor which key matched.
//!
//! An entry is a key and its permissions ([`LLM`], [`PROVIDER`]): `KEY llm`,
//! comma-separated in `CONDENSE_API_KEYS`, one per line in the keys file (`#`
//! comments). Errors name the line, never its text: a wrong line may still
//! hold a key.

use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

/// Shortest key accepted: 16 characters of a random key are ~96 bits.
pub const MIN_KEY_CHARS: usize = 16;
/// Longest key accepted (a header, not a document).
pub const MAX_KEY_CHARS: usize = 512;
/// The permission word that lets a key use the upstream LLM.
pub const LLM: &str = "llm";
/// The permission word that lets a key spend the operator's provider key.
pub const PROVIDER: &str = "provider";

/// Who is calling, once admitted (never the key itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The first 8 bytes of the key's SHA-256: its rate-limit bucket.
    pub key: Option<u64>,
    pub llm: bool,
    pub provider: bool,
}

impl Caller {
    /// Without keys configured: anyone, with every permission.
    pub const OPEN: Caller = Caller {
        key: None,
        llm: true,
        provider: true,
    };

    /// An unkeyed caller on an open route while keys are on.
    pub const ANONYMOUS: Caller = Caller {
        key: None,
        llm: false,
        provider: false,
    };
}

#[derive(Clone)]
struct Entry {
    digest: [u8; 32],
    llm: bool,
    provider: bool,
    /// Its place in its list (`entry 2`, `line 7`), to name a repeat.
    place: String,
}

/// A key listed twice would hold the permissions of either, which no
/// single line says: refused, naming where.
const LISTED_TWICE: &str = "the same key is listed";

/// A set of keys. Debug shows only how many.
#[derive(Clone, Default)]
pub struct KeySet {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeySet({} keys)", self.entries.len())
    }
}

/// Why a list of keys was refused: where, and what is wrong, without the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name} {place}: {what}")]
pub struct KeyError {
    /// `CONDENSE_API_KEYS` or `CONDENSE_API_KEYS_FILE`.
    pub source_name: &'static str,
    /// `entry 2` or `line 7`.
    pub place: String,
    pub what: String,
}

impl KeySet {
    /// The entries of `CONDENSE_API_KEYS` (already split at commas).
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, KeyError> {
        Self::parse(entries, "CONDENSE_API_KEYS", "entry")
    }

    /// The text of a keys file.
    pub fn from_file_text(text: &str) -> Result<Self, KeyError> {
        let lines = text
            .lines()
            .map(|l| if l.trim().starts_with('#') { "" } else { l });
        Self::parse(lines, "CONDENSE_API_KEYS_FILE", "line")
    }

    fn parse<'a>(
        entries: impl IntoIterator<Item = &'a str>,
        source_name: &'static str,
        unit: &str,
    ) -> Result<Self, KeyError> {
        let mut set = KeySet::default();
        for (i, entry) in entries.into_iter().enumerate() {
            if !entry.trim().is_empty() {
                let place = format!("{unit} {}", i + 1);
                set.push(entry, &place).map_err(|what| KeyError {
                    source_name,
                    place,
                    what,
                })?;
            }
        }
        Ok(set)
    }

    fn push(&mut self, entry: &str, place: &str) -> Result<(), String> {
        let mut words = entry.split_whitespace();
        let key = words.next().unwrap_or_default();
        let chars = key.chars().count();
        if chars < MIN_KEY_CHARS {
            return Err(format!(
                "a key must have at least {MIN_KEY_CHARS} characters (this one has {chars}); make one with `openssl rand -hex 24`"
            ));
        }
        if chars > MAX_KEY_CHARS {
            return Err(format!(
                "a key must have at most {MAX_KEY_CHARS} characters"
            ));
        }
        if !key.bytes().all(|b| b.is_ascii_graphic() && b != b',') {
            return Err("a key must be printable ASCII without commas".into());
        }
        let (mut llm, mut provider) = (false, false);
        for word in words {
            match word {
                LLM => llm = true,
                PROVIDER => provider = true,
                // Not echoed: it may be a second key written on the same line.
                _ => {
                    return Err(format!(
                        "after the key, only the permissions `{LLM}` and `{PROVIDER}` may follow"
                    ));
                }
            }
        }
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if let Some(first) = self.entries.iter().find(|e| e.digest == digest) {
            return Err(format!(
                "{LISTED_TWICE} at {}: list a key once, with all its permissions",
                first.place
            ));
        }
        self.entries.push(Entry {
            digest,
            llm,
            provider,
            place: place.to_owned(),
        });
        Ok(())
    }

    /// The environment's keys and the keys file's (`other`); a key in both
    /// is refused, at its line of the file.
    pub fn union(mut self, other: &KeySet) -> Result<Self, KeyError> {
        for e in &other.entries {
            if self.entries.iter().any(|mine| mine.digest == e.digest) {
                return Err(KeyError {
                    source_name: "CONDENSE_API_KEYS_FILE",
                    place: e.place.clone(),
                    what: format!(
                        "{LISTED_TWICE} in CONDENSE_API_KEYS: list a key once, with all its permissions"
                    ),
                });
            }
        }
        self.entries.extend(other.entries.iter().cloned());
        Ok(self)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller a presented key stands for, if it is one of the set.
    /// Every entry is compared, in constant time, whatever matches.
    pub fn find(&self, presented: &str) -> Option<Caller> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = Choice::from(0);
        let mut llm = Choice::from(0);
        let mut provider = Choice::from(0);
        for e in &self.entries {
            let same = e.digest.ct_eq(&digest);
            found |= same;
            llm |= same & Choice::from(u8::from(e.llm));
            provider |= same & Choice::from(u8::from(e.provider));
        }
        bool::from(found).then(|| Caller {
            key: Some(u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))),
            llm: bool::from(llm),
            provider: bool::from(provider),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "key-aaaaaaaaaaaaaaaa";
    const B: &str = "key-bbbbbbbbbbbbbbbb";

    #[test]
    fn finds_keys_and_their_permissions() {
        const C: &str = "key-cccccccccccccccc";
        const D: &str = "key-dddddddddddddddd";
        let set = KeySet::from_file_text(&format!(
            "# comment\n\n  {A}  \n{B} llm\n{C} provider\n{D} provider   llm\n"
        ))
        .unwrap();
        assert_eq!(set.len(), 4);
        let perms = |k| set.find(k).map(|c| (c.llm, c.provider));
        assert_eq!(perms(A), Some((false, false)));
        assert_eq!(perms(B), Some((true, false)));
        assert_eq!(perms(C), Some((false, true)));
        assert_eq!(perms(D), Some((true, true)));
        assert_ne!(set.find(A).unwrap().key, set.find(B).unwrap().key);
        assert_eq!(set.find("key-eeeeeeeeeeeeeeee"), None);
        // A prefix, or the key with more after it, is another key.
        assert_eq!(set.find(&A[..A.len() - 1]), None);
        assert_eq!(set.find(&format!("{A}x")), None);
        assert_eq!(set.find(""), None);
    }

    #[test]
    fn a_key_listed_twice_is_refused_where_it_repeats() {
        let e = KeySet::from_entries([A, B, &format!("{A} llm")]).unwrap_err();
        assert_eq!(e.place, "entry 3");
        assert!(e.what.contains("listed at entry 1"), "{e}");
        let e = KeySet::from_entries([A])
            .unwrap()
            .union(&KeySet::from_file_text(&format!("{B}\n{A} llm")).unwrap())
            .unwrap_err();
        assert_eq!(
            (e.source_name, e.place.as_str()),
            ("CONDENSE_API_KEYS_FILE", "line 2")
        );
        assert!(!e.to_string().contains(A), "{e}");
        let both = KeySet::from_entries([A])
            .unwrap()
            .union(&KeySet::from_entries([B]).unwrap());
        assert_eq!(both.unwrap().len(), 2);
    }

    #[test]
    fn errors_name_the_place_but_never_the_text() {
        let e = KeySet::from_file_text(&format!("{A}\n\nshort-secret\n")).unwrap_err();
        assert_eq!(e.place, "line 3");
        assert!(!e.to_string().contains("short-secret"), "{e}");
        let e = KeySet::from_file_text(&format!("{A} {B}")).unwrap_err();
        assert!(!e.to_string().contains(B), "{e}");
        assert!(
            e.to_string()
                .contains("only the permissions `llm` and `provider`"),
            "{e}"
        );
        assert!(KeySet::from_entries([&format!("{A} proxy")[..]]).is_err());
        let e = KeySet::from_entries([A, "", "tiny"]).unwrap_err();
        assert_eq!(
            (e.source_name, e.place.as_str()),
            ("CONDENSE_API_KEYS", "entry 3")
        );
        assert!(KeySet::from_entries(["key-with,comma-aaaaaaa"]).is_err());
        assert!(KeySet::from_entries([&"k".repeat(MAX_KEY_CHARS + 1)[..]]).is_err());
    }

    #[test]
    fn debug_shows_no_digest() {
        let set = KeySet::from_entries([A]).unwrap();
        assert_eq!(format!("{set:?}"), "KeySet(1 keys)");
    }
}
