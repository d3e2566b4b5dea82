//! HTTP-level tests of condense, run in-process against the real router.

mod bad_input;
mod cache_e2e;
mod common;
mod compress;
mod compress_props;
mod designs;
mod designs_compress;
mod golden;
mod hostile;
mod iterations;
// Not every live part is needed here (the browser is tests/playground.rs's).
#[allow(dead_code)]
#[path = "../support/live.rs"]
mod live;
mod llm_e2e;
mod playground;
mod properties;
mod stub;
mod tokens;
mod upstream;
mod verdict;
