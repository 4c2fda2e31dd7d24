//! `str.lower()` of code points above 255, exact for the running interpreter: each code point's
//! lower-casing is asked of the caller once (the bindings ask Python) and kept per thread.
//!
//! CPython lower-cases a str one code point at a time (`_PyUnicode_ToLowerFull`, from its Unicode
//! database) except U+03A3, which it maps by context (the final-sigma rule). So a text without
//! U+03A3 is lower-cased exactly by mapping each code point as Python maps it alone; those below
//! 256 take [`crate::normalise::LOWER_LATIN1`] (checked against Python for all 256 by a test).
//!
//! Performance notes: `lower()` through Python, with the second pass over its result, took about
//! a third of a `labels_match` call's instructions on prefix-sharing label pairs, though only one
//! label in twenty has a code point above 127 (callgrind, bench_instructions.py).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::matcher::IdHasher;
use crate::normalise::LOWER_LATIN1;

/// GREEK CAPITAL LETTER SIGMA: the one code point whose `str.lower()` depends on its neighbours.
pub const CAPITAL_SIGMA: u32 = 0x3A3;

/// At most this many code points' lower-casings are kept per thread; past it, texts with a code
/// point not yet kept are lower-cased by the caller whole.
pub const CACHE_MAX: usize = 1 << 16;

/// A code point's `str.lower()`: at most three code points in every Unicode version so far.
pub type Lowered = ([u32; 3], u8);

thread_local! {
    static CACHE: RefCell<HashMap<u32, Lowered, BuildHasherDefault<IdHasher>>> = RefCell::default();
}

/// `str.lower()` of `cps` into `out` (replaced), asking `lower_one` for a code point above 255 not
/// asked before on this thread (None: its lower-casing is longer than [`Lowered`] holds). False
/// (`out` undefined) when only the caller's own `lower` of the whole text is exact: the text holds
/// U+03A3, a code point's lower-casing does not fit, or the cache is full.
pub fn lower_wide<E: From<crate::Error>>(
    cps: &[u32],
    out: &mut Vec<u32>,
    mut lower_one: impl FnMut(u32) -> Result<Option<Lowered>, E>,
) -> Result<bool, E> {
    if cps.contains(&CAPITAL_SIGMA) {
        return Ok(false);
    }
    out.clear();
    // Reserved fallibly: a code point's lower-casing can be longer than it (`İ`), so each longer
    // one reserves again below.
    crate::alloc::reserve(out, cps.len())?;
    let mut rest = cps;
    loop {
        // A run below 256 in one mapping pass, then the code point that ends it.
        let narrow = rest.iter().position(|&c| c >= 256).unwrap_or(rest.len());
        out.extend(
            rest[..narrow]
                .iter()
                .map(|&c| LOWER_LATIN1[c as usize & 0xFF] as u32),
        );
        let Some(&c) = rest.get(narrow) else {
            return Ok(true);
        };
        rest = &rest[narrow + 1..];
        let cached = CACHE.with(|cache| cache.borrow().get(&c).copied());
        let (mapped, len) = match cached {
            Some(lowered) => lowered,
            None => {
                // Not borrowed while the caller runs (it may call back into here).
                let Some(lowered) = lower_one(c)? else {
                    return Ok(false);
                };
                let kept = CACHE.with(|cache| {
                    let mut cache = cache.borrow_mut();
                    (cache.len() < CACHE_MAX)
                        .then(|| cache.insert(c, lowered))
                        .is_some()
                });
                if !kept {
                    return Ok(false);
                }
                lowered
            }
        };
        if len > 1 {
            crate::alloc::reserve(out, len as usize + rest.len())?;
        }
        out.extend_from_slice(&mapped[..len as usize]);
    }
}

/// A code point's lower-casing as [`lower_wide`] keeps it, from its code points (None when there
/// are more than three).
pub fn lowered_of(cps: &[u32]) -> Option<Lowered> {
    if cps.len() > 3 {
        return None;
    }
    let mut mapped = [0; 3];
    mapped[..cps.len()].copy_from_slice(cps);
    Some((mapped, cps.len() as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rust's own lower-casing of one code point, standing in for Python's here.
    fn rust_lower(c: u32) -> Result<Option<Lowered>, crate::Error> {
        let cps: Vec<u32> = char::from_u32(c)
            .map(|ch| ch.to_lowercase().map(|l| l as u32).collect())
            .unwrap_or_else(|| vec![c]);
        Ok(lowered_of(&cps))
    }

    #[test]
    fn maps_each_code_point_as_asked_and_refuses_sigma() {
        let mut text: Vec<u32> = "ÀbcΔÉİ\u{10400}".chars().map(|c| c as u32).collect();
        text.push(0xD800); // a lone surrogate: Python's str holds them, Rust's cannot
        let mut out = Vec::new();
        let mut asked = Vec::new();
        let ok = lower_wide(&text, &mut out, |c| {
            asked.push(c);
            rust_lower(c)
        });
        assert_eq!(ok, Ok(true));
        let want: Vec<u32> = "àbcδéi\u{307}\u{10428}"
            .chars()
            .map(|c| c as u32)
            .chain([0xD800])
            .collect();
        assert_eq!(out, want);
        assert_eq!(asked, vec![0x394, 0x130, 0x10400, 0xD800]);
        // Asked once per thread.
        asked.clear();
        assert_eq!(
            lower_wide(&text, &mut out, |c| {
                asked.push(c);
                rust_lower(c)
            }),
            Ok(true)
        );
        assert!(asked.is_empty());
        let sigma = [0x41, CAPITAL_SIGMA];
        assert_eq!(lower_wide(&sigma, &mut out, rust_lower), Ok(false));
        assert_eq!(
            lower_wide(&[0x1F600], &mut out, |_| Ok::<_, crate::Error>(None)),
            Ok(false)
        );
        assert_eq!(
            lower_wide(&[0x1F601], &mut out, |_| Err(crate::Error::Interrupted)),
            Err(crate::Error::Interrupted)
        );
    }
}
