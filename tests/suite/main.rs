//! The integration suite: one test binary, so the crate and its
//! dependencies (sqlx, reqwest, axum) are linked once, not once per file.
//! Each module is one concern; `support` holds what they share (the live
//! parts, a server on a free port, the binary as a process, a stub
//! upstream, a relay, a Prometheus reader).
//!
//! The tests that need a process to themselves (a per-process byte
//! counter, a global log subscriber) are the other binary, `tests/solo/`.
//!
//! Run one part with a filter: `cargo test --test suite cache::`.

mod agents;
mod api;
mod cache;
mod cold_cache;
mod config;
mod connections;
mod container;
mod continuity;
mod deploy;
mod docs;
mod edge;
mod layers;
mod llm;
mod memory;
mod openapi;
mod playground;
mod precompute;
mod provider_count;
mod proxy;
mod proxy_bill;
mod proxy_compact;
mod proxy_ledger;
mod proxy_sdk;
mod readiness;
mod recall;
mod replicas;
mod schemathesis;
mod single_flight;
mod sqlite_damage;
mod summary_header;
mod summary_key;
mod support;
mod tls;
mod uploads;
