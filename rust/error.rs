//! The one error type of the core; the bindings convert it into Python exceptions in one place.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A value the operation cannot honour (bad threshold, mismatched lengths, ...): `ValueError`.
    InvalidInput(String),
    /// An argument of a type the operation does not take: `TypeError`.
    WrongType(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(msg) | Error::WrongType(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
