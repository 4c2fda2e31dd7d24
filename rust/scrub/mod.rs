//! Credential detection: the pure core of memdedup's scrubber.
//!
//! A rule catalogue kept as data (`python/memdedup/data/secret_rules.toml`, built in with
//! `include_str!`; the pure-Python fallback reads the same file) is compiled once into a [`Detector`]:
//! an Aho-Corasick automaton over every rule's keywords selects the rules whose keywords occur (as
//! gitleaks keys its rules), each selected rule's `regex` (linear-time, bounded repetitions only) finds
//! candidates, code in [`extend`] finds the secret's extent where a regex cannot (a value after a
//! credential-named key, a private key's body), and checks (boundaries, entropy, placeholders) refuse
//! look-alikes. Overlapping findings merge into their union. The Python side keeps the policy: what to
//! write in place of a span (`[REDACTED:KIND]`), what to do with a credential-named property.
//!
//! Spans are byte offsets of the scanned UTF-8 (or WTF-8, for a Python str holding lone surrogates),
//! and [`Detector::to_code_points`] maps them to Python's code-point offsets.

pub mod catalogue;
pub mod extend;
pub mod keys;
pub mod memory;
pub mod scan;
pub mod shapes;
pub mod values;

use std::sync::OnceLock;

pub use catalogue::{ByteSet, Catalogue, Extend, Rule};
pub use keys::{split_words, KeyClass, KeyHit, KeyPolicy};
pub use scan::{entropy, merge, Detector, Finding, Known};
pub use values::ValuePolicy;

/// The bundled catalogue's text.
pub const CATALOGUE: &str = include_str!("../../python/memdedup/data/secret_rules.toml");

/// The detector built from the bundled catalogue, once per process. The catalogue is tested to build;
/// an error here is a broken build, reported to the caller rather than panicking.
pub fn detector() -> Result<&'static Detector, &'static str> {
    static DETECTOR: OnceLock<Result<Detector, String>> = OnceLock::new();
    DETECTOR
        .get_or_init(|| Detector::new(CATALOGUE))
        .as_ref()
        .map_err(String::as_str)
}

#[cfg(test)]
mod tests;
