//! Wide text rewritten as bytes when `b` has at most 255 distinct elements, so it runs on the byte
//! searches with every answer unchanged.

use super::*;

/// Two sequences of code points rewritten as bytes when `b` holds at most 255 distinct elements:
/// `b`'s distinct elements become distinct bytes, `a`'s elements that `b` lacks one byte no element
/// of `b` has. An element of `a` and one of `b` stay equal exactly when they were, and counts per
/// element are kept, so every difflib answer (which compares `a` with `b` only) and the containment
/// rule are unchanged, and wide labels run on the byte searches.
#[derive(Default)]
pub struct ByteRemap {
    /// Basic-plane code point -> its byte (0: not in `b`), and the entries to clear after a call.
    bmp: Option<Box<[u8; 1 << 16]>>,
    astral: AstralBytes,
    touched: Vec<u32>,
}

/// Code points past the basic plane -> their bytes, for `ByteRemap`.
pub(super) type AstralBytes = HashMap<u32, u8, BuildHasherDefault<IdHasher>>;

/// Where `ByteRemap` keeps the byte of `c`: the table's entry below 2**16, the map's above.
#[inline]
pub(super) fn byte_slot<'t>(
    bmp: &'t mut [u8; 1 << 16],
    astral: &'t mut AstralBytes,
    c: u32,
) -> &'t mut u8 {
    if c < 1 << 16 {
        &mut bmp[c as usize & 0xFFFF]
    } else {
        astral.entry(c).or_insert(0)
    }
}

/// The byte `ByteRemap` gave `c` (0: none).
#[inline]
pub(super) fn byte_of(bmp: &[u8; 1 << 16], astral: &AstralBytes, c: u32) -> u8 {
    if c < 1 << 16 {
        bmp[c as usize & 0xFFFF]
    } else {
        astral.get(&c).copied().unwrap_or(0)
    }
}

/// Zero the entries a call set (`touched` lists their code points), so the next call starts clean.
pub(super) fn reset_bytes(
    bmp: &mut [u8; 1 << 16],
    astral: &mut AstralBytes,
    touched: &mut Vec<u32>,
) {
    for &c in touched.iter() {
        if c < 1 << 16 {
            bmp[c as usize & 0xFFFF] = 0;
        }
    }
    touched.clear();
    if !astral.is_empty() {
        astral.clear();
    }
}

impl ByteRemap {
    /// The basic-plane table (allocated on first use), the astral map and the touched list.
    pub(super) fn tables(&mut self) -> (&mut [u8; 1 << 16], &mut AstralBytes, &mut Vec<u32>) {
        let bmp = self.bmp.get_or_insert_with(|| Box::new([0; 1 << 16]));
        (bmp, &mut self.astral, &mut self.touched)
    }

    /// `a` and `b` as bytes in `out_a`, `out_b`; false (outputs unspecified) when `b` has more
    /// than 255 distinct elements. ASCII stays itself when `b` has at most 127 distinct other
    /// elements (`remap_beside_ascii`); otherwise every element goes through the table.
    ///
    /// Performance notes: mapping through a fixed 64 Ki table by `extend` has no bounds checks and
    /// no early exit (a `b` past 255 elements is only reported), a fraction of the instructions
    /// of a loop that stops at the 256th element (callgrind on 1,000 corpus pairs with a code
    /// point above 255; figures in docs/perf.md).
    pub fn remap(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        if self.remap_beside_ascii(a, b, out_a, out_b) {
            return true;
        }
        if a.iter().chain(b).fold(0, |acc, &c| acc | c) < 1 << 16 {
            return self.remap_basic_plane(a, b, out_a, out_b);
        }
        self.remap_any(a, b, out_a, out_b)
    }

    /// `remap` keeping ASCII as itself: `b`'s other elements become 128, 129, ... and `a`'s other
    /// elements `b`'s byte for them, or one byte `b` does not use. False (tables clean, outputs
    /// unspecified) when `b` has more than 127 distinct non-ASCII elements.
    ///
    /// Performance notes: wide labels are mostly ASCII (a dash, an accented name); narrowing every
    /// element at once and fixing the few others up took a fraction of mapping each one through
    /// the table (`remap_basic_plane`, ~14 instructions an element under callgrind).
    pub(super) fn remap_beside_ascii(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        out_b.clear();
        out_b.extend(b.iter().map(|&c| c as u8));
        let mut next = 128u32;
        let mut fits = true;
        for (out, &c) in out_b.iter_mut().zip(b) {
            if c < 128 {
                continue;
            }
            let slot = byte_slot(bmp, astral, c);
            if *slot == 0 {
                if next > 255 {
                    fits = false;
                    break;
                }
                *slot = next as u8;
                next += 1;
                touched.push(c);
            }
            *out = *slot;
        }
        // `next` is the first byte `b` left unused: a's elements absent from `b` take it. When `b`
        // used every byte from 128 up, none is left for them, and the table remap takes the pair.
        fits &= next <= 255;
        if fits {
            let absent = next as u8;
            out_a.clear();
            out_a.extend(a.iter().map(|&c| c as u8));
            for (out, &c) in out_a.iter_mut().zip(a) {
                if c < 128 {
                    continue;
                }
                let byte = byte_of(bmp, astral, c);
                *out = if byte == 0 { absent } else { byte };
            }
        }
        reset_bytes(bmp, astral, touched);
        fits
    }

    /// `remap` when every code point is in the basic plane: the table alone, and no branch on
    /// whether an element was seen before.
    ///
    /// Performance notes: most wide labels are basic-plane text, which this loop maps with no
    /// per-element test of the plane or of a map (callgrind, `labels_match` on the 161 pairs of
    /// bench_core's sample with a non-ASCII label; the one loop for every plane it split from:
    /// docs/perf.md).
    pub(super) fn remap_basic_plane(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        touched.clear();
        touched.resize(b.len(), 0);
        out_b.clear();
        out_b.resize(b.len(), 0);
        let (mut distinct, mut seen) = (0u32, 0usize);
        for (out, &c) in out_b.iter_mut().zip(b) {
            let slot = &mut bmp[c as usize & 0xFFFF];
            let fresh = *slot == 0;
            distinct += fresh as u32;
            // Every element is written down; only a fresh one is kept (`seen` moves past it).
            touched[seen] = c;
            seen += fresh as usize;
            // Past 255 the bytes are no longer distinct, but the call then reports false.
            let byte = if fresh {
                distinct.min(255) as u8
            } else {
                *slot
            };
            *slot = byte;
            *out = byte;
        }
        let fits = distinct <= 255;
        out_a.clear();
        if fits {
            out_a.extend(a.iter().map(|&c| bmp[c as usize & 0xFFFF]));
        }
        touched.truncate(seen);
        reset_bytes(bmp, astral, touched);
        fits
    }

    /// `remap` for any code points: those past the basic plane through a map.
    pub(super) fn remap_any(
        &mut self,
        a: &[u32],
        b: &[u32],
        out_a: &mut Vec<u8>,
        out_b: &mut Vec<u8>,
    ) -> bool {
        let (bmp, astral, touched) = self.tables();
        let mut distinct = 0u32;
        out_b.clear();
        out_b.extend(b.iter().map(|&c| {
            let slot = byte_slot(bmp, astral, c);
            if *slot == 0 {
                distinct += 1;
                touched.push(c);
                // Past 255 the bytes are no longer distinct, but the call then reports false.
                *slot = distinct.min(255) as u8;
            }
            *slot
        }));
        let fits = distinct <= 255;
        out_a.clear();
        if fits {
            out_a.extend(a.iter().map(|&c| byte_of(bmp, astral, c)));
        }
        reset_bytes(bmp, astral, touched);
        fits
    }
}
