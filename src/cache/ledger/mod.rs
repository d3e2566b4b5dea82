//! The ledger: what the provider billed for each proxied turn, kept with
//! the summaries (so every replica reads one ledger, pruned as they are),
//! and what the same turn would have been billed without condense.
//!
//! The turn and its bill (`turn.rs`), the counterfactual model
//! (`counterfactual.rs`: a pure function of the turn and the one before
//! it) and the table that stores both (`table.rs`) are apart: the model is
//! written with the turn, from the turn before it, so a reader needs no
//! more than the rows ([`without_condense`] says how).

mod counterfactual;
mod table;
mod turn;

pub use counterfactual::{Previous, without_condense};
pub use turn::{Bill, Recorded, Turn};
