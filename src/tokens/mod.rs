//! Token counting: encodings, the model registry, and thread counts.

pub mod cancel;
mod count;
mod encoding;
mod long;
mod memo;
mod merge;
mod pieces;
#[doc(hidden)]
pub mod probe;
mod regex_split;
mod registry;
mod resident;
mod spec;
mod split;

pub use count::{
    Counter, MESSAGE_OVERHEAD, MessageCount, Method, NAME_OVERHEAD, REPLY_PRIMING, ThreadCount,
    approximations,
};
pub use encoding::{Encoders, Encoding};
pub use memo::{Counted, Memo, Memoized};
pub use pieces::tokenized_bytes;
pub use registry::{CachePrices, ModelRegistry, ModelSpec};
pub use spec::CountSpec;
