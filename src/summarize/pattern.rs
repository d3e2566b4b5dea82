//! Regexes compiled once and matched with the calling thread's own state: a
//! `regex::Regex`'s pool is lock-free only for its first thread, CPU work on
//! the blocking pool moves between threads, and that lock cost about a tenth
//! of a heuristic compression.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;

use regex::Regex;

pub struct Pattern {
    source: &'static str,
    compiled: OnceLock<Regex>,
}

thread_local! {
    /// This thread's copies (a copy shares the compiled program and has a
    /// pool of its own), by the address of the pattern they copy.
    static COPIES: RefCell<Vec<(usize, Rc<Regex>)>> = const { RefCell::new(Vec::new()) };
}

impl Pattern {
    pub const fn new(source: &'static str) -> Self {
        Self {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The calling thread's copy.
    pub fn get(&'static self) -> Rc<Regex> {
        let key = std::ptr::from_ref(self) as usize;
        COPIES.with_borrow_mut(|copies| {
            if let Some((_, re)) = copies.iter().find(|(k, _)| *k == key) {
                return re.clone();
            }
            let compiled = self
                .compiled
                .get_or_init(|| Regex::new(self.source).expect("valid regex"));
            let re = Rc::new(compiled.clone());
            copies.push((key, re.clone()));
            re
        })
    }
}
