//! The core of the store-wide secret memory (`memdedup.secret_memory`): which values may be
//! remembered, and where an incoming text holds spans that could be one.
//!
//! A store remembers a secret as a keyed hash, so what protects a remembered value from whoever
//! holds the store's file (and its key) is that guessing it is hopeless: only values with at least
//! 64 bits by [`secret_bits`] are remembered (the threshold is the caller's). The estimate is the
//! lesser of two: the value's length times its Shannon entropy per byte (n·log2(n) − Σ c·log2(c)
//! over its byte counts; a repeated or short-alphabet value keeps it low), and a word-aware sum over
//! its pieces, where a run of letters that
//! reads like a word counts as one word of a dictionary (13 bits: 8,192 words) rather than as random
//! letters, a digit 3.3 bits, a separator (`-` `_` `.`) 1 bit and another symbol 4 bits. So
//! `hunter2-Blue-Falcon-77` (52 bits) and a timestamp (fewer than 4 letters) are never remembered,
//! while a 20-character random token (~82 bits) is.
//!
//! [`secret_spans`] finds, in linear time, the spans of a text a remembered value could occupy: each
//! maximal run of token bytes (printable ASCII but quotes, brackets, `,` `;` `\` `|` `&` `?`),
//! trimmed of a sentence's trailing `.` `:` `!`, and the parts of it after its first and last `=`
//! and `:` (`key=VALUE`, `token:VALUE`): at most five spans per run, each kept only when its length
//! and its estimate are those of a remembered value (the store keeps both beside the digest). The
//! caller hashes those few: in benign text, next to none.

/// The shortest value that may be remembered, in bytes.
pub const MEMORY_MIN_LEN: usize = 12;
/// The longest value that may be remembered, in bytes.
pub const MEMORY_MAX_LEN: usize = 512;
/// The fewest letters a remembered value holds (a timestamp or a number has fewer).
pub const MEMORY_MIN_LETTERS: usize = 4;

use std::f64::consts::LOG2_10;
const LOG2_26: f64 = 4.700_439_718_141_092;
const LOG2_52: f64 = 5.700_439_718_141_092;
/// A dictionary word: one of 8,192.
const WORD_BITS: f64 = 13.0;
const SEPARATOR_BITS: f64 = 1.0;
const SYMBOL_BITS: f64 = 4.0;

/// The bytes a remembered value may hold, and that a span of a text is made of: printable ASCII but
/// quotes, brackets, `,` `;` `\\` `|` `&` `?` (a table: the scan reads every byte of a text).
const TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0x21;
    while b <= 0x7E {
        table[b] = true;
        b += 1;
    }
    let not = b"\"'`()[]{}<>,;\\|&?";
    let mut i = 0;
    while i < not.len() {
        table[not[i] as usize] = false;
        i += 1;
    }
    table
};

/// A byte a remembered value may hold, and that a span of a text is made of.
#[inline]
pub fn token_byte(b: u8) -> bool {
    TOKEN[b as usize]
}

fn trailing(b: u8) -> bool {
    matches!(b, b'.' | b':' | b'!')
}

fn vowel(b: u8) -> bool {
    matches!(
        b.to_ascii_lowercase(),
        b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
    )
}

/// Whether a run of letters reads like a word: 3+ letters, one case (or Capitalized), a vowel, and
/// no more than 3 consonants in a row.
fn word_like(run: &[u8]) -> bool {
    if run.len() < 3 {
        return false;
    }
    let lower_tail = run[1..].iter().all(u8::is_ascii_lowercase);
    let upper = run.iter().all(u8::is_ascii_uppercase);
    if !(lower_tail || upper) || !run.iter().copied().any(vowel) {
        return false;
    }
    let (mut cluster, mut longest) = (0usize, 0usize);
    for &b in run {
        cluster = if vowel(b) { 0 } else { cluster + 1 };
        longest = longest.max(cluster);
    }
    longest <= 3
}

/// The estimated bits of a value (see the module's note), or 0 for a value that may not be
/// remembered: shorter than [`MEMORY_MIN_LEN`] or longer than [`MEMORY_MAX_LEN`] bytes, holding a
/// byte that is no [`token_byte`] (a blank: a passphrase of words is never remembered), ending with
/// a sentence's mark, or with fewer than [`MEMORY_MIN_LETTERS`] letters.
pub fn secret_bits(v: &[u8]) -> f64 {
    bits_from(v, f64::NEG_INFINITY)
}

/// [`secret_bits`] of `v` when its structured estimate reaches `floor`; otherwise a value below
/// `floor` (the estimate is the lesser of the two, so it is below `floor` too). The lookup passes the
/// least estimate remembered at a span's length: most tokens of a text (timestamps, ids, paths) stop
/// at the structured estimate and never count their bytes (`benches/bench_scrub.py`, logs: the
/// lookup went from 4.3 to 3.0 ms per MB).
fn bits_from(v: &[u8], floor: f64) -> f64 {
    if v.len() < MEMORY_MIN_LEN || v.len() > MEMORY_MAX_LEN || trailing(v[v.len() - 1]) {
        return 0.0;
    }
    // A timestamp or a number has too few letters: known before counting anything else.
    if v.iter()
        .filter(|b| b.is_ascii_alphabetic())
        .take(MEMORY_MIN_LETTERS)
        .count()
        < MEMORY_MIN_LETTERS
    {
        return 0.0;
    }
    // Every byte a token byte (all below 0x7F, so the counts below fit 128 slots).
    if !v.iter().all(|&b| token_byte(b)) {
        return 0.0;
    }
    let mut structured = 0.0;
    let mut i = 0;
    while i < v.len() {
        let b = v[i];
        if b.is_ascii_alphabetic() {
            let start = i;
            while i < v.len() && v[i].is_ascii_alphabetic() {
                i += 1;
            }
            let run = &v[start..i];
            let n = run.len() as f64;
            let mixed =
                run.iter().any(u8::is_ascii_uppercase) && run.iter().any(u8::is_ascii_lowercase);
            let random = n * if mixed { LOG2_52 } else { LOG2_26 };
            structured += if word_like(run) {
                random.min(WORD_BITS)
            } else {
                random
            };
        } else if b.is_ascii_digit() {
            let start = i;
            while i < v.len() && v[i].is_ascii_digit() {
                i += 1;
            }
            structured += (i - start) as f64 * LOG2_10;
        } else {
            structured += if matches!(b, b'-' | b'_' | b'.') {
                SEPARATOR_BITS
            } else {
                SYMBOL_BITS
            };
            i += 1;
        }
    }
    // Shannon's estimate of the whole value, n·H = n·log2(n) − Σ c·log2(c) over the byte counts,
    // from a table of c·log2(c) (no logarithm per candidate: the lookup estimates many), summed in
    // byte order (the mirror sums the same terms in the same order: the same float).
    if structured < floor {
        return structured;
    }
    let mut counts = [0u16; 128];
    for &b in v {
        counts[b as usize] += 1;
    }
    let table = clog_table();
    let mut sum = 0.0;
    for &c in counts.iter().filter(|&&c| c > 0) {
        sum += table[usize::from(c)];
    }
    structured.min(table[v.len()] - sum)
}

/// `c · log2(c)` for every count a remembered value's byte can have (0 for 0).
fn clog_table() -> &'static [f64; MEMORY_MAX_LEN + 1] {
    static TABLE: std::sync::OnceLock<[f64; MEMORY_MAX_LEN + 1]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = [0.0; MEMORY_MAX_LEN + 1];
        for (c, slot) in table.iter_mut().enumerate().skip(1) {
            let c = c as f64;
            *slot = c * c.log2();
        }
        table
    })
}

/// The spans of `hay` a remembered value could occupy (see the module's note): byte spans, in order,
/// whose length and [`secret_bits`] are one of `shapes`' `(length, bits)` pairs (the pairs of the
/// remembered values: a text's other tokens, of other lengths or other estimates, are never hashed).
pub fn secret_spans(hay: &[u8], shapes: &[(usize, f64)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let Some(shortest) = shapes.iter().map(|s| s.0).min() else {
        return out;
    };
    let mut wanted: Vec<(usize, u64)> = shapes.iter().map(|&(n, b)| (n, b.to_bits())).collect();
    wanted.sort_unstable();
    wanted.dedup();
    // Each remembered length and the least estimate remembered at it (the first: the estimates are
    // non-negative floats, whose bit patterns sort as they do).
    let mut floors: Vec<(usize, f64)> = wanted
        .iter()
        .map(|&(n, b)| (n, f64::from_bits(b)))
        .collect();
    floors.dedup_by_key(|f| f.0);
    // Only maximal runs of at least `shortest` token bytes can hold a span, and each holds one of the
    // positions `shortest - 1 + k * shortest` past the last run seen: those positions are sampled and
    // a run is read from a sampled token byte both ways (at most `shortest` bytes back, since the
    // sample before it was outside the run). With 64 values of 20-48 bytes remembered, 1 MB of chat
    // took 2.0 ms a lookup before and 1.0 ms now, prose 2.4 and 1.4 (`benches/bench_scrub.py`,
    // +lookup); the runs it reads, in order, are those a byte-by-byte scan (the mirror's) keeps.
    let step = shortest.max(1);
    let mut j = step - 1;
    while j < hay.len() {
        if !token_byte(hay[j]) {
            j += step;
            continue;
        }
        let mut start = j;
        while start > 0 && token_byte(hay[start - 1]) {
            start -= 1;
        }
        let mut i = j + 1;
        while i < hay.len() && token_byte(hay[i]) {
            i += 1;
        }
        j = i + step;
        let mut end = i;
        while end > start && trailing(hay[end - 1]) {
            end -= 1;
        }
        if end - start < shortest {
            continue;
        }
        let run = &hay[start..end];
        // The run, and its parts after its first and last `=` and `:` (most runs hold neither).
        let mut starts = [Some(start), None, None, None, None];
        if memchr::memchr2(b'=', b':', run).is_some() {
            let after = |found: Option<usize>| found.map(|at| start + at + 1);
            starts[1] = after(memchr::memchr(b'=', run));
            starts[2] = after(memchr::memrchr(b'=', run));
            starts[3] = after(memchr::memchr(b':', run));
            starts[4] = after(memchr::memrchr(b':', run));
        }
        starts.sort_unstable();
        let mut last = None;
        for s in starts.into_iter().flatten() {
            if last == Some(s) || s >= end {
                continue;
            }
            last = Some(s);
            let n = end - s;
            let Ok(k) = floors.binary_search_by_key(&n, |f| f.0) else {
                continue;
            };
            let bits = bits_from(&hay[s..end], floors[k].1);
            if wanted.binary_search(&(n, bits.to_bits())).is_ok() {
                out.push((s, end));
            }
        }
    }
    out
}

/// Byte spans of `hay` (sorted by start; they may overlap: a run and its part after `=`) as Python's
/// code-point spans: each UTF-8 (or WTF-8) sequence is one code point; a span starting or ending
/// inside a sequence takes the whole code point, as [`Detector::to_code_points`] does.
///
/// [`Detector::to_code_points`]: super::scan::Detector::to_code_points
pub fn code_point_spans(hay: &[u8], spans: &[(usize, usize)]) -> Vec<(usize, usize)> {
    if hay.is_ascii() {
        return spans.to_vec();
    }
    let mut marks: Vec<usize> = spans.iter().flat_map(|&(s, e)| [s, e]).collect();
    marks.sort_unstable();
    marks.dedup();
    let lead = |b: &u8| (*b as i8) >= -0x40;
    let (mut byte, mut cp) = (0usize, 0usize);
    let mut at: Vec<(usize, usize, bool)> = Vec::with_capacity(marks.len());
    for &m in &marks {
        cp += hay[byte..m].iter().filter(|b| lead(b)).count();
        byte = m;
        // Inside a sequence (m points at a continuation byte): a start takes the code point begun
        // before it; an end counts it already.
        at.push((m, cp, m < hay.len() && !lead(&hay[m])));
    }
    let find = |m: usize| at[at.partition_point(|x| x.0 < m)];
    spans
        .iter()
        .map(|&(s, e)| {
            let (_, start_cp, inside) = find(s);
            (start_cp - usize::from(inside), find(e).1)
        })
        .collect()
}
