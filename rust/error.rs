//! The one error type of the core; the bindings convert it into Python exceptions in one place
//! (`python/error.rs`).

use std::collections::TryReserveError;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A value the operation cannot honour (bad threshold, mismatched lengths, an absurd size):
    /// `memdedup.errors.InvalidInputError`.
    InvalidInput(String),
    /// An argument of a type the operation does not take: `memdedup.errors.InputTypeError`.
    WrongType(String),
    /// An allocation the operation needs failed, or its size overflows: `MemoryError`. Sizes are
    /// checked before allocating, so running out of memory is an error, never an abort.
    OutOfMemory(String),
    /// The caller's [`crate::cancel::Cancel`] was cancelled (Ctrl-C in the bindings): whatever was
    /// computed is dropped.
    Interrupted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(msg) | Error::WrongType(msg) | Error::OutOfMemory(msg) => {
                f.write_str(msg)
            }
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

impl From<TryReserveError> for Error {
    fn from(err: TryReserveError) -> Self {
        Error::OutOfMemory(format!("cannot allocate: {err}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;
