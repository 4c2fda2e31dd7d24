//! Code that finds a secret's extent from a rule's match: a value after a credential-named key, a
//! private key block's body, a token's long tail.
//!
//! No cap cuts a secret: a token is read to its true end (a run of bytes that are not stop bytes), a
//! quoted value to its closing quote or line end, a clause's words to their ends, a key block and a
//! token's tail to where the key material ends. Reading stays linear because every read that could be
//! repeated (a key nested in the value of the key before it: `'key=' * n`) goes through a [`Memo`]: a
//! stop found by a position-only test (the first byte at or after `p` that ends a token, a word, a
//! run) is remembered as a stretch, and a later read that starts inside the stretch jumps to its end.
//! So each byte is examined O(1) times per rule, however many keys start inside one value.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::catalogue::ByteSet;
use super::keys::{KeyClass, KeyHit, KeyPolicy};
use super::scan::PLACEHOLDER;
use super::values::{template_end, ValuePolicy, SHAPE_MAX};

/// The most words a passphrase runs to.
pub const MAX_CLAUSE_WORDS: usize = 16;

/// A stretch `from..to` of the text where a position-only test does not hold, and `to` where it does
/// (or the end of the text): a read from any position in `from..=to` stops at `to`.
#[derive(Clone, Copy, Default, Debug)]
struct Stretch {
    from: usize,
    to: usize,
    known: bool,
}

impl Stretch {
    /// The first position at or after `p` where `stops` holds (or `len`), remembering the stretch read.
    #[inline]
    fn stop(&mut self, len: usize, p: usize, stops: impl Fn(usize) -> bool) -> usize {
        if self.known && self.from <= p && p <= self.to {
            return self.to;
        }
        let mut i = p;
        while i < len {
            if self.known && i == self.from {
                i = self.to;
                break;
            }
            if stops(i) {
                break;
            }
            i += 1;
        }
        *self = Stretch {
            from: p,
            to: i,
            known: true,
        };
        i
    }
}

/// What one rule's scan remembers between its reads (see the module's note): stretches of tokens,
/// words, blanks and runs, the trailing `.`/`:` of a token's stop, and a key block's path.
#[derive(Default)]
pub struct Memo {
    token: [Stretch; 2],
    word: [Stretch; 2],
    blanks: Stretch,
    escaped: [Stretch; 2],
    run: Stretch,
    /// A token's raw stop and where the `.`/`:` bytes before it start.
    trim: Option<(usize, usize)>,
    /// The line ends a key block's read passed (sorted), and where that block ended.
    block: (Vec<usize>, usize),
    /// Byte counts of `span.0..span.1` (a long secret's digits, cases and entropy).
    span: (usize, usize, Option<Box<[usize; 256]>>),
    /// How the key phrases read so far name a credential (a text repeats its keys: a JSON list of
    /// records, a log): judged once each, up to [`PHRASES`] distinct phrases.
    phrases: HashMap<Box<[u8]>, Option<Option<KeyHit>>, BuildHasherDefault<Fnv>>,
    judged: usize,
}

/// FNV-1a for the phrase cache: short keys, hashed once per key a rule reads (SipHash costs more
/// than the lookup it serves).
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// The most distinct key phrases one rule's scan remembers the judgement of.
const PHRASES: usize = 4096;
/// How many phrases a scan judges before it starts remembering them.
const PHRASES_AFTER: usize = 64;

impl Memo {
    /// [`KeyPolicy::judge_phrase`] of `phrase`, remembered once a scan has judged [`PHRASES_AFTER`]
    /// phrases (a short text's few keys are judged directly: a table would cost it more).
    fn judge_phrase(&mut self, keys: &KeyPolicy, phrase: &[u8]) -> Option<Option<KeyHit>> {
        if self.judged < PHRASES_AFTER {
            self.judged += 1;
            return keys.judge_phrase(phrase);
        }
        if let Some(&verdict) = self.phrases.get(phrase) {
            return verdict;
        }
        let verdict = keys.judge_phrase(phrase);
        if self.phrases.len() < PHRASES && phrase.len() <= 128 {
            self.phrases.insert(phrase.into(), verdict);
        }
        verdict
    }
}

impl Memo {
    /// The byte counts of `hay[start..end]`. Candidates inside one long run share its end: the counts
    /// move from the last span's start to this one's instead of counting the run again.
    pub fn counts(&mut self, hay: &[u8], start: usize, end: usize) -> &[usize; 256] {
        let (from, to, counts) = &mut self.span;
        let counts = counts.get_or_insert_with(|| Box::new([0; 256]));
        if *to == end && start <= end && from.abs_diff(start) < end - start {
            if start > *from {
                hay[*from..start]
                    .iter()
                    .for_each(|&b| counts[b as usize] -= 1);
            } else {
                hay[start..*from]
                    .iter()
                    .for_each(|&b| counts[b as usize] += 1);
            }
        } else {
            counts.fill(0);
            hay[start..end]
                .iter()
                .for_each(|&b| counts[b as usize] += 1);
        }
        (*from, *to) = (start, end);
        counts
    }
}

/// How a value after a key is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ValueMode {
    /// One token: up to whitespace, a quote, `,` `;` or a closing bracket.
    Token,
    /// A clause: words up to a newline, `,` `;`, a quote or a sentence end (a passphrase).
    Clause,
}

/// A value's extent, and how it was read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Value {
    pub start: usize,
    pub end: usize,
    pub quoted: bool,
    /// The end of its first word (unquoted values: no blank before it).
    pub first_end: usize,
    pub mode: ValueMode,
    pub query: bool,
    /// A clause that stopped at [`MAX_CLAUSE_WORDS`] with more words to read.
    pub capped: bool,
}

/// The value a key rule accepted last, one word long: a key nested in it whose value starts inside it
/// and is read unquoted, as a token (or as a clause inside a clause), with `&` `#` ending it if they
/// ended this one, stops at or before this value's end, so it adds nothing to the union of findings
/// (the merge names the union by its first member of the earliest rule): it is not read again.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Cover {
    pub start: usize,
    pub end: usize,
    pub quoted: bool,
    pub mode: ValueMode,
    pub query: bool,
}

impl Cover {
    fn holds(&self, value_at: usize, unquoted: bool, mode: ValueMode, query: bool) -> bool {
        self.start <= value_at
            && value_at < self.end
            && unquoted
            && (mode == ValueMode::Token || self.mode == ValueMode::Clause || self.quoted)
            && (query || !self.query || self.quoted)
    }
}

/// A backslash escape of a newline, carriage return, tab or quote (`\n`, `\\n`, `\"`): the end of a value
/// written inside a JSON string.
fn escape_at(hay: &[u8], i: usize) -> bool {
    let mut j = i;
    while j < hay.len() && hay[j] == b'\\' && j - i < 3 {
        j += 1;
    }
    j > i && j < hay.len() && matches!(hay[j], b'n' | b'r' | b't' | b'"')
}

fn token_stop(b: u8) -> bool {
    b.is_ascii_whitespace() || b"\"'`,;".contains(&b)
}

fn is_closer(b: u8) -> bool {
    matches!(b, b')' | b']' | b'}' | b'>')
}

/// How many closing brackets after one may still end a token together with it.
const CLOSER_RUN: usize = 8;

/// Whether the closing bracket at `i` ends a token: only where the token ends too, the brackets after
/// it (up to [`CLOSER_RUN`]) then a blank, a quote, a separator, a sentence's last mark, an escape,
/// `</` or the end. Inside a token a bracket is part of it: `{{h}o)p${e]nob(ody[finds>-_$#thisone}}`
/// is one value. (Which of the last brackets belong to the value is [`balanced_end`]'s to say.)
fn closes_token(hay: &[u8], i: usize) -> bool {
    let mut j = i + 1;
    while j < hay.len() && j - (i + 1) < CLOSER_RUN && is_closer(hay[j]) {
        j += 1;
    }
    if j - (i + 1) == CLOSER_RUN {
        return true;
    }
    match hay.get(j) {
        None => true,
        Some(&n) if n.is_ascii_whitespace() || b"\"'`,;".contains(&n) => true,
        Some(b'.' | b':' | b'!' | b'?') => hay.get(j + 1).is_none_or(u8::is_ascii_whitespace),
        Some(b'\\') => escape_at(hay, j),
        Some(b'<') => hay.get(j + 1) == Some(&b'/'),
        _ => false,
    }
}

/// A token's end extended over the closing brackets right after it that close brackets the token
/// opened and left open (`<your-token>`, `{{h}o)p${e]...}}`; not the `)` of `(password=abc)`).
/// Judged on tokens of at most [`SHAPE_MAX`] bytes (counting a longer one per key would cost its
/// length each time).
fn balanced_end(hay: &[u8], start: usize, mut end: usize) -> usize {
    if end - start > SHAPE_MAX {
        return end;
    }
    let kind = |b: u8| match b {
        b'(' | b')' => 0,
        b'[' | b']' => 1,
        b'{' | b'}' => 2,
        _ => 3,
    };
    let mut open = [0usize; 4];
    for &b in &hay[start..end] {
        match b {
            b'(' | b'[' | b'{' | b'<' => open[kind(b)] += 1,
            b')' | b']' | b'}' | b'>' => open[kind(b)] = open[kind(b)].saturating_sub(1),
            _ => {}
        }
    }
    while end < hay.len() && is_closer(hay[end]) && open[kind(hay[end])] > 0 {
        open[kind(hay[end])] -= 1;
        end += 1;
    }
    end
}

fn clause_stop(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | b'"' | b'\'' | b'`' | b',' | b';')
}

/// Whether the byte at `i` ends a token value (`query`: `&` and `#` too): a blank, a quote, `,` `;`,
/// a closing bracket where the token ends ([`closes_token`]), an XML closing tag (`</`), an escape.
fn ends_token(hay: &[u8], i: usize, query: bool) -> bool {
    let b = hay[i];
    token_stop(b)
        || (query && matches!(b, b'&' | b'#'))
        || (matches!(b, b')' | b']' | b'}' | b'>') && closes_token(hay, i))
        || (b == b'<' && hay.get(i + 1) == Some(&b'/'))
        || (b == b'\\' && escape_at(hay, i))
}

/// Whether the byte at `i` ends a word of a clause.
fn ends_word(hay: &[u8], i: usize, query: bool) -> bool {
    let b = hay[i];
    b.is_ascii_whitespace()
        || clause_stop(b)
        || (query && matches!(b, b'&' | b'#'))
        || (b == b'\\' && escape_at(hay, i))
}

/// Whether the value at `pos` opens with a quote (or an escaped quote): read as a string.
pub fn opens_quote(hay: &[u8], pos: usize) -> bool {
    matches!(hay.get(pos), Some(b'"' | b'\'' | b'`'))
        || (hay.get(pos) == Some(&b'\\') && matches!(hay.get(pos + 1), Some(b'"' | b'\'')))
}

/// A string literal's prefix before its quote: `@"..."` (Objective-C, C#), `r"..."`, `b'...'`,
/// `u"..."`, `f"..."`, `L"..."`: the value is the quoted string after it.
fn literal_prefix(hay: &[u8], pos: usize) -> bool {
    matches!(
        hay.get(pos),
        Some(b'@' | b'r' | b'b' | b'u' | b'f' | b'L' | b'R')
    ) && matches!(hay.get(pos + 1), Some(b'"' | b'\''))
}

/// A YAML block scalar's indicator at `pos` (`|`, `>`, `|-`, `>+`, `|2`), then only blanks to the
/// line's end: where the first line of the block starts.
fn block_indicator(hay: &[u8], pos: usize) -> Option<usize> {
    if !matches!(hay.get(pos), Some(b'|' | b'>')) {
        return None;
    }
    let mut i = pos + 1;
    while i < hay.len() && i - pos <= 3 && matches!(hay[i], b'-' | b'+' | b'0'..=b'9') {
        i += 1;
    }
    while i < hay.len() && matches!(hay[i], b' ' | b'\t') {
        i += 1;
    }
    match hay.get(i) {
        Some(b'\n') => Some(i + 1),
        Some(b'\r') if hay.get(i + 1) == Some(&b'\n') => Some(i + 2),
        _ => None,
    }
}

/// The indentation (blanks) of the line holding `pos`.
fn line_indent(hay: &[u8], pos: usize) -> usize {
    let line = hay[..pos]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    hay[line..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

/// Whether the line content at `p` reads as a YAML mapping entry (`name: ...`, `- name: ...`).
fn mapping_line(hay: &[u8], p: usize) -> bool {
    let mut i = p;
    if hay.get(i) == Some(&b'-') && hay.get(i + 1) == Some(&b' ') {
        i += 2;
    }
    let name = hay[i..]
        .iter()
        .take(64)
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'"' | b'\''))
        .count();
    name > 0
        && hay.get(i + name) == Some(&b':')
        && hay
            .get(i + name + 1)
            .is_none_or(|b| b.is_ascii_whitespace())
}

/// The content of a YAML block scalar whose first line starts at `from`, under a key indented
/// `indent` blanks: the lines indented deeper, up to the first line that is not (or that reads as a
/// mapping entry: the block ended and the map goes on). Its first and last content bytes.
fn block_value(hay: &[u8], from: usize, indent: usize) -> Option<(usize, usize)> {
    let (mut first, mut last) = (None, 0);
    let mut line = from;
    while line < hay.len() {
        let blanks = hay[line..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let content = line + blanks;
        let eol = memchr::memchr(b'\n', &hay[content..]).map_or(hay.len(), |i| content + i);
        let mut end = eol;
        while end > content && hay[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if end > content {
            if blanks <= indent || (first.is_some() && mapping_line(hay, content)) {
                break;
            }
            first.get_or_insert(content);
            last = end;
        }
        line = eol + 1;
    }
    first.map(|f| (f, last))
}

/// Read the value that starts at `pos`: a quoted string (its inside), else a token or a clause, each
/// to its true end. `query`: the key is a URL query parameter, so `&` and `#` end the value too. A
/// template (`{{ .Values.x }}`, `${X}`) is read whole, so that the policy sees it; a YAML block
/// scalar (`key: |` and indented lines) is read as the string it is.
pub fn read_value(
    hay: &[u8],
    pos: usize,
    mode: ValueMode,
    query: bool,
    memo: &mut Memo,
) -> Option<Value> {
    let len = hay.len();
    if pos >= len {
        return None;
    }
    let quoted = |start: usize, end: usize| {
        (end > start).then_some(Value {
            start,
            end,
            quoted: true,
            first_end: end,
            mode,
            query,
            capped: false,
        })
    };
    if literal_prefix(hay, pos) {
        return read_value(hay, pos + 1, mode, query, memo);
    }
    // An escaped quote opens a string inside a JSON string: \"value\".
    if hay[pos] == b'\\' && pos + 1 < len && matches!(hay[pos + 1], b'"' | b'\'') {
        let quote = hay[pos + 1];
        let start = pos + 2;
        let slot = usize::from(quote == b'"');
        let end = memo.escaped[slot].stop(len, start, |i| {
            (hay[i] == b'\\' && i + 1 < len && hay[i + 1] == quote) || hay[i] == b'\n'
        });
        return quoted(start, end);
    }
    if matches!(hay[pos], b'"' | b'\'' | b'`') {
        // Reads of one quote's strings never overlap (a string ends at the next quote of its kind
        // that is not escaped), so this costs each byte once per kind of quote.
        let quote = hay[pos];
        let start = pos + 1;
        let mut i = start;
        while i < len && hay[i] != quote && hay[i] != b'\n' {
            i += if hay[i] == b'\\' && i + 1 < len { 2 } else { 1 };
        }
        return quoted(start, i.min(len));
    }
    if let Some(from) = block_indicator(hay, pos) {
        let (start, end) = block_value(hay, from, line_indent(hay, pos))?;
        return quoted(start, end);
    }
    if let Some(end) = template_end(hay, pos).filter(|&e| e >= len || ends_token(hay, e, query)) {
        return Some(Value {
            start: pos,
            end,
            quoted: false,
            first_end: end,
            mode,
            query,
            capped: false,
        });
    }
    let q = usize::from(query);
    let mut capped = false;
    let (end, first_end) = match mode {
        ValueMode::Token => {
            let stop = memo.token[q].stop(len, pos, |i| ends_token(hay, i, query));
            // A sentence's full stop or colon is not part of the token.
            let floor = match memo.trim {
                Some((s, floor)) if s == stop => floor,
                _ => {
                    let mut i = stop;
                    while i > 0 && matches!(hay[i - 1], b'.' | b':') {
                        i -= 1;
                    }
                    memo.trim = Some((stop, i));
                    i
                }
            };
            let mut end = floor.max(pos);
            if end == stop {
                end = balanced_end(hay, pos, end);
            }
            (end, end)
        }
        ValueMode::Clause => {
            let (end, first, more) = clause(hay, pos, query, memo, MAX_CLAUSE_WORDS);
            capped = more;
            (end, first.unwrap_or(end).min(end))
        }
    };
    (end > pos).then_some(Value {
        start: pos,
        end,
        quoted: false,
        first_end,
        mode,
        query,
        capped,
    })
}

/// A clause from `pos`: its end, its first word's end, and whether it stopped at `max_words` with
/// more to read.
fn clause(
    hay: &[u8],
    pos: usize,
    query: bool,
    memo: &mut Memo,
    max_words: usize,
) -> (usize, Option<usize>, bool) {
    let len = hay.len();
    let q = usize::from(query);
    let mut i = pos;
    let mut end = pos;
    let mut first_end = None;
    let mut words = 0;
    while i < len {
        if words == max_words {
            return (end, first_end, true);
        }
        // One word.
        let word_start = i;
        if words > 0 && matches!(hay[i], b'(' | b'[' | b'{' | b'<') {
            break;
        }
        i = memo.word[q].stop(len, i, |j| ends_word(hay, j, query));
        if i == word_start {
            break;
        }
        words += 1;
        first_end.get_or_insert(i);
        let at_gap = i >= len || hay[i] == b' ' || hay[i] == b'\t';
        if matches!(hay[i - 1], b'.' | b'!' | b'?') && (i >= len || hay[i].is_ascii_whitespace()) {
            // The sentence ends here; a full stop is not part of the passphrase.
            end = if hay[i - 1] == b'.' { i - 1 } else { i };
            break;
        }
        end = i;
        if !at_gap {
            break;
        }
        // The gap to the next word: spaces and tabs only.
        i = memo
            .blanks
            .stop(len, i, |j| hay[j] != b' ' && hay[j] != b'\t');
    }
    (end, first_end, false)
}

/// An accepted clause that stopped at [`MAX_CLAUSE_WORDS`] runs on to its true end (a 24-word seed
/// phrase is redacted whole): the word limit decides how far a clause is judged, never how much of
/// an accepted secret is redacted. Only accepted values are extended, and the scan resumes past them.
fn whole_clause(hay: &[u8], value: &mut Value, memo: &mut Memo) {
    if value.capped {
        value.end = clause(hay, value.start, value.query, memo, usize::MAX).0;
        value.capped = false;
    }
}

/// The key of a key rule's match at `ms`: the first run of key bytes (`[A-Za-z0-9_.-]`; a flag's
/// leading blank is skipped, its dashes are part of the run and split away as words).
pub fn key_span(hay: &[u8], ms: usize) -> (usize, usize) {
    let key_byte = |b: &u8| b.is_ascii_alphanumeric() || b"_.-".contains(b);
    let start = ms + hay[ms..].iter().take_while(|b| !key_byte(b)).count();
    let end = start + hay[start..].iter().take_while(|b| key_byte(b)).count();
    (skip_escape(hay, start, end), end)
}

/// `start`, past the letters and digits of an escape that ends inside the key: in `\npassword: x`
/// (JSON text holding a newline escape) or `%22token=x` the key is `password` or `token`, not
/// `npassword` or `22token`.
fn skip_escape(hay: &[u8], start: usize, end: usize) -> usize {
    let hex = |range: std::ops::Range<usize>| {
        range.end <= end && hay[range].iter().all(u8::is_ascii_hexdigit)
    };
    let skip = match (start.checked_sub(1).map(|i| hay[i]), hay.get(start)) {
        (Some(b'\\'), Some(b'n' | b'r' | b't' | b'b' | b'f' | b'v')) => 1,
        (Some(b'\\'), Some(b'u')) if hex(start + 1..start + 5) => 5,
        (Some(b'\\'), Some(b'x')) if hex(start + 1..start + 3) => 3,
        (Some(b'%'), Some(_)) if hex(start..start + 2) => 2,
        _ => 0,
    };
    if start + skip < end {
        start + skip
    } else {
        start
    }
}

/// Where the phrase a key ends starts: up to two words before it, each joined to the next by one
/// blank (`API key:`, `seed phrase:`, `next page token:`), so the word before the final one is seen.
fn key_phrase_start(hay: &[u8], key_start: usize) -> usize {
    let word_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    let mut start = key_start;
    for _ in 0..2 {
        if start < 2 || !matches!(hay[start - 1], b' ' | b'\t') {
            break;
        }
        let len = hay[..start - 1]
            .iter()
            .rev()
            .take(32)
            .take_while(|b| word_byte(b))
            .count();
        let word_start = start - 1 - len;
        // A whole word only: not the tail of a longer run, not a run that ends a sentence.
        if len == 0
            || len == 32
            || (word_start > 0 && (word_byte(&hay[word_start - 1]) || hay[word_start - 1] == b'.'))
        {
            break;
        }
        start = word_start;
    }
    start
}

/// Whether `at` directly follows `[REDACTED:`: a key there is the kind of a placeholder this scrubber
/// wrote, not a key.
fn in_placeholder(hay: &[u8], at: usize) -> bool {
    at > 0 && hay[at - 1] == b':' && hay[..at].ends_with(PLACEHOLDER)
}

/// Authorization schemes a quoted header value starts with (`"Bearer <token>"`): the token follows.
const SCHEMES: [&[u8]; 6] = [b"bearer", b"basic", b"token", b"digest", b"ssws", b"apikey"];

/// How a key rule's match joins its key to the value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Joint {
    /// `=`, `:=`, `::=`, `?=`, `+=`, `.=`, `||=`, `??=`, `=>`, or a flag's blanks.
    Assign,
    /// `:` (YAML, JSON, headers): a password after it may be a clause of words.
    Colon,
    /// `,` right after the key (a CSV row `apiToken,VALUE,`): only a random-looking value.
    Comma,
    /// The key then a quoted string and `;` (`private_key "VALUE";`).
    Juxtaposed,
}

/// `: string =` after a key (`apiToken: string = "..."`, `token: &str = "..."`, `key: String =`):
/// where the value starts after the type, or None.
fn after_type(hay: &[u8], at: usize, keys: &KeyPolicy) -> Option<usize> {
    let mut i = at;
    if hay.get(i) == Some(&b'&') {
        i += 1;
    }
    let word = hay[i..]
        .iter()
        .take(24)
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    if word == 0 || !keys.is_type(&hay[i..i + word]) {
        return None;
    }
    i += word;
    while matches!(hay.get(i), Some(b'?' | b'*' | b'[' | b']')) {
        i += 1;
    }
    while matches!(hay.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if hay.get(i) != Some(&b'=') || matches!(hay.get(i + 1), Some(b'=' | b'>' | b'~')) {
        return None;
    }
    i += 1;
    Some(
        i + hay[i..]
            .iter()
            .take(8)
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count(),
    )
}

/// `KEY<sep>value` (or `--key value` when `flag`): the value, if the key is credential-named and the
/// value is not one the policy keeps. `key` is the key's span; the match ends after the separator
/// (`=`, `:`, `:=`, `::=`, `?=`, `+=`, `.=`, `||=`, `??=`, `=>`; `,` or a quote, see [`Joint`]), or,
/// for a flag, after the blanks that follow it. A password after `:` runs to the end of its clause
/// (`password: correct horse battery staple`); every other value is one token, the inside of its
/// quotes, or a YAML block. A weak key ([`KeyHit`]) keeps every value that does not look random.
pub fn assignment(
    hay: &[u8],
    key: (usize, usize),
    me: usize,
    flag: bool,
    (keys, values): (&KeyPolicy, &ValuePolicy),
    memo: &mut Memo,
    cover: Option<&Cover>,
) -> Option<(Value, KeyClass)> {
    let key_byte = |b: u8| b.is_ascii_alphanumeric() || b"_.-".contains(&b);
    // The key must start where its run of key characters starts (not inside a longer name), and not be
    // the kind inside a placeholder this scrubber wrote ([REDACTED:PASSWORD]: ...).
    if (!flag && key.0 > 0 && key_byte(super::scan::byte_before(hay, key.0)))
        || in_placeholder(hay, key.0)
    {
        return None;
    }
    // A flag starts a word of a command line: after a blank, a quote, `(` or at the start.
    if flag
        && key.0 > 0
        && !matches!(
            super::scan::byte_before(hay, key.0),
            b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'(' | b'`'
        )
    {
        return None;
    }
    let mut value_at = me;
    let mut joint = Joint::Assign;
    if !flag {
        let (sep, next) = (hay[me - 1], hay.get(me).copied());
        // The pattern's last alternatives carry their value: `,VALUE` and `"VALUE";`.
        let after_key = key.1
            + hay[key.1..]
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
        if hay.get(key.1) == Some(&b',') {
            joint = Joint::Comma;
            value_at = key.1 + 1;
        } else if matches!((sep, next), (b'=', Some(b'=' | b'~')) | (b':', Some(b':'))) {
            // `password == x`, `token =~ re`, `key::x`: a comparison or a path, not an assignment.
            return None;
        } else {
            match sep {
                // `key => value` (PHP, Ruby): the separator's second byte.
                b'=' if next == Some(b'>') => value_at += 1,
                b'=' => {}
                b':' => joint = Joint::Colon,
                b';' if matches!(hay.get(after_key), Some(b'"' | b'\'')) => {
                    joint = Joint::Juxtaposed;
                    value_at = after_key;
                }
                _ => return None,
            }
        }
        if joint != Joint::Comma {
            let blanks = hay[value_at..]
                .iter()
                .take(8)
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            value_at += blanks;
        }
        if joint == Joint::Colon {
            if let Some(at) = after_type(hay, value_at, keys) {
                value_at = at;
                joint = Joint::Assign;
            }
        }
    }
    let query = key.0 > 0 && matches!(hay[key.0 - 1], b'?' | b'&');
    // A value the last accepted one covers is not read, whatever the key (so before classifying it).
    let may_be_clause = joint == Joint::Colon && hay[key.0] != b'-';
    let covered =
        |mode| cover.is_some_and(|c| c.holds(value_at, !opens_quote(hay, value_at), mode, query));
    if covered(ValueMode::Token) && (!may_be_clause || covered(ValueMode::Clause)) {
        return None;
    }
    let hit = classify_phrase(hay, key, keys, memo)?;
    let class = hit.class;
    let weak = hit.weak || joint == Joint::Comma;
    let clause = class == KeyClass::Password && may_be_clause && !weak;
    let mode = if clause {
        ValueMode::Clause
    } else {
        ValueMode::Token
    };
    if covered(mode) {
        return None;
    }
    let mut value = read_value(hay, value_at, mode, query, memo)?;
    match joint {
        Joint::Comma if value.quoted => return None,
        // `private_key "VALUE";`: a string of one word, and a statement's end after it.
        Joint::Juxtaposed
            if !value.quoted
                || hay.get(value.end + 1) != Some(&b';')
                || hay[value.start..value.end]
                    .iter()
                    .any(u8::is_ascii_whitespace) =>
        {
            return None
        }
        _ => {}
    }
    if value.quoted {
        let text = &hay[value.start..value.end];
        if let Some(scheme) = SCHEMES
            .iter()
            .find(|s| text.len() > s.len() && text[..s.len()].eq_ignore_ascii_case(s))
        {
            let gap = text[scheme.len()..]
                .iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .count();
            if gap > 0 && scheme.len() + gap < text.len() {
                value.start += scheme.len() + gap;
            }
        }
    }
    let text = &hay[value.start..value.end];
    if flag && text.first() == Some(&b'-') {
        return None;
    }
    // `key="Password" value="..."`: a name/value pair's name, not a key's value (name-value-pair).
    if value.quoted
        && hay[key.0..key.1].eq_ignore_ascii_case(b"key")
        && names_a_value(hay, value.end + 1)
    {
        return None;
    }
    if weak {
        if !values.looks_random(text) {
            return None;
        }
    // A value in a URL's query (`?token=abc`) is machine-written: taken as the credential it names.
    } else if values.kept(class, text, value.quoted || query) {
        return None;
    }
    if mode == ValueMode::Clause && !value.quoted {
        // `password: see the wiki`, `password: ask Dana`: a clause that starts by describing.
        let first = &hay[value.start..value.first_end];
        let words = value.first_end < value.end;
        if values.is_placeholder(first) || (words && values.is_prose_lead(first)) {
            return None;
        }
    }
    if !value.quoted && names_its_key(hay, key, &value, keys) {
        return None;
    }
    whole_clause(hay, &mut value, memo);
    Some((value, class))
}

/// Whether an unquoted value names the thing its key names rather than holding it: a CamelCase name
/// holding the key's last word (`pass: PassThroughHandler`, `apiKey: ApiKeyAuth`), or, in code, the
/// key's last word itself (`self.pwd = pwd`, `pw = pw + c`, `open(member, pwd=pwd)`).
fn names_its_key(hay: &[u8], key: (usize, usize), value: &Value, keys: &KeyPolicy) -> bool {
    let text = &hay[value.start..value.end];
    if text.len() <= 64
        && text
            .first()
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
    {
        let words = keys.words(&hay[key.0..key.1]);
        if words
            .last()
            .is_some_and(|w| w.len() >= 2 && text.eq_ignore_ascii_case(w.as_bytes()))
        {
            return true;
        }
    }
    let camel = text.len() <= 64
        && text.first().is_some_and(u8::is_ascii_uppercase)
        && text.iter().all(u8::is_ascii_alphabetic)
        && text.iter().skip(1).any(u8::is_ascii_uppercase)
        && text.iter().any(u8::is_ascii_lowercase);
    if !camel {
        return false;
    }
    let words = keys.words(&hay[key.0..key.1]);
    let Some(last) = words.last().filter(|w| w.len() >= 3) else {
        return false;
    };
    let lower = text.to_ascii_lowercase();
    memchr::memmem::find(&lower, last.as_bytes()).is_some()
}

/// Whether `value=` (or `content=`) follows `at` after blanks: the value of a name/value pair.
fn names_a_value(hay: &[u8], at: usize) -> bool {
    let rest = &hay[at.min(hay.len())..];
    let blanks = rest
        .iter()
        .take(64)
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    let rest = &rest[blanks..];
    blanks > 0
        && [&b"value"[..], b"content"].iter().any(|w| {
            rest.len() > w.len()
                && rest[..w.len()].eq_ignore_ascii_case(w)
                && matches!(rest[w.len()], b'=' | b':')
        })
}

/// How the key at `key` names a credential: the phrase that ends with it first (`my api key`,
/// `var apiToken string`), else the key alone (`Using Key=`: "Using" is prose, not part of the
/// name) unless the phrase refuses it (`next page token`).
fn classify_phrase(
    hay: &[u8],
    key: (usize, usize),
    keys: &KeyPolicy,
    memo: &mut Memo,
) -> Option<KeyHit> {
    let phrase = &hay[key_phrase_start(hay, key.0)..key.1];
    let hit = memo.judge_phrase(keys, phrase)?;
    if phrase.len() == key.1 - key.0 || hit.is_some_and(|h| !h.weak) {
        return hit;
    }
    // The words before the key are prose, not its name, unless they name it strongly: a weak
    // reading of a phrase (`credential to use:`) is no evidence, the key alone decides.
    memo.judge_phrase(keys, &hay[key.0..key.1]).flatten()
}

/// The words a prose rule's key is: its first run of key bytes, and a following ` key`, ` token` or
/// ` secret` (`API key`, `access token`).
fn prose_key(hay: &[u8], ms: usize) -> (usize, usize) {
    let (start, mut end) = key_span(hay, ms);
    if end < hay.len() && matches!(hay[end], b' ' | b'\t') {
        let (s2, e2) = key_span(hay, end + 1);
        let next = hay[s2..e2].to_ascii_lowercase();
        if s2 == end + 1 && matches!(next.as_slice(), b"key" | b"token" | b"secret") {
            end = e2;
        }
    }
    (start, end)
}

/// The verbs that give a key its value with `to` (`set the password to X`, `changed my token to X`).
const SETTING_VERBS: [&[u8]; 14] = [
    b"set",
    b"sets",
    b"setting",
    b"change",
    b"changes",
    b"changed",
    b"changing",
    b"reset",
    b"resets",
    b"update",
    b"updates",
    b"updated",
    b"rotate",
    b"rotated",
];

/// Whether the connector between a prose key and its value is a bare `to` that nothing before the key
/// makes a setting (`a password to access them`, `secure token to django-rest-framework`,
/// `passwords to use`): a purpose, not a value. Up to 6 words within 48 bytes before the key are
/// read for one of [`SETTING_VERBS`].
fn purpose_to(hay: &[u8], key: (usize, usize), value_at: usize) -> bool {
    let between = hay.get(key.1..value_at).unwrap_or_default();
    if !between.trim_ascii().eq_ignore_ascii_case(b"to") {
        return false;
    }
    let from = key.0.saturating_sub(48);
    !hay[from..key.0]
        .split(|b| !b.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .rev()
        .take(6)
        .any(|w| SETTING_VERBS.iter().any(|v| w.eq_ignore_ascii_case(v)))
}

/// Whether a value in running text looks like a token: 20+ bytes, or 12+ with a letter and a digit
/// (so "the key is Ctrl+Shift+P" and "the token is invalid" stay).
fn looks_like_token(v: &[u8]) -> bool {
    v.len() >= 20
        || (v.len() >= 12
            && v.iter().any(u8::is_ascii_alphabetic)
            && v.iter().any(u8::is_ascii_digit))
}

/// The word of an unquoted clause that starts at or after `from` (past blanks), at most `cap` bytes of
/// it: a longer word is no stop word, and reading all of it could cost its length once per key.
fn word_at(text: &[u8], from: usize, cap: usize) -> Option<&[u8]> {
    let start = from
        + text[from..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
    if start >= text.len() {
        return None;
    }
    let len = text[start..]
        .iter()
        .take(cap)
        .take_while(|b| !matches!(b, b' ' | b'\t'))
        .count();
    Some(&text[start..start + len])
}

/// `the password is X` (`passphrase was X Y Z`, `the PIN for the card is 4821`, `my API key is X`):
/// X, unless it describes rather than reveals. A password or PIN is any word the policy does not keep;
/// a token, secret or API key must look like one.
pub fn prose(
    hay: &[u8],
    ms: usize,
    value_at: usize,
    (keys, values): (&KeyPolicy, &ValuePolicy),
    memo: &mut Memo,
    cover: Option<&Cover>,
) -> Option<(Value, KeyClass)> {
    let key = prose_key(hay, ms);
    let before = if key.0 > 0 {
        super::scan::byte_before(hay, key.0)
    } else {
        b' '
    };
    if key.0 > 0 && (before.is_ascii_alphanumeric() || before == b'_') || in_placeholder(hay, key.0)
    {
        return None;
    }
    let class = keys.classify(&hay[key.0..key.1])?;
    if purpose_to(hay, key, value_at) {
        return None;
    }
    let passphrase = hay[key.0..key.1]
        .to_ascii_lowercase()
        .starts_with(b"passphrase");
    let mode = if passphrase {
        ValueMode::Clause
    } else {
        ValueMode::Token
    };
    if cover.is_some_and(|c| c.holds(value_at, !opens_quote(hay, value_at), mode, false)) {
        return None;
    }
    let value = read_value(hay, value_at, mode, false, memo)?;
    let text = &hay[value.start..value.end];
    // "the password is stored in vault": a first word that describes (and, in a clause, a second one
    // too: "stored in", "long and") says what the password is like, not what it is.
    let describes = if value.quoted {
        let mut words = text
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|w| !w.is_empty());
        let first = words.next().unwrap_or_default();
        values.is_prose_stopword(first) && words.next().is_none_or(|w| values.is_prose_stopword(w))
    } else {
        // An unquoted value's words hold no blank: the first ends at `first_end`.
        let cap = values.longest_word() + 2;
        values.is_prose_stopword(&hay[value.start..value.first_end])
            && word_at(text, value.first_end - value.start, cap)
                .is_none_or(|w| values.is_prose_stopword(w))
    };
    if describes || values.kept(class, text, true) {
        return None;
    }
    if !class.digits_are_secret() && !looks_like_token(text) {
        return None;
    }
    let mut value = value;
    whole_clause(hay, &mut value, memo);
    Some((value, class))
}

/// Skip the separators between a key block's lines: spaces, tabs, CR/LF, and `\n` / `\r` escapes.
fn skip_separators(hay: &[u8], mut p: usize) -> usize {
    while p < hay.len() {
        match hay[p] {
            b' ' | b'\t' | b'\r' | b'\n' => p += 1,
            b'\\' => {
                let mut q = p;
                while q < hay.len() && hay[q] == b'\\' && q - p < 3 {
                    q += 1;
                }
                if q < hay.len() && matches!(hay[q], b'n' | b'r') {
                    p = q + 1;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    p
}

/// `-----END ... PRIVATE KEY-----` (or `KEY BLOCK-----`) at `p`: its end.
fn end_marker(hay: &[u8], p: usize) -> Option<usize> {
    let rest = hay.get(p..)?;
    if !rest.starts_with(b"-----END") {
        return None;
    }
    let window = &rest[..rest.len().min(80)];
    let close = window[8..].windows(5).position(|w| w == b"-----")? + 8;
    let label = &window[8..close];
    let plain = label
        .iter()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b' ');
    (plain && (label.ends_with(b"KEY") || label.ends_with(b"KEY BLOCK"))).then_some(p + close + 5)
}

/// A `Name: value` header line at `p` (Proc-Type, DEK-Info, Version, Comment, PuTTY's fields): the
/// end of the line and whether it is PuTTY's closing `Private-MAC`.
fn header_line(hay: &[u8], p: usize) -> Option<(usize, bool)> {
    let rest = &hay[p..];
    if !rest.first()?.is_ascii_alphabetic() {
        return None;
    }
    let name_len = rest
        .iter()
        .take(48)
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-'))?;
    if rest.get(name_len) != Some(&b':')
        || !rest
            .get(name_len + 1)
            .is_some_and(|b| *b == b' ' || *b == b'\t')
    {
        return None;
    }
    let mut i = p + name_len + 1;
    let limit = hay.len().min(p + 512);
    while i < limit
        && !matches!(hay[i], b'\n' | b'\r' | b'"')
        && !(hay[i] == b'\\' && escape_at(hay, i))
    {
        i += 1;
    }
    Some((i, &rest[..name_len] == b"Private-MAC"))
}

fn b64_run(hay: &[u8], p: usize) -> usize {
    hay[p..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        .count()
}

/// A private key block from `start`: past the header (`body_at`), its header lines and base64 lines up
/// to the END marker, or, when truncated, to the last line that is still key material (a run of 16+
/// base64 bytes, a padded run, or a short run right before the END marker), not the prose after it.
/// Real newlines and `\n` escapes (a key inside a JSON string) both separate lines. `putty`: PuTTY's
/// format, whose header lines come between base64 lines and which ends at `Private-MAC`.
///
/// No cap: a block is read to where its key material ends. Past its first base64 line the read depends
/// only on where it stands, so a read that reaches a line end an earlier read passed (a candidate
/// inside a block another candidate read) ends where that read ended ([`Memo`]).
pub fn key_block(hay: &[u8], body_at: usize, putty: bool, memo: &mut Memo) -> usize {
    let limit = hay.len();
    let mut last = body_at;
    let mut headers_allowed = true;
    let mut passed = Vec::new();
    loop {
        if !headers_allowed && !putty {
            if memo.block.0.binary_search(&last).is_ok() {
                last = memo.block.1;
                break;
            }
            passed.push(last);
        }
        let p = skip_separators(hay, last);
        if p >= limit {
            break;
        }
        if let Some(end) = end_marker(hay, p) {
            if !putty {
                last = end;
            }
            break;
        }
        if headers_allowed {
            if let Some((end, mac)) = header_line(hay, p) {
                last = end;
                if mac {
                    break;
                }
                continue;
            }
        }
        let run = b64_run(hay, p);
        if run == 0 {
            break;
        }
        let padded = hay[p] == b'=' || hay[p + run - 1] == b'=';
        let before_end = {
            let q = skip_separators(hay, p + run);
            end_marker(hay, q).is_some() || (putty && header_line(hay, q).is_some())
        };
        if run < 16 && !padded && !before_end {
            break;
        }
        last = p + run;
        headers_allowed = putty;
    }
    if !passed.is_empty() {
        memo.block = (passed, last);
    }
    last
}

/// Extend a token's end over `run` bytes (`inner` bytes only between two run bytes), to the run's
/// end. Whether a byte continues the run depends only on where it is, so the stretch is remembered.
pub fn extend_run(
    hay: &[u8],
    end: usize,
    run: &ByteSet,
    inner: &ByteSet,
    memo: &mut Memo,
) -> usize {
    let len = hay.len();
    memo.run.stop(len, end, |i| {
        let between = inner.contains(hay[i])
            && i + 1 < len
            && run.contains(hay[i + 1])
            && i > 0
            && run.contains(hay[i - 1]);
        !run.contains(hay[i]) && !between
    })
}
