//! Who may call condense and how often: API keys ([`keys`]), a per-caller
//! rate limit ([`rate`]), browser origins ([`cors`]) and host names
//! ([`hosts`]). `http::guard` decides which request passes which gate. Keys
//! live only as digests; nothing here logs, prints or returns one.

pub mod cors;
pub mod hosts;
pub mod keys;
pub mod rate;
mod reload;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::Context;
use sha2::{Digest, Sha256};

pub use cors::Cors;
pub use hosts::{Hosts, origin_allowed};
pub use keys::{Caller, KeyError, KeySet};
pub use rate::{Bucket, RateLimiter, Verdict};

use crate::upstream::Secret;

/// What [`Access`] is built from (the access settings of `Config`).
#[derive(Debug, Clone, Default)]
pub struct AccessConfig {
    /// `CONDENSE_API_KEYS`.
    pub keys: Vec<Secret>,
    /// `CONDENSE_API_KEYS_FILE`, reloaded when it changes.
    pub file: Option<PathBuf>,
    pub reload_every: Duration,
}

/// The keys in force; none: access control is off ([`Caller::OPEN`]).
pub struct Access {
    /// Keys from the environment.
    inline: KeySet,
    file: Option<PathBuf>,
    reload_every: Duration,
    /// The environment's keys and the file's, as last loaded.
    current: RwLock<Arc<KeySet>>,
    /// So an unchanged file is not parsed again, nor a bad one logged each poll.
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    loaded: Option<[u8; 32]>,
    refused: Option<[u8; 32]>,
}

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// The file holds what was loaded last.
    Unchanged,
    /// New keys are in force: this many in all.
    Loaded(usize),
    /// The file could not be read or holds a bad line: the keys in force stay.
    Refused,
}

impl Access {
    /// Reads the keys; a bad keys file stops the start.
    pub fn new(config: AccessConfig) -> anyhow::Result<Self> {
        let inline = KeySet::from_entries(config.keys.iter().map(Secret::expose))?;
        let mut seen = Seen::default();
        let mut current = inline.clone();
        if let Some(path) = &config.file {
            let bytes = std::fs::read(path)
                .with_context(|| format!("reading the API keys file {}", path.display()))?;
            current = current.union(&parse_file(&bytes)?)?;
            seen.loaded = Some(Sha256::digest(&bytes).into());
        }
        Ok(Self {
            inline,
            file: config.file,
            reload_every: config.reload_every,
            current: RwLock::new(Arc::new(current)),
            seen: Mutex::new(seen),
        })
    }

    /// No keys: access control is off.
    pub fn open() -> Self {
        Self::new(AccessConfig::default()).expect("no keys, nothing to refuse")
    }

    /// Keys are required: some are configured, or a keys file is (an empty
    /// file admits no one rather than everyone).
    pub fn enabled(&self) -> bool {
        self.file.is_some() || !self.inline.is_empty()
    }

    /// The caller `presented` stands for, if it is a key in force.
    pub fn find(&self, presented: &str) -> Option<Caller> {
        self.keys().find(presented)
    }

    fn keys(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Puts the keys file's keys in force if it changed and is valid; logs what happened.
    pub fn reload(&self) -> Reload {
        let Some(path) = &self.file else {
            return Reload::Unchanged;
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "the API keys file could not be read; the keys in force stay");
                return Reload::Refused;
            }
        };
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.loaded == Some(digest) {
            return Reload::Unchanged;
        }
        if seen.refused == Some(digest) {
            return Reload::Refused;
        }
        match parse_file(&bytes).and_then(|file_keys| self.inline.clone().union(&file_keys)) {
            Ok(keys) => {
                let n = keys.len();
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
                seen.loaded = Some(digest);
                seen.refused = None;
                tracing::info!(path = %path.display(), keys = n, "API keys reloaded");
                Reload::Loaded(n)
            }
            Err(e) => {
                seen.refused = Some(digest);
                tracing::warn!(path = %path.display(), error = %e, "the API keys file was not reloaded; the keys in force stay");
                Reload::Refused
            }
        }
    }

    /// Watches the keys file (if any): every `reload_every` and on SIGHUP.
    pub fn watch(self: &Arc<Self>) {
        if self.file.is_some() {
            let access = self.clone();
            reload::spawn(self.reload_every, move || {
                access.reload();
            });
        }
    }

    /// The warning of an open relay: without keys, any caller can spend the
    /// operator's upstream LLM or provider key.
    pub fn warn_if_open(&self, upstream: bool, proxy_key: bool) {
        if self.enabled() || !(upstream || proxy_key) {
            return;
        }
        let what = match (upstream, proxy_key) {
            (true, true) => "an upstream LLM and a provider API key are",
            (true, false) => "an upstream LLM is",
            _ => "a provider API key is",
        };
        tracing::warn!(
            "{what} configured and no API keys are: any caller that reaches condense can use them with the operator's credentials; set CONDENSE_API_KEYS or CONDENSE_API_KEYS_FILE"
        );
    }
}

fn parse_file(bytes: &[u8]) -> Result<KeySet, KeyError> {
    let text = std::str::from_utf8(bytes).map_err(|e| KeyError {
        source_name: "CONDENSE_API_KEYS_FILE",
        place: format!("byte {}", e.valid_up_to()),
        what: "the file is not UTF-8".into(),
    })?;
    KeySet::from_file_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "key-aaaaaaaaaaaaaaaa";
    const B: &str = "key-bbbbbbbbbbbbbbbb";

    impl Access {
        /// How many keys are in force.
        fn len(&self) -> usize {
            self.keys().len()
        }
    }

    fn with_file(text: &str) -> (Access, tempfile_path::Path) {
        let path = tempfile_path::Path::new(text);
        let access = Access::new(AccessConfig {
            keys: vec![Secret::new(A)],
            file: Some(path.0.clone()),
            reload_every: Duration::from_secs(3600),
        })
        .unwrap();
        (access, path)
    }

    /// A file removed when the test ends (no tempfile crate in the library).
    mod tempfile_path {
        pub struct Path(pub std::path::PathBuf);
        impl Path {
            pub fn new(text: &str) -> Self {
                let p = std::env::temp_dir().join(format!(
                    "condense-keys-{}-{}",
                    std::process::id(),
                    uuid::Uuid::new_v4().simple()
                ));
                std::fs::write(&p, text).unwrap();
                Self(p)
            }
        }
        impl Drop for Path {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn a_changed_file_is_reloaded_and_a_bad_one_refused() {
        let (access, file) = with_file(&format!("{B} llm\n"));
        assert!(access.enabled());
        assert_eq!(access.len(), 2);
        assert!(access.find(B).unwrap().llm);
        assert_eq!(access.reload(), Reload::Unchanged);

        std::fs::write(&file.0, "# nobody from the file\n").unwrap();
        assert_eq!(access.reload(), Reload::Loaded(1));
        assert!(access.find(B).is_none());
        assert!(access.find(A).is_some(), "the environment's key stays");

        std::fs::write(&file.0, format!("{B}\ntoo-short\n")).unwrap();
        assert_eq!(access.reload(), Reload::Refused);
        assert!(access.find(B).is_none(), "a bad file changes nothing");
        assert_eq!(access.reload(), Reload::Refused);

        std::fs::remove_file(&file.0).unwrap();
        assert_eq!(access.reload(), Reload::Refused);
        assert!(access.find(A).is_some());
    }

    #[test]
    fn an_empty_file_still_means_keys_are_required() {
        let (access, _file) = with_file("");
        assert!(access.enabled());
        assert!(!Access::open().enabled());
        assert!(Access::open().find(A).is_none());
    }

    #[test]
    fn a_bad_file_stops_the_start_without_showing_its_text() {
        let file = tempfile_path::Path::new("short-secret\n");
        let err = Access::new(AccessConfig {
            file: Some(file.0.clone()),
            ..Default::default()
        })
        .err()
        .unwrap();
        let text = format!("{err:#}");
        assert!(text.contains("line 1"), "{text}");
        assert!(!text.contains("short-secret"), "{text}");
    }
}
