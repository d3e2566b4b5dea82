//! Token counting: encodings, the model registry, and thread counts.

mod count;
mod encoding;
mod registry;
mod spec;

pub use count::{
    Counter, MESSAGE_OVERHEAD, MessageCount, Method, NAME_OVERHEAD, REPLY_PRIMING, ThreadCount,
    approximations,
};
pub use encoding::{Encoders, Encoding, tokenized_bytes};
pub use registry::{ModelRegistry, ModelSpec, Resolved};
pub use spec::CountSpec;
