//! The minimisers of a label, in one pass linear in its length (see [`super::substrings`] for what
//! they are and why no containment candidate is lost).
//!
//! Each window's minimum comes from a monotone queue of the grams' hashes (each hash enters and
//! leaves it once), and the distinct minimisers are kept by a scan of the few found so far, then
//! by a hash set once there are many: O(n) for a label of n elements, whatever the window's width
//! (a large `min_chars` makes a wide window, not a slower pass).
//!
//! Performance notes: a gram's key is a rolled polynomial (one multiply-add a gram, then a
//! mix), not a hash of its elements recomputed at each position (~40 instructions a gram: the
//! pass was 12% of the instructions of bench_index's build at 100,000 labels). The pass it replaced recomputed each window's minimum (O(n x window)) and
//! de-duplicated each new minimiser by a linear scan of those found (O(n^2 / window)): a 2 MB label
//! took ~16 s to insert and x4 per doubling (issue 37); it now takes milliseconds and polls the
//! cancel handle every [`POLL`] grams.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use smallvec::SmallVec;

use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::matcher::IdHasher;
use crate::sym::Sym;
use crate::text::Text;

/// Grams between two cancel polls.
const POLL: usize = 1 << 16;

/// Distinct minimisers kept in a vector (scanned) before a hash set takes over.
const SCAN_MAX: usize = 16;

fn oom<E: std::fmt::Debug>(e: E) -> Error {
    Error::OutOfMemory(format!("cannot allocate: {e:?}"))
}

/// The distinct minimisers of a text's windows (`window` consecutive grams of `gram` elements),
/// in first-seen order, into `out` (cleared). Empty when the text is shorter than one window.
pub fn minimisers(
    text: &Text,
    gram: usize,
    window: usize,
    out: &mut Vec<u64>,
    cancel: &Cancel,
) -> Result<()> {
    out.clear();
    if gram == 0 || window == 0 || text.len() < gram + window - 1 {
        return Ok(());
    }
    match text {
        Text::Narrow(v) => pass(v, gram, window, out, cancel),
        Text::Wide(v) => pass(v, gram, window, out, cancel),
    }
}

fn pass<T: Sym>(
    s: &[T],
    gram: usize,
    window: usize,
    out: &mut Vec<u64>,
    cancel: &Cancel,
) -> Result<()> {
    let grams = s.len() - gram + 1;
    // (position, key), positions ascending and keys strictly ascending: the front is the current
    // window's minimum.
    // A vector and the index of its front (a window of a few grams fits inline; the consumed front
    // is dropped once it is most of the vector, so the vector stays within twice the window).
    let mut queue: SmallVec<[(usize, u64); 32]> = SmallVec::new();
    let mut head = 0usize;
    let mut seen: Option<HashSet<u64, BuildHasherDefault<IdHasher>>> = None;
    let mut last = None;
    // The gram's polynomial, rolled: one multiply-add a gram, whatever its length.
    let top = (1..gram).fold(1u64, |p, _| p.wrapping_mul(BASE));
    let mut poly = s[..gram - 1]
        .iter()
        .fold(0u64, |h, c| h.wrapping_mul(BASE).wrapping_add(element(*c)));
    for i in 0..grams {
        if i % POLL == POLL - 1 {
            cancel.check()?;
        }
        poly = poly
            .wrapping_mul(BASE)
            .wrapping_add(element(s[i + gram - 1]));
        let h = mix(poly);
        poly = poly.wrapping_sub(element(s[i]).wrapping_mul(top));
        while queue.len() > head && queue[queue.len() - 1].1 >= h {
            queue.pop();
        }
        if head > 32 && head * 2 > queue.len() {
            queue.drain(..head);
            head = 0;
        }
        queue.try_reserve(1).map_err(oom)?;
        queue.push((i, h));
        if queue[head].0 + window <= i {
            head += 1;
        }
        if i + 1 < window {
            continue;
        }
        let m = queue[head].1;
        if last == Some(m) {
            continue;
        }
        last = Some(m);
        let new = match &mut seen {
            Some(set) => {
                set.try_reserve(1).map_err(oom)?;
                set.insert(m)
            }
            None => !out.contains(&m),
        };
        if !new {
            continue;
        }
        out.try_reserve(1).map_err(oom)?;
        out.push(m);
        if seen.is_none() && out.len() > SCAN_MAX {
            let mut set = HashSet::default();
            set.try_reserve(out.len() * 2).map_err(oom)?;
            set.extend(out.iter().copied());
            seen = Some(set);
        }
    }
    Ok(())
}

/// The multiplier of the grams' polynomial (odd: multiplying by it is a bijection mod 2^64).
const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

/// An element as the polynomial reads it: its code point, so a narrow and a wide text key alike.
#[inline]
fn element<T: Sym>(c: T) -> u64 {
    c.code() as u64 + 1
}

/// A gram's key: its polynomial `Σ (c_k + 1) BASE^(g-1-k)` mixed (the splitmix64 finaliser, a
/// bijection), so that the least key of a window is any of its grams alike. A function of the
/// gram's elements only, which is all the lists' proof needs.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The definition, window by window (quadratic: small inputs only).
    fn by_definition(text: &Text, gram: usize, window: usize) -> Vec<u64> {
        let cps = text.codepoints();
        let mut out = Vec::new();
        if gram == 0 || window == 0 || cps.len() < gram + window - 1 {
            return out;
        }
        let hashes: Vec<u64> = cps
            .windows(gram)
            .map(|g| {
                mix(g.iter().fold(0u64, |h, &c| {
                    h.wrapping_mul(BASE).wrapping_add(c as u64 + 1)
                }))
            })
            .collect();
        for win in hashes.windows(window) {
            let m = *win.iter().min().unwrap();
            if !out.contains(&m) {
                out.push(m);
            }
        }
        out
    }

    #[test]
    fn the_pass_equals_the_definition() {
        let mut rng = Rng(0x51_7c_c1_b7);
        for _ in 0..3000 {
            let n = rng.below(140);
            let alphabet: &[u32] =
                [&[0x61u32, 0x62][..], &[0x61, 0x62, 0x20, 0x436, 0]][rng.below(2)];
            let cps: Vec<u32> = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let text = Text::from_codepoints(&cps).unwrap();
            let (gram, window) = (1 + rng.below(8), 1 + rng.below(40));
            let mut got = Vec::new();
            minimisers(&text, gram, window, &mut got, &Cancel::never()).unwrap();
            assert_eq!(
                got,
                by_definition(&text, gram, window),
                "{cps:?} {gram} {window}"
            );
        }
    }

    /// Linear: a long label with many distinct minimisers and a wide window costs one queue push
    /// and pop a gram, counted here as the set's size never exceeding the grams.
    #[test]
    fn long_labels_and_wide_windows_are_handled() {
        let mut rng = Rng(99);
        let cps: Vec<u32> = (0..200_000).map(|_| 0x61 + rng.below(26) as u32).collect();
        let text = Text::from_codepoints(&cps).unwrap();
        let mut out = Vec::new();
        minimisers(&text, 8, 9, &mut out, &Cancel::never()).unwrap();
        assert!(out.len() > 10_000, "{}", out.len());
        minimisers(&text, 8, 100_000, &mut out, &Cancel::never()).unwrap();
        assert!(!out.is_empty() && out.len() < 1_000, "{}", out.len());
        // A cancelled handle stops the pass.
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(matches!(
            minimisers(&text, 8, 9, &mut out, &cancel),
            Err(Error::Interrupted)
        ));
    }
}
