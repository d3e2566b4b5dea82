//! Input hardening, apart from the thread model it guards: limits on what a
//! request body may hold (checked before and after parsing) and bounds on
//! what an error answer quotes back. Hostile input costs linear time and
//! bounded memory here, whatever its shape.

mod echo;
mod limits;

pub use echo::{Bounded, MAX_ECHO_CHARS, MAX_ERRORS, cap, clip_quoted, echo};
pub use limits::{Limits, MAX_JSON_NODES, MAX_JSON_VALUES, OverLimit, json_shape, too_many_nodes};
