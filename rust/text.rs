//! A label as the matcher stores it: bytes when every code point is below 256, else code points.

use std::borrow::Cow;

use crate::alloc;
use crate::contract::{self, Decision, MatchParams};
use crate::error::Result;
use crate::matcher::{BSide, Matcher};
use crate::normalise;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Text {
    Narrow(Vec<u8>),
    Wide(Vec<u32>),
}

impl Default for Text {
    fn default() -> Self {
        Text::Narrow(Vec::new())
    }
}

impl Text {
    /// Narrows when every code point is below 256 (Latin-1 maps onto bytes one to one). The copy
    /// is allocated fallibly: a text's size comes from the caller.
    pub fn from_codepoints(cps: &[u32]) -> Result<Text> {
        if cps.iter().all(|&c| c < 256) {
            Text::narrowed(cps)
        } else {
            Ok(Text::Wide(alloc::copy_of(cps)?))
        }
    }

    /// [`Text::from_codepoints`] taking the buffer: a wide text keeps it (no copy).
    pub fn from_codepoint_vec(cps: Vec<u32>) -> Result<Text> {
        if cps.iter().all(|&c| c < 256) {
            Text::narrowed(&cps)
        } else {
            Ok(Text::Wide(cps))
        }
    }

    fn narrowed(cps: &[u32]) -> Result<Text> {
        let mut v = alloc::with_capacity(cps.len())?;
        v.extend(cps.iter().map(|&c| c as u8));
        Ok(Text::Narrow(v))
    }

    pub fn from_text(s: &str) -> Text {
        let cps: Vec<u32> = s.chars().map(|c| c as u32).collect();
        Text::from_codepoint_vec(cps).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        match self {
            Text::Narrow(v) => v.len(),
            Text::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_ascii(&self) -> bool {
        match self {
            Text::Narrow(v) => v.is_ascii(),
            Text::Wide(_) => false,
        }
    }

    /// The first `n` code points into `out` (replaced), reusing its buffer.
    pub fn prefix_codepoints_into(&self, n: usize, out: &mut Vec<u32>) -> Result<()> {
        out.clear();
        alloc::reserve(out, n.min(self.len()))?;
        match self {
            Text::Narrow(v) => out.extend(v.iter().take(n).map(|&c| c as u32)),
            Text::Wide(v) => out.extend(v.iter().take(n)),
        }
        Ok(())
    }

    /// The code points into `out` (replaced), reusing its buffer (grown fallibly).
    pub fn codepoints_into(&self, out: &mut Vec<u32>) -> Result<()> {
        out.clear();
        alloc::reserve(out, self.len())?;
        match self {
            Text::Narrow(v) => out.extend(v.iter().map(|&c| c as u32)),
            Text::Wide(v) => out.extend_from_slice(v),
        }
        Ok(())
    }

    pub fn codepoints(&self) -> Vec<u32> {
        match self {
            Text::Narrow(v) => v.iter().map(|&c| c as u32).collect(),
            Text::Wide(v) => v.clone(),
        }
    }

    /// The code points, borrowed when the text is wide; a narrow text's are copied fallibly.
    pub fn codepoints_cow(&self) -> Result<Cow<'_, [u32]>> {
        match self {
            Text::Narrow(v) => {
                let mut out = alloc::with_capacity(v.len())?;
                out.extend(v.iter().map(|&c| c as u32));
                Ok(Cow::Owned(out))
            }
            Text::Wide(v) => Ok(Cow::Borrowed(v)),
        }
    }

    /// The first `n` code points (narrowed when they allow it, so equal prefixes are equal values).
    pub fn prefix(&self, n: usize) -> Result<Text> {
        match self {
            Text::Narrow(v) => Ok(Text::Narrow(alloc::copy_of(&v[..n.min(v.len())])?)),
            Text::Wide(v) => Text::from_codepoints(&v[..n.min(v.len())]),
        }
    }

    /// Python's `str.strip()`: leading and trailing Python whitespace removed.
    pub fn strip_py(&self) -> Result<Text> {
        fn bounds(cps: impl DoubleEndedIterator<Item = u32> + Clone, len: usize) -> (usize, usize) {
            let start = cps
                .clone()
                .take_while(|&c| normalise::is_py_whitespace(c))
                .count();
            let end = len
                - cps
                    .rev()
                    .take_while(|&c| normalise::is_py_whitespace(c))
                    .count();
            (start, end.max(start))
        }
        match self {
            Text::Narrow(v) => {
                let (s, e) = bounds(v.iter().map(|&c| c as u32), v.len());
                Ok(Text::Narrow(alloc::copy_of(&v[s..e])?))
            }
            Text::Wide(v) => {
                let (s, e) = bounds(v.iter().copied(), v.len());
                Text::from_codepoints(&v[s..e])
            }
        }
    }

    /// Python's `str.strip()` of an ASCII label, and the label normalised: what replay keeps of it.
    pub fn stripped_and_normalised_ascii(raw: &[u8]) -> Result<(Text, Text)> {
        // Python's whitespace (not Rust's `trim_ascii`: \x0b and \x1c-\x1f count).
        let space = |c: &u8| normalise::is_py_whitespace(*c as u32);
        let start = raw.iter().position(|c| !space(c)).unwrap_or(raw.len());
        let end = raw.iter().rposition(|c| !space(c)).map_or(start, |e| e + 1);
        let mut norm = Vec::new();
        normalise::normalise_ascii(raw, &mut norm)?;
        Ok((
            Text::Narrow(alloc::copy_of(&raw[start..end])?),
            Text::Narrow(norm),
        ))
    }

    /// Python's normalisation when the text is ASCII (None otherwise: its lower-casing needs Python).
    pub fn normalise_ascii(&self) -> Result<Option<Text>> {
        match self {
            Text::Narrow(v) => {
                let mut out = Vec::new();
                Ok(normalise::normalise_ascii(v, &mut out)?.then_some(Text::Narrow(out)))
            }
            Text::Wide(_) => Ok(None),
        }
    }

    /// Split/join/strip of a text Python has already lower-cased.
    pub fn collapse_lowered(&self) -> Result<Text> {
        match self {
            Text::Narrow(v) => {
                let mut out = Vec::new();
                normalise::collapse_lowered(v, &mut out)?;
                Ok(Text::Narrow(out))
            }
            Text::Wide(v) => {
                let mut out = Vec::new();
                normalise::collapse_lowered(v, &mut out)?;
                Text::from_codepoint_vec(out)
            }
        }
    }
}

/// An incoming label prepared once (difflib's `b` side) and matched against many stored labels.
#[derive(Default)]
pub struct Query {
    text: Text,
    narrow: Option<BSide<u8>>,
    wide: Option<BSide<u32>>,
    /// Byte counts of a narrow text, for the multiset bound without building the full index.
    counts: Option<Box<[u32; 256]>>,
}

impl Query {
    pub fn new(text: Text) -> Query {
        Query {
            text,
            narrow: None,
            wide: None,
            counts: None,
        }
    }

    pub fn text(&self) -> &Text {
        &self.text
    }

    fn narrow_side(&mut self) -> Option<&BSide<u8>> {
        if let Text::Narrow(v) = &self.text {
            Some(self.narrow.get_or_insert_with(|| BSide::new(v, true)))
        } else {
            None
        }
    }

    fn wide_side(&mut self) -> &BSide<u32> {
        let text = &self.text;
        self.wide
            .get_or_insert_with(|| BSide::new(&text.codepoints(), true))
    }

    /// `labels_match(stored, incoming)` on normalised labels.
    /// The cheap rules run on the texts first; `incoming`'s index is built only for a pair they leave
    /// open, and then kept for the next stored label.
    pub fn matches(&mut self, m: &mut Matcher, stored: &Text, p: &MatchParams) -> bool {
        match (stored, &self.text) {
            (Text::Narrow(a), Text::Narrow(b)) => {
                if let Some(answer) = contract::settle_cheaply(a, b, p) {
                    return answer;
                }
                // The multiset bound needs only byte counts: most pairs it settles never pay for the
                // full index (measured: building b2j cost more than the rest of such a decision).
                let counts = self
                    .counts
                    .get_or_insert_with(|| Box::new(contract::byte_counts(b)));
                if !contract::multiset_admits(a, **counts, b.len(), p) {
                    return false;
                }
                match self.narrow_side() {
                    Some(side) => {
                        m.set_a(a, side);
                        m.ratio_at_least(side, p.threshold)
                    }
                    None => false, // unreachable: a narrow incoming text always has a narrow index
                }
            }
            _ => {
                let (a, b) = (stored.codepoints(), self.text.codepoints());
                match contract::settle_cheaply(&a, &b, p) {
                    Some(answer) => answer,
                    None => contract::settle_exactly(m, &a, self.wide_side(), p),
                }
            }
        }
    }

    /// The containment rule between `stored` and this label.
    pub fn contains_shorter(&self, stored: &Text, min_chars: usize) -> bool {
        match (stored, &self.text) {
            (Text::Narrow(a), Text::Narrow(b)) => contract::contained(a, b, min_chars),
            _ => contract::contained(&stored.codepoints(), &self.text.codepoints(), min_chars),
        }
    }

    /// The decision with its reason and exact ratio.
    pub fn decide(&mut self, m: &mut Matcher, stored: &Text, p: &MatchParams) -> Decision {
        match stored {
            Text::Narrow(a) => match self.narrow_side() {
                Some(side) => contract::decide(m, a, side, p),
                None => {
                    let wide: Vec<u32> = a.iter().map(|&c| c as u32).collect();
                    contract::decide(m, &wide, self.wide_side(), p)
                }
            },
            Text::Wide(a) => contract::decide(m, a, self.wide_side(), p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_strip_is_pythons() {
        let (stripped, norm) =
            Text::stripped_and_normalised_ascii(b"\x1c\x0b  Uses  Ruff.\x1f ").unwrap();
        assert_eq!(stripped, Text::Narrow(b"Uses  Ruff.".to_vec()));
        assert_eq!(norm, Text::Narrow(b"uses ruff".to_vec()));
        assert_eq!(
            Text::stripped_and_normalised_ascii(b" \t ").unwrap(),
            (Text::Narrow(vec![]), Text::Narrow(vec![]))
        );
        assert_eq!(
            Text::from_text(" \u{3000}x\u{85}").strip_py().unwrap(),
            Text::from_text("x")
        );
    }

    #[test]
    fn mixed_widths_agree() {
        let p = MatchParams::default();
        let mut m = Matcher::new();
        let stored = Text::from_text("prefers the café near the office");
        let mut q = Query::new(Text::from_text("prefers the café near the office ☕"));
        assert!(matches!(stored, Text::Narrow(_)));
        assert!(q.matches(&mut m, &stored, &p));
        let d = q.decide(&mut m, &stored, &p);
        assert_eq!(d.reason, Some(crate::Reason::Ratio));
    }
}
