//! memdedup's core: Python-exact label normalisation and difflib-exact Ratcliff-Obershelp matching.
//!
//! Everything here is pure Rust (`cargo test` needs no Python); `python/`, behind the `python`
//! feature, holds the bindings. Strings are sequences of code points (`u32`), or of bytes (`u8`)
//! when every code point is below 256, never UTF-8: difflib works on Python's code points.
//!
//! Every failure is an [`Error`] (sizes are checked before allocating: out of memory is an error,
//! never an abort), and every loop whose work grows with its input polls a [`Cancel`].

// `!(ratio >= threshold)` is deliberate throughout: it is the contract's comparison negated, so a NaN
// threshold (which the contract never satisfies) takes the "cannot reach" exits, as it must.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod alloc;
pub mod batch;
pub mod bounds;
pub mod cancel;
pub mod close;
pub mod cluster;
pub mod contract;
pub mod elements;
pub mod error;
pub mod histogram;
pub mod index;
pub mod join;
pub mod labels;
pub mod lower;
pub mod matcher;
pub mod normalise;
pub mod scrub;
pub mod simd;
pub mod sym;
#[cfg(test)]
mod test_rng;
pub mod text;

#[cfg(feature = "python")]
mod python;

/// The extension allocates a small buffer per label in its batch paths; glibc's allocator spent
/// ~10% of a million-label replay in malloc/free (perf), mimalloc (as pydantic-core ships) less.
#[cfg(feature = "python")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use cancel::Cancel;
pub use contract::{Decision, MatchParams, Reason};
pub use error::{Error, Result};
pub use matcher::{BSide, Matcher};
pub use sym::Sym;
pub use text::{Query, Text};
