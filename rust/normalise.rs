//! Python-exact label normalisation: `" ".join(s.lower().split()).rstrip(".!?;:,")`.
//!
//! Lower-casing is exact here only below 256 (`lower_latin1`; Python's and Unicode's full case
//! mappings, final sigma and `İ` included, depend on the interpreter's Unicode database); for wider
//! text the bindings take each code point's lower-casing from Python (`lower_wide` in the bindings)
//! or hand the whole string to `str.lower()`, and run the split/join/strip below on the result,
//! which is exact for every string because Python's whitespace set is fixed (`is_py_whitespace`).

use crate::alloc;
use crate::error::Result;

/// Characters `str.rstrip(".!?;:,")` removes.
pub const TERMINAL_PUNCTUATION: [u32; 6] = [
    '.' as u32, '!' as u32, '?' as u32, ';' as u32, ':' as u32, ',' as u32,
];

/// Python's `str.isspace()` for one code point, which is what `str.split()` splits on: the ASCII
/// whitespace plus the information separators `\x1c`-`\x1f`, `\x85`, and the Zs/B/S code points.
#[inline]
pub fn is_py_whitespace(c: u32) -> bool {
    matches!(
        c,
        0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000
    )
}

#[inline]
fn is_terminal_punctuation(c: u32) -> bool {
    TERMINAL_PUNCTUATION.contains(&c)
}

/// Split on Python whitespace, join with one space, strip terminal punctuation; `out` is replaced.
/// The input must already be lower-cased the way Python lower-cases it. (`out` never holds more
/// than the input: reserved fallibly up front, so nothing after can fail.)
pub fn collapse_lowered<T: Copy + Into<u32> + From<u8>>(
    lowered: &[T],
    out: &mut Vec<T>,
) -> Result<()> {
    out.clear();
    alloc::reserve(out, lowered.len())?;
    if is_collapsed(lowered) {
        // Already split and joined (most labels): only the strip below is left.
        out.extend_from_slice(lowered);
    } else {
        split_and_join(lowered, out);
    }
    while let Some(&last) = out.last() {
        if is_terminal_punctuation(last.into()) {
            out.pop();
        } else {
            break;
        }
    }
    Ok(())
}

/// Whether `s` has no Python whitespace but single spaces between words (none at either end).
///
/// Performance notes: every test is an or over the whole text, with no early exit and no table,
/// so it vectorises; the word-by-word loop of `split_and_join` took ~20 instructions a code point
/// on wide labels (callgrind, bench_core's sample pairs with a non-ASCII label).
fn is_collapsed<T: Copy + Into<u32>>(s: &[T]) -> bool {
    let (Some(&first), Some(&last)) = (s.first(), s.last()) else {
        return true;
    };
    let other_space = s.iter().fold(false, |acc, &c| {
        let c: u32 = c.into();
        acc | (c.wrapping_sub(0x09) < 5)
            | (c.wrapping_sub(0x1C) < 4)
            | (c == 0x85)
            | (c == 0xA0)
            | (c == 0x1680)
            | (c.wrapping_sub(0x2000) < 11)
            | (c == 0x2028)
            | (c == 0x2029)
            | (c == 0x202F)
            | (c == 0x205F)
            | (c == 0x3000)
    });
    let double_space = s.iter().zip(&s[1..]).fold(false, |acc, (&x, &y)| {
        acc | ((x.into() == 0x20) & (y.into() == 0x20))
    });
    !other_space && !double_space && first.into() != 0x20 && last.into() != 0x20
}

/// `" ".join(lowered.split())` into `out` (empty).
fn split_and_join<T: Copy + Into<u32> + From<u8>>(lowered: &[T], out: &mut Vec<T>) {
    out.reserve(lowered.len());
    let mut pending_space = false;
    for &c in lowered {
        let code: u32 = c.into();
        // Printable ASCII (most of any label) is settled by the first two compares.
        if (code <= 0x20 || code >= 0x85) && is_py_whitespace(code) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(T::from(b' '));
                pending_space = false;
            }
            out.push(c);
        }
    }
}

/// The whole normalisation for an ASCII string (`false`, `out` untouched, when `s` is not all ASCII).
///
/// Performance notes: written without a branch per character (the space before a word and the
/// character itself are always stored, and the length advances by flags): a branch per character
/// mispredicts on text, and was most of a `labels_match` call on 60-character labels
/// (benches/bench_core.py; history in docs/perf.md).
pub fn normalise_ascii(s: &[u8], out: &mut Vec<u8>) -> Result<bool> {
    // Every path below writes at most `s.len() + 16` bytes: reserved fallibly here, so their own
    // `reserve`/`resize` never allocate.
    alloc::reserve(out, s.len().saturating_add(17))?;
    Ok(normalise_ascii_reserved(s, out))
}

fn normalise_ascii_reserved(s: &[u8], out: &mut Vec<u8>) -> bool {
    // The common case (an ASCII label already split and joined), 16 bytes a step.
    match crate::simd::ascii::lower_collapsed(s, out) {
        Some(false) => return false,
        Some(true) => {
            while out
                .last()
                .is_some_and(|&c| is_terminal_punctuation(c as u32))
            {
                out.pop();
            }
            return true;
        }
        None => {}
    }
    if !s.is_ascii() {
        return false;
    }
    out.clear();
    if is_collapsed_ascii(s) {
        out.extend(
            s.iter()
                .map(|&c| c | (((c.wrapping_sub(b'A') < 26) as u8) << 5)),
        );
        while out
            .last()
            .is_some_and(|&c| is_terminal_punctuation(c as u32))
        {
            out.pop();
        }
        return true;
    }
    out.resize(s.len() + 1, 0);
    let mut n = 0usize;
    let mut pending_space = false;
    for &c in s {
        let space = ASCII_WHITESPACE[c as usize];
        // A word after whitespace (not at the start) gets one separating space.
        out[n] = b' ';
        n += (pending_space & !space) as usize;
        out[n] = c.to_ascii_lowercase();
        n += !space as usize;
        pending_space = space & (n > 0);
    }
    while n > 0 && is_terminal_punctuation(out[n - 1] as u32) {
        n -= 1;
    }
    out.truncate(n);
    true
}

/// Python's `str.lower()` of a code point below 256: every such mapping is one code point in the
/// same range (A-Z and À-Þ but ×, plus 32), which a test checks against Python for all 256.
#[inline]
pub const fn lower_latin1(c: u8) -> u8 {
    if c.is_ascii_uppercase() || (c >= 0xC0 && c <= 0xDE && c != 0xD7) {
        c + 32
    } else {
        c
    }
}

/// `lower_latin1` of every byte, for loops that map many at once.
pub static LOWER_LATIN1: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = lower_latin1(c as u8);
        c += 1;
    }
    table
};

/// The whole normalisation for a string whose code points are all below 256 (bytes), in Rust:
/// its lower-casing is exact here (`lower_latin1`), unlike that of wider text.
pub fn normalise_latin1(s: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if normalise_ascii(s, out)? {
        return Ok(());
    }
    let mut lowered = alloc::with_capacity(s.len())?;
    lowered.extend(s.iter().map(|&c| lower_latin1(c)));
    collapse_lowered(&lowered, out)
}

/// Whether an ASCII string is already split and joined: single spaces between words, no other
/// whitespace, none at either end. Most labels are, and then normalising is lower-casing and the
/// strip of terminal punctuation.
/// Every test is an or over the whole string, which vectorises.
fn is_collapsed_ascii(s: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (s.first(), s.last()) else {
        return true;
    };
    // Plain arithmetic on bytes (no table lookups, no early exits), so each fold vectorises.
    let other_space = s.iter().fold(0u8, |acc, &c| {
        acc | (c.wrapping_sub(0x09) < 5) as u8 | (c.wrapping_sub(0x1C) < 4) as u8
    });
    let double_space = s
        .iter()
        .zip(&s[1..])
        .fold(0u8, |acc, (&x, &y)| acc | ((x == b' ') & (y == b' ')) as u8);
    other_space == 0 && double_space == 0 && first != b' ' && last != b' '
}

/// `is_py_whitespace` for the ASCII range, as a table.
const ASCII_WHITESPACE: [bool; 128] = {
    let mut table = [false; 128];
    let mut c = 0;
    while c < 128 {
        table[c] = matches!(c, 0x09..=0x0D | 0x1C..=0x20);
        c += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_lowering_matches_python() {
        // The rule as Python 3.11 prints it (`[ord(chr(c).lower()) for c in range(256)]`); the oracle
        // is tests/test_parity_core.py::test_normalise_every_code_point, against the running Python.
        for c in 0..=255u8 {
            let python = match c {
                b'A'..=b'Z' => c + 32,
                0xC0..=0xD6 | 0xD8..=0xDE => c + 32,
                _ => c,
            };
            assert_eq!(lower_latin1(c), python, "{c:#x}");
        }
    }

    fn norm(s: &str) -> String {
        let mut out = Vec::new();
        assert!(normalise_ascii(s.as_bytes(), &mut out).unwrap());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn ascii_cases() {
        assert_eq!(norm("  Uses   pytest\tand RUFF.  "), "uses pytest and ruff");
        assert_eq!(norm("a ."), "a "); // rstrip removes punctuation only, never the space before it
        assert_eq!(norm("?!.,;:"), "");
        assert_eq!(norm("x\x1cy\x1fz"), "x y z"); // information separators are Python whitespace
        assert_eq!(norm("a\x00b"), "a\x00b"); // NUL is not whitespace
        assert_eq!(norm(""), "");
    }

    #[test]
    fn collapsed_test_knows_every_python_space() {
        for c in 0..0x11_0000u32 {
            let spaced = is_py_whitespace(c) && c != 0x20;
            assert_eq!(is_collapsed(&[0x78, c, 0x78]), !spaced, "{c:#x}");
            assert_eq!(is_collapsed(&[c]), !is_py_whitespace(c), "{c:#x}");
        }
        assert!(!is_collapsed(&[0x78u32, 0x20, 0x20, 0x78]));
        assert!(is_collapsed::<u32>(&[]));
        let mut out = Vec::new();
        for text in [
            "a b",
            " a",
            "a ",
            "a  b",
            "a\u{3000}b",
            "a b.",
            "a b .",
            "...",
        ] {
            let cps: Vec<u32> = text.chars().map(|c| c as u32).collect();
            collapse_lowered(&cps, &mut out).unwrap();
            let mut slow = Vec::new();
            split_and_join(&cps, &mut slow);
            while slow.last().is_some_and(|&c| is_terminal_punctuation(c)) {
                slow.pop();
            }
            assert_eq!(out, slow, "{text:?}");
        }
    }

    #[test]
    fn wide_collapse() {
        let s: Vec<u32> = "ΟΔΟΣ\u{2028}\u{3000}x\u{85}y..."
            .chars()
            .map(|c| c as u32)
            .collect();
        let mut out = Vec::new();
        collapse_lowered(&s, &mut out).unwrap();
        let got: String = out.iter().map(|&c| char::from_u32(c).unwrap()).collect();
        assert_eq!(got, "ΟΔΟΣ x y");
    }

    /// The 16-bytes-a-step path against lower-casing, `collapse_lowered` and the strip written out,
    /// around every chunk boundary, with each byte that changes the path (whitespace, other
    /// control bytes, double and edge spaces, non-ASCII anywhere).
    #[test]
    fn vector_path_agrees_with_the_rule() {
        let alphabet = b"aZz .!\t\x1c\x01\xc3Q";
        let mut rng = crate::test_rng::Rng(0x853C_49E6_748F_EA9B);
        let mut next = |n: usize| rng.below(n);
        for _ in 0..40_000 {
            let len = next(50);
            let s: Vec<u8> = (0..len)
                .map(|_| match next(10) {
                    0..=6 => b"abcXYZ m"[next(8)],
                    _ => alphabet[next(alphabet.len())],
                })
                .collect();
            let mut got = Vec::new();
            let ascii = normalise_ascii(&s, &mut got).unwrap();
            assert_eq!(ascii, s.is_ascii(), "{s:?}");
            if ascii {
                let mut want = Vec::new();
                collapse_lowered(&s.to_ascii_lowercase(), &mut want).unwrap();
                while want
                    .last()
                    .is_some_and(|&c| is_terminal_punctuation(c as u32))
                {
                    want.pop();
                }
                assert_eq!(got, want, "{s:?}");
            }
        }
    }

    #[test]
    fn non_ascii_is_refused() {
        let mut out = Vec::new();
        assert!(!normalise_ascii("café".as_bytes(), &mut out).unwrap());
    }
}
