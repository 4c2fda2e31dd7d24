//! Python-exact label normalisation: `" ".join(s.lower().split()).rstrip(".!?;:,")`.
//!
//! Lower-casing is exact here only for ASCII (Python's and Unicode's full case mappings, final sigma
//! and `İ` included, depend on the interpreter's Unicode database); the bindings hand any other
//! string to Python's own `str.lower()` and run the split/join/strip below on its code points, which
//! is exact for every string because Python's whitespace set is fixed (`is_py_whitespace`).

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
/// The input must already be lower-cased the way Python lower-cases it.
pub fn collapse_lowered<T: Copy + Into<u32> + From<u8>>(lowered: &[T], out: &mut Vec<T>) {
    out.clear();
    let mut pending_space = false;
    for &c in lowered {
        if is_py_whitespace(c.into()) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(T::from(b' '));
                pending_space = false;
            }
            out.push(c);
        }
    }
    while let Some(&last) = out.last() {
        if is_terminal_punctuation(last.into()) {
            out.pop();
        } else {
            break;
        }
    }
}

/// The whole normalisation for an ASCII string (`None` when `s` is not all ASCII).
pub fn normalise_ascii(s: &[u8], out: &mut Vec<u8>) -> bool {
    if !s.is_ascii() {
        return false;
    }
    out.clear();
    let mut pending_space = false;
    for &c in s {
        if is_py_whitespace(c as u32) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(b' ');
                pending_space = false;
            }
            out.push(c.to_ascii_lowercase());
        }
    }
    while let Some(&last) = out.last() {
        if is_terminal_punctuation(last as u32) {
            out.pop();
        } else {
            break;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        let mut out = Vec::new();
        assert!(normalise_ascii(s.as_bytes(), &mut out));
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
    fn wide_collapse() {
        let s: Vec<u32> = "ΟΔΟΣ\u{2028}\u{3000}x\u{85}y..."
            .chars()
            .map(|c| c as u32)
            .collect();
        let mut out = Vec::new();
        collapse_lowered(&s, &mut out);
        let got: String = out.iter().map(|&c| char::from_u32(c).unwrap()).collect();
        assert_eq!(got, "ΟΔΟΣ x y");
    }

    #[test]
    fn non_ascii_is_refused() {
        let mut out = Vec::new();
        assert!(!normalise_ascii("café".as_bytes(), &mut out));
    }
}
