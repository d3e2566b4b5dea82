//! HTTP-level tests of condense, run in-process against the real router.

mod access;
mod bad_input;
mod binding;
mod blocks;
mod browsers;
mod cache_e2e;
mod clear_model;
mod clear_props;
mod clearing;
mod common;
mod compress;
mod compress_props;
mod designs;
mod designs_compress;
mod designs_iterations;
mod fidelity;
mod fidelity_llm;
mod golden;
mod hostile;
mod instructions;
mod iterations;
mod limits;
// Not every live part is needed here (the browser is tests/playground.rs's).
#[allow(dead_code)]
#[path = "../support/live.rs"]
mod live;
mod llm_e2e;
mod metrics;
mod playground;
#[path = "../support/prometheus.rs"]
mod prometheus;
mod properties;
mod responses;
mod stub;
mod thinking_props;
mod thinking_turns;
mod tokens;
mod upstream;
mod verdict;
