//! The scan: keyword prefilter, each selected rule's regex, the extenders and checks, then one merge.
//!
//! Linear time. Every pattern's repetitions are bounded, so a pattern matches at most `W` bytes
//! (`Rule::max_width`, <= [`MAX_WIDTH`](super::catalogue::MAX_WIDTH)); the `regex` crate finds the
//! leftmost match from a position in `O(m * (d + W))`, where `d` is the distance to that match's start,
//! because no thread of the search outlives its start by more than `W` bytes. The loop below resumes
//! after each match at or past its start + 1 (at its end, or at the start of a refused value), so a
//! rule's whole scan costs `O(m * (n + k * W))` for `k` matches, at most `O(m * n * W)`. Extenders
//! read values, runs and key blocks to their true end (no cap cuts a secret), through one
//! [`Memo`] per rule's scan, so a stretch that many candidates share is read once (see `extend.rs`).
//! `regex`'s own `find_iter` is not used: resuming is the loop's decision, not the iterator's.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use super::catalogue::{Catalogue, Check, Extend, Rule};
use super::extend::{self, Cover, Memo, Value};
use super::keys::{KeyClass, KeyPolicy};
use super::shapes;
use super::values::{made_of_words, ValuePolicy};

/// How every placeholder starts (`[REDACTED:KIND]`).
pub const PLACEHOLDER: &[u8] = b"[REDACTED:";

/// One redaction: a byte span of the scanned text (or a code-point span after
/// [`Detector::to_code_points`]), the rule that found it and the kind its placeholder names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    /// Index of the rule in [`Detector::rules`].
    pub rule: usize,
    /// Index of the kind in [`Detector::kinds`].
    pub kind: usize,
}

/// The compiled catalogue, the keyword automaton and the kind table: built once, shared by every scan.
pub struct Detector {
    rules: Vec<Rule>,
    keys: KeyPolicy,
    values: ValuePolicy,
    kinds: Vec<String>,
    rule_kind: Vec<Option<usize>>,
    class_kind: [usize; 5],
    pub(super) keywords: AhoCorasick,
    keyword_rules: Vec<Vec<usize>>,
    always: Vec<usize>,
    /// For each keyword, its place in the providers' list (a rule whose pattern is the providers'
    /// names reads their places from the keyword pass instead of searching again).
    provider_place: Vec<Option<usize>>,
}

/// What one rule's scan carries into each judgement: the placeholders' positions, what its reads
/// remember, and the value it accepted last.
pub(super) struct Ctx<'a> {
    placeholders: &'a [usize],
    memo: &'a mut Memo,
    cover: Option<&'a Cover>,
}

/// The cover of an accepted key rule's value `start..end` (the finding, after its checks), if it is one
/// word: unquoted (its words hold no blank), or a quoted string without a blank that ends where a
/// nested token would stop too (not at an escaped single quote, `\'`).
fn one_word(hay: &[u8], value: &Value, start: usize, end: usize) -> Option<Cover> {
    let words = if value.quoted {
        !hay[start..end].iter().any(|b| matches!(b, b' ' | b'\t'))
            && !hay[end..].starts_with(b"\\'")
    } else {
        end <= value.first_end
    };
    words.then_some(Cover {
        start,
        end,
        quoted: value.quoted,
        mode: value.mode,
        query: value.query,
    })
}

/// An accepted secret's end, extended over its rule's `tail` (the bytes of the repetition its pattern
/// ends with, for the secret group that matched): a repetition's bound ends the match, not the secret,
/// so a secret longer than the bound is redacted to its true end. Cost: the bytes redacted, once (the
/// scan resumes past an accepted secret). Never over a placeholder this scrubber wrote.
fn tail(rule: &Rule, hay: &[u8], start: usize, mut end: usize, group: usize, ctx: &Ctx) -> usize {
    let Some(set) = rule.tail.get(group).or(rule.tail.last()) else {
        return end;
    };
    let from = end;
    while end < hay.len() && set.contains(hay[end]) {
        end += 1;
    }
    let next = ctx.placeholders.partition_point(|&p| p < from.max(start));
    match ctx.placeholders.get(next) {
        Some(&at) if at < end => at,
        _ => end,
    }
}

/// A secret found in another text of the same record: its bytes, the rule that found it and its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Known {
    pub value: Vec<u8>,
    pub rule: usize,
    pub kind: usize,
}

/// The shortest value whose copies are redacted, in bytes; below [`COPY_WORD`] bytes only copies that
/// stand as words (no letter, digit or `_` on either side) are: a PIN `4821` is redacted in `call
/// 4821`, not in `48210`.
pub const COPY_MIN: usize = 4;
/// The length from which a copy is redacted whatever touches it (a token glued to other text).
pub const COPY_WORD: usize = 8;
/// How many values one copy search looks for at once (Teddy's limit for its fastest form).
pub const COPY_CHUNK: usize = 64;
/// The longest value whose copies are searched, in bytes. A longer secret is a key block, a JWT or a
/// token whose own rule finds every copy; searching for it would cost the automaton its length
/// squared on a periodic value (`'ab' * 4000`: 0.2 s).
pub const COPY_MAX: usize = 256;

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `found` (merged) and every copy of each value it holds, and of each `known` value, merged again.
/// One Aho-Corasick pass, leftmost-longest: linear in the text and the values.
pub fn copies(
    hay: &[u8],
    found: Vec<Finding>,
    known: &[Known],
    placeholders: &[usize],
) -> Vec<Finding> {
    if found.is_empty() && known.is_empty() {
        return found;
    }
    let mut values: Vec<(&[u8], usize, usize)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let own = found.iter().map(|f| (&hay[f.start..f.end], f.rule, f.kind));
    let other = known.iter().map(|k| (k.value.as_slice(), k.rule, k.kind));
    for (value, rule, kind) in own.chain(other) {
        // A value read up to a sentence's mark (`my password is X!`) is searched without it too.
        let bare = value.trim_ascii_end();
        let bare = &bare[..bare.len()
            - bare
                .iter()
                .rev()
                .take_while(|b| matches!(b, b'!' | b'?' | b'.'))
                .count()];
        for v in [value, bare] {
            if (COPY_MIN..=COPY_MAX).contains(&v.len())
                && (v.len() == value.len() || v.len() >= COPY_WORD)
                && seen.insert(v)
            {
                values.push((v, rule, kind));
            }
        }
    }
    if values.is_empty() {
        return found;
    }
    let mut all = found.clone();
    // The values in chunks of COPY_CHUNK, each searched on its own (leftmost-longest, not
    // overlapping): Teddy (SIMD) searches a chunk at several GB/s where an automaton over every value
    // ran at ~250 MB/s; the copies of all chunks are merged. An automaton serves where Teddy cannot.
    for chunk in values.chunks(COPY_CHUNK) {
        let patterns = chunk.iter().map(|v| v.0);
        let teddy = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(patterns.clone())
            .build();
        let automaton = match teddy {
            Some(_) => None,
            None => AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(patterns)
                .ok(),
        };
        let mut at = 0;
        while at < hay.len() {
            let m = match (&teddy, &automaton) {
                (Some(t), _) => t
                    .find_in(
                        hay,
                        aho_corasick::Span {
                            start: at,
                            end: hay.len(),
                        },
                    )
                    .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
                (None, Some(a)) => a
                    .find(aho_corasick::Input::new(hay).span(at..hay.len()))
                    .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
                (None, None) => None,
            };
            let Some((start, end, pattern)) = m else {
                break;
            };
            at = end.max(start + 1);
            let (value, rule, kind) = chunk[pattern];
            if value.len() < COPY_WORD
                && ((start > 0 && word_byte(hay[start - 1]))
                    || (end < hay.len() && word_byte(hay[end])))
            {
                continue;
            }
            if inside_placeholder(hay, start, placeholders) {
                continue;
            }
            all.push(Finding {
                start,
                end,
                rule,
                kind,
            });
        }
    }
    if all.len() == found.len() {
        return found;
    }
    merge(all)
}

/// Public material: a PEM block whose label names no private key (`CERTIFICATE`, `PUBLIC KEY`,
/// `PGP PUBLIC KEY BLOCK`), and an OpenSSH public key's type and body (`ssh-ed25519 AAAA...`,
/// `ecdsa-sha2-nistp256 AAAA...`). Sorted spans; nothing inside one is a secret.
pub fn public_ranges(hay: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // Most texts hold no `-----BEGIN` and no `ssh-`/`ecdsa-`/`sk-` key type: one pass for the bytes
    // those start with rules them out (a finder per needle costs a short text more than its scan).
    let begins = memchr::memmem::find(hay, b"-----BEGIN ").is_some();
    let keys = memchr::memmem::find(hay, b"AAAA").is_some();
    if !begins && !keys {
        return out;
    }
    let mut next_end: Option<usize> = None;
    for at in memchr::memmem::find_iter(if begins { hay } else { &[] }, b"-----BEGIN ") {
        let head = &hay[at + 11..hay.len().min(at + 75)];
        let Some(close) = memchr::memmem::find(head, b"-----") else {
            continue;
        };
        if memchr::memmem::find(&head[..close], b"PRIVATE").is_some() {
            continue;
        }
        // The END marker after `at` (one search serves every BEGIN before it; usize::MAX: none).
        if next_end.is_none_or(|e| e < at) {
            next_end =
                Some(memchr::memmem::find(&hay[at..], b"-----END ").map_or(usize::MAX, |i| at + i));
        }
        let end = match next_end.filter(|&e| e != usize::MAX) {
            Some(e) => {
                let tail = &hay[e + 9..hay.len().min(e + 75)];
                e + 9 + memchr::memmem::find(tail, b"-----").map_or(0, |i| i + 5)
            }
            None => at + 11 + close + 5,
        };
        out.push((at, end));
    }
    let prefixes: &[&[u8]] = if keys {
        &[b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-"]
    } else {
        &[]
    };
    for &prefix in prefixes {
        for at in memchr::memmem::find_iter(hay, prefix) {
            if at > 0 && word_byte(hay[at - 1]) {
                continue;
            }
            let kind = hay[at..]
                .iter()
                .take(48)
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'@' | b'.'))
                .count();
            let body = at + kind + 1;
            if hay.get(at + kind) != Some(&b' ') || !hay[body..].starts_with(b"AAAA") {
                continue;
            }
            let run = hay[body..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
                .count();
            out.push((at, body + run));
        }
    }
    out.sort_unstable();
    out
}

/// Whether `start..end` lies inside one of `ranges` (sorted by start).
fn within(ranges: &[(usize, usize)], start: usize, end: usize) -> bool {
    let i = ranges.partition_point(|r| r.0 <= start);
    ranges[..i].iter().rev().take(4).any(|r| end <= r.1)
}

/// How far from a `data:` block a manifest's `kind: Secret` may be, in bytes.
pub const SECRET_CONTEXT: usize = 4096;

/// Where the lines saying `kind: Secret` (or `"kind": "Secret"`) start, in order.
fn secret_kind_lines(hay: &[u8]) -> Vec<usize> {
    memchr::memmem::find_iter(hay, b"Secret")
        .filter(|&at| {
            // `kind:` is short: look back 32 bytes at most (a long line of "Secret" stays linear).
            let from = at.saturating_sub(32);
            let line = hay[from..at]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(from, |i| from + i + 1);
            let before: Vec<u8> = hay[line..at]
                .iter()
                .filter(|b| !matches!(b, b' ' | b'\t' | b'"' | b'\'' | b'{' | b','))
                .copied()
                .collect();
            let after = hay.get(at + 6).copied();
            before == b"kind:" && after.is_none_or(|b| !b.is_ascii_alphanumeric())
        })
        .collect()
}

/// Whether `window` (at most 128 bytes are read) holds one of `words` (lower-case), ASCII
/// case-insensitive: lower-cased on the stack (this runs once per candidate of a context rule).
fn holds_word<'w>(window: &[u8], words: impl IntoIterator<Item = &'w [u8]>) -> bool {
    let mut buffer = [0u8; 128];
    let n = window.len().min(buffer.len());
    buffer[..n].copy_from_slice(&window[..n]);
    buffer[..n].make_ascii_lowercase();
    words
        .into_iter()
        .any(|w| memchr::memmem::find(&buffer[..n], w).is_some())
}

/// Whether a stretch could hold a provider cue ([`provider_cue`]'s necessary conditions).
fn provider_cue_possible(window: &[u8]) -> bool {
    memchr::memchr2(b'=', b':', window).is_some() || holds_word(window, PROVIDER_NAMES)
}

/// Words that name a credential on the way from a provider's name to a value.
const PROVIDER_NAMES: [&[u8]; 9] = [
    b"key",
    b"token",
    b"secret",
    b"passw",
    b"credential",
    b"auth",
    b"bearer",
    b"apikey",
    b"pwd",
];

/// Whether the stretch from a provider's name to a value assigns the value (`=` or `:` right before
/// it, past quotes and blanks) or names a credential, and labels nothing public (a commit, a hash,
/// an id of a request).
fn provider_cue(gap: &[u8]) -> bool {
    const PUBLIC: [&[u8]; 18] = [
        b"sha",
        b"commit",
        b"hash",
        b"digest",
        b"checksum",
        b"uuid",
        b"guid",
        b"fingerprint",
        b"etag",
        b"request",
        b"trace",
        b"span",
        b"build",
        b"version",
        b"release",
        b"order",
        b"invoice",
        b"transaction",
    ];
    if holds_word(gap, PUBLIC) {
        return false;
    }
    let tail = gap.iter().rev().find(|b| {
        !matches!(
            b,
            b' ' | b'\t' | b'"' | b'\'' | b'`' | b'(' | b'[' | b'\n' | b'\r'
        )
    });
    matches!(tail, Some(b'=' | b':')) || holds_word(gap, PROVIDER_NAMES)
}

/// Shannon entropy of a byte string, in bits per byte.
pub fn entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0usize; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    entropy_of(&counts, bytes.len())
}

/// The entropy of `n` bytes counted in `counts` (the same sum, in the same order, as [`entropy`]).
fn entropy_of(counts: &[usize; 256], n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

fn class_index(class: KeyClass) -> usize {
    KeyClass::ALL.iter().position(|c| *c == class).unwrap_or(0)
}

impl Detector {
    /// Build a detector from catalogue text (TOML).
    pub fn new(source: &str) -> Result<Detector, String> {
        let Catalogue {
            rules,
            keys,
            values,
        } = Catalogue::parse(source)?;
        let mut kinds: Vec<String> = Vec::new();
        let mut intern = |name: &str| match kinds.iter().position(|k| k == name) {
            Some(i) => i,
            None => {
                kinds.push(name.to_string());
                kinds.len() - 1
            }
        };
        let rule_kind = rules
            .iter()
            .map(|r| r.kind.as_deref().map(&mut intern))
            .collect();
        let class_kind = KeyClass::ALL.map(|c| intern(c.name()));
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                always.push(index);
            }
            for keyword in &rule.keywords {
                match words.iter().position(|w| w == keyword) {
                    Some(i) => keyword_rules[i].push(index),
                    None => {
                        words.push(keyword.clone());
                        keyword_rules.push(vec![index]);
                    }
                }
            }
        }
        let provider_place = words
            .iter()
            .map(|w| keys.providers().iter().position(|p| p == w))
            .collect();
        // A DFA: on a 4 MB prose corpus the keyword pass runs ~3x faster than the default NFA
        // (profile_rules in tests.rs), and the automaton is built once per process.
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&words)
            .map_err(|e| format!("keywords: {e}"))?;
        Ok(Detector {
            rules,
            keys,
            values,
            kinds,
            rule_kind,
            class_kind,
            keywords,
            keyword_rules,
            always,
            provider_place,
        })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    pub fn keys(&self) -> &KeyPolicy {
        &self.keys
    }

    pub fn values(&self) -> &ValuePolicy {
        &self.values
    }

    /// The kind a finding names.
    pub fn kind_name(&self, finding: &Finding) -> &str {
        &self.kinds[finding.kind]
    }

    /// Which rules may match: those with a keyword in the text, and those without keywords.
    #[cfg(test)]
    pub(super) fn selected(&self, hay: &[u8], pii: bool) -> Vec<bool> {
        self.selected_with_providers(hay, pii).0
    }

    /// [`Detector::selected`], and where providers' names start (at a word's start): each start
    /// once, with the name that comes first in the providers' list (what the names' alternation,
    /// leftmost-first, matches there), sorted.
    pub(super) fn selected_with_providers(
        &self,
        hay: &[u8],
        pii: bool,
    ) -> (Vec<bool>, Vec<(usize, usize)>) {
        let mut on = vec![false; self.rules.len()];
        for &i in &self.always {
            on[i] = true;
        }
        let mut providers: Vec<(usize, usize, usize)> = Vec::new();
        for m in self.keywords.find_overlapping_iter(hay) {
            for &i in &self.keyword_rules[m.pattern().as_usize()] {
                on[i] = true;
            }
            if let Some(place) = self.provider_place[m.pattern().as_usize()] {
                if m.start() == 0 || !word_byte(hay[m.start() - 1]) {
                    providers.push((m.start(), place, m.end()));
                }
            }
        }
        for (flag, rule) in on.iter_mut().zip(&self.rules) {
            *flag &= pii || !rule.pii;
        }
        providers.sort_unstable();
        providers.dedup_by_key(|p| p.0);
        (on, providers.into_iter().map(|(s, _, e)| (s, e)).collect())
    }

    /// Every credential in `hay` (UTF-8, or WTF-8 for a str with lone surrogates), merged into
    /// non-overlapping byte spans sorted by start. `interrupt` runs before each rule: an error it
    /// returns (Ctrl-C from Python) ends the scan.
    pub fn scan<E>(
        &self,
        hay: &[u8],
        pii: bool,
        interrupt: &mut dyn FnMut() -> Result<(), E>,
    ) -> Result<Vec<Finding>, E> {
        self.scan_with(hay, pii, &[], interrupt)
    }

    /// [`Detector::scan`], and every copy of a secret: each value found (and each of `known`, the
    /// values found in the other texts of the same record) is redacted wherever it occurs in `hay`,
    /// whatever surrounds it ([`copies`]). Findings inside public material (a public key, a
    /// certificate: [`public_ranges`]) are dropped.
    pub fn scan_with<E>(
        &self,
        hay: &[u8],
        pii: bool,
        known: &[Known],
        interrupt: &mut dyn FnMut() -> Result<(), E>,
    ) -> Result<Vec<Finding>, E> {
        let (on, providers) = self.selected_with_providers(hay, pii);
        // Where placeholders this scrubber wrote stand (no secret runs over one): found once.
        let placeholders: Vec<usize> = memchr::memmem::find_iter(hay, PLACEHOLDER).collect();
        let mut found = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            if on[index] {
                interrupt()?;
                let hits = rule.from_providers.then_some(providers.as_slice());
                self.scan_rule_at(index, rule, hay, &placeholders, hits, &mut found);
            }
        }
        let public = public_ranges(hay);
        if !public.is_empty() {
            found.retain(|f| !within(&public, f.start, f.end));
        }
        Ok(copies(hay, merge(found), known, &placeholders))
    }

    /// The rule index of `id`, if the catalogue has it.
    pub fn rule_index(&self, id: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.id == id)
    }

    /// The kind index of `name`, if a rule or a key class names it.
    pub fn kind_index(&self, name: &str) -> Option<usize> {
        self.kinds.iter().position(|k| k == name)
    }

    /// [`Detector::scan`] without an interrupt.
    pub fn scan_bytes(&self, hay: &[u8], pii: bool) -> Vec<Finding> {
        self.scan::<()>(hay, pii, &mut || Ok(()))
            .unwrap_or_default()
    }

    #[cfg(test)]
    pub(super) fn scan_rule(
        &self,
        index: usize,
        rule: &Rule,
        hay: &[u8],
        placeholders: &[usize],
        out: &mut Vec<Finding>,
    ) {
        let providers = rule
            .from_providers
            .then(|| self.selected_with_providers(hay, true).1);
        self.scan_rule_at(index, rule, hay, placeholders, providers.as_deref(), out);
    }

    /// [`Detector::scan_rule`] given, for a rule whose pattern is the providers' names, where they
    /// start (`hits`, from the keyword pass): those stand for its pattern's matches.
    fn scan_rule_at(
        &self,
        index: usize,
        rule: &Rule,
        hay: &[u8],
        placeholders: &[usize],
        hits: Option<&[(usize, usize)]>,
        out: &mut Vec<Finding>,
    ) {
        if rule.extend == Extend::SecretData {
            return self.scan_secret_data(index, rule, hay, out);
        }
        let mut next_hit = 0;
        // Capture groups cost the regex engine its fastest paths: only rules with a named group ask.
        let mut locs = (!rule.secret_groups.is_empty()).then(|| rule.regex.capture_locations());
        let mut memo = Memo::default();
        let mut cover: Option<Cover> = None;
        let mut at = 0;
        while at <= hay.len() {
            let (ms, me, secret, group) = match (hits, locs.as_mut()) {
                (Some(hits), _) => {
                    while next_hit < hits.len() && hits[next_hit].0 < at {
                        next_hit += 1;
                    }
                    let Some(&(s, e)) = hits.get(next_hit) else {
                        break;
                    };
                    (s, e, (s, e), 0)
                }
                (None, None) => {
                    let Some(m) = rule.regex.find_at(hay, at) else {
                        break;
                    };
                    (m.start(), m.end(), (m.start(), m.end()), 0)
                }
                (None, Some(locs)) => {
                    let Some(m) = rule.regex.captures_read_at(locs, hay, at) else {
                        break;
                    };
                    let secret = rule
                        .secret_groups
                        .iter()
                        .enumerate()
                        .find_map(|(k, &g)| locs.get(g).map(|span| (span, k)));
                    let (span, group) = secret.unwrap_or(((m.start(), m.end()), 0));
                    (m.start(), m.end(), span, group)
                }
            };
            let mut ctx = Ctx {
                placeholders,
                memo: &mut memo,
                cover: cover.as_ref(),
            };
            match self.judge(rule, hay, (ms, me), secret, group, &mut ctx) {
                Some((start, end, kind, value)) => {
                    let kind = kind.or(self.rule_kind[index]).unwrap_or(self.class_kind[4]);
                    out.push(Finding {
                        start,
                        end,
                        rule: index,
                        kind,
                    });
                    // A key rule's one-word value may be the next key (`?key=X-Auth-Key: ...`): the
                    // search goes on from the value's start (a nested finding merges into this one),
                    // and a nested key whose value could not reach past this one is not read
                    // ([`Cover`]). A clause of words is not searched again (`'password: ' * n` would
                    // read each clause up to 16 times).
                    at = match value.and_then(|v| one_word(hay, &v, start, end)) {
                        Some(c) => {
                            cover = Some(c);
                            start
                        }
                        None => end.max(me),
                    };
                }
                None => at = if secret.0 > ms { secret.0 } else { me },
            }
            at = at.max(ms + 1);
        }
    }

    /// A Kubernetes Secret's `data:` / `stringData:` blocks: every value, when the manifest says
    /// `kind: Secret` within [`SECRET_CONTEXT`] bytes of the block (a ConfigMap's data is no secret).
    /// Each block is read once; the search resumes past it.
    fn scan_secret_data(&self, index: usize, rule: &Rule, hay: &[u8], out: &mut Vec<Finding>) {
        let kinds: Vec<usize> = secret_kind_lines(hay);
        if kinds.is_empty() {
            return;
        }
        let kind = self.rule_kind[index].unwrap_or(self.class_kind[4]);
        let mut at = 0;
        while let Some(m) = rule.regex.find_at(hay, at) {
            // The header line starts after the match's leading newline.
            let line = m.start() + 1;
            let header = hay[line..]
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let (found, end) = shapes::secret_data(hay, header, m.end());
            let from = line.saturating_sub(SECRET_CONTEXT);
            let first = kinds.partition_point(|&k| k < from);
            if kinds.get(first).is_some_and(|&k| k <= end + SECRET_CONTEXT) {
                // A value this scrubber wrote (`password: [REDACTED:...]`) is no secret: scrubbing
                // twice changes nothing.
                let found = found
                    .into_iter()
                    .filter(|&(start, _)| !hay[start..].starts_with(PLACEHOLDER));
                out.extend(found.map(|(start, end)| Finding {
                    start,
                    end,
                    rule: index,
                    kind,
                }));
            }
            at = end.max(m.end() - 1).max(m.start() + 1);
        }
    }

    /// The secret's span, (for key rules) its kind and the value read, or None when a check refuses
    /// the match. `group`: which of the rule's secret groups matched.
    fn judge(
        &self,
        rule: &Rule,
        hay: &[u8],
        (ms, me): (usize, usize),
        (start, end): (usize, usize),
        group: usize,
        ctx: &mut Ctx,
    ) -> Option<(usize, usize, Option<usize>, Option<Value>)> {
        // A match that starts inside a placeholder this scrubber wrote ([REDACTED:API_KEY] holds "KEY")
        // is no context and no key: scrubbing twice changes nothing.
        if inside_placeholder(hay, ms, ctx.placeholders) {
            return None;
        }
        if !rule.line_context.is_empty() && !on_line_after(hay, ms, &rule.line_context) {
            return None;
        }
        if !rule.public_labels.is_empty() && labelled_public(hay, ms, &rule.public_labels) {
            return None;
        }
        let class = |class: KeyClass| Some(self.class_kind[class_index(class)]);
        let policy = (&self.keys, &self.values);
        let (start, end, kind, value) = match rule.extend {
            Extend::None => (start, end, None, None),
            Extend::Assignment | Extend::Flag => {
                let flag = rule.extend == Extend::Flag;
                let mut key = extend::key_span(hay, ms);
                if rule.key_before {
                    let floor = key.0.saturating_sub(super::catalogue::KEY_BEFORE);
                    while key.0 > floor
                        && (hay[key.0 - 1].is_ascii_alphanumeric()
                            || b"_.-".contains(&hay[key.0 - 1]))
                    {
                        key.0 -= 1;
                    }
                }
                let (v, c) = extend::assignment(hay, key, me, flag, policy, ctx.memo, ctx.cover)?;
                (v.start, v.end, class(c), Some(v))
            }
            Extend::Prose => {
                let (v, c) = extend::prose(hay, ms, me, policy, ctx.memo, ctx.cover)?;
                (v.start, v.end, class(c), Some(v))
            }
            Extend::PemBlock => {
                let body_at = if hay[ms..].starts_with(b"-----BEGIN") {
                    me
                } else {
                    start
                };
                // Refusals that do not depend on the block's end come before reading it.
                if (start > 0 && rule.before.contains(byte_before(hay, start)))
                    || inside_placeholder(hay, start, ctx.placeholders)
                {
                    return None;
                }
                let end = extend::key_block(hay, body_at, false, ctx.memo);
                (start, end, None, None)
            }
            Extend::PuttyBlock => {
                let end = extend::key_block(hay, start, true, ctx.memo);
                (start, end, None, None)
            }
            Extend::Element => {
                let (v, c) = shapes::element(hay, (ms, me), policy)?;
                (v.start, v.end, class(c), Some(v))
            }
            Extend::Attribute => {
                let (v, c) = shapes::attribute(hay, ms, me, policy, ctx.memo)?;
                (v.start, v.end, class(c), Some(v))
            }
            // Read in scan_rule: a block gives many values.
            Extend::SecretData => return None,
        };
        let Some(near) = &rule.near else {
            let (s, e) = self.check(rule, hay, start, end, ctx)?;
            return Some((s, tail(rule, hay, s, e, group, ctx), kind, value));
        };
        // The secret is the first match of `near` within `within` bytes after the context, on its line,
        // that passes the checks. Matches are taken one after another, not overlapping: a start inside
        // a refused match would sit inside a run of the same bytes, which the boundary refuses anyway
        // (and retrying every byte of a 512-byte run made 'tokens=' * n cost 32 x 512 per hit).
        let limit = hay.len().min(me + near.within + near.max_width);
        // A provider's name with no `=`, `:` or credential word in the stretch after it cannot cue a
        // value: most mentions of a provider in prose end here.
        if rule.check == Check::ProviderValue
            && !provider_cue_possible(&hay[me..hay.len().min(me + near.within)])
        {
            return None;
        }
        let mut pos = me;
        while let Some(m) = near.regex.find_at(&hay[..limit], pos) {
            // Not past the distance, a line break (unless the rule crosses lines), or a placeholder
            // (what it stood for was the value).
            let gap = &hay[me..m.start()];
            if m.start() > me + near.within
                || (!near.lines && gap.iter().any(|b| matches!(b, b'\n' | b'\r')))
                || memchr::memmem::find(gap, PLACEHOLDER).is_some()
            {
                break;
            }
            // The value's checks (cheap for a plain word: it has no digit) before the stretch's cue.
            if let Some((s, e)) = self.check(rule, hay, m.start(), m.end(), ctx) {
                if rule.check != Check::ProviderValue || provider_cue(&hay[me..s]) {
                    return Some((s, tail(rule, hay, s, e, 0, ctx), kind, value));
                }
            }
            pos = m.end().max(m.start() + 1);
        }
        None
    }

    /// The checks every candidate meets: its long tail, no placeholder inside, its boundaries, digits,
    /// entropy, placeholder and shape. The span it passes with, or None.
    fn check(
        &self,
        rule: &Rule,
        hay: &[u8],
        mut start: usize,
        mut end: usize,
        ctx: &mut Ctx,
    ) -> Option<(usize, usize)> {
        if let Some((run, inner)) = &rule.run {
            end = extend::extend_run(hay, end, run, inner, ctx.memo);
        }
        if let Some(set) = &rule.run_before {
            let floor = start.saturating_sub(super::catalogue::MAX_RUN_BEFORE);
            while start > floor && set.contains(hay[start - 1]) {
                start -= 1;
            }
        }
        // A placeholder this scrubber wrote is never part of a secret, nor is the inside of one:
        // scrubbing twice changes nothing.
        let next = ctx.placeholders.partition_point(|&p| p < start);
        if let Some(&at) = ctx.placeholders.get(next) {
            if at + PLACEHOLDER.len() <= end {
                end = at;
            }
        }
        if inside_placeholder(hay, start, ctx.placeholders) {
            return None;
        }
        if end <= start {
            return None;
        }
        if (start > 0 && rule.before.contains(byte_before(hay, start)))
            || (end < hay.len() && rule.boundary.contains(hay[end]))
        {
            return None;
        }
        let secret = &hay[start..end];
        // Digits, cases and entropy from byte counts, which candidates inside one long run (a token's
        // tail) share: each is not counted again from its start ([`Memo::counts`]).
        let counts = (rule.digits || rule.mixed || rule.entropy.is_some())
            .then(|| *ctx.memo.counts(hay, start, end));
        let has = |range: std::ops::RangeInclusive<u8>| {
            counts.is_some_and(|c| range.clone().any(|b| c[b as usize] > 0))
        };
        if rule.digits && !has(b'0'..=b'9') {
            return None;
        }
        // The cheap shape checks before the entropy count (every check must pass; the order is speed).
        if rule.check == Check::RandomBody && !random_body(secret) {
            return None;
        }
        if let (Some(min), Some(c)) = (rule.entropy, counts.as_ref()) {
            if entropy_of(c, end - start) < min {
                return None;
            }
        }
        if rule.placeholder && self.values.is_placeholder(secret) {
            return None;
        }
        if rule.generated && (!self.values.looks_generated(secret) || made_of_words(secret, false))
        {
            return None;
        }
        if rule.mixed && !(has(b'A'..=b'Z') && has(b'a'..=b'z') && has(b'0'..=b'9')) {
            return None;
        }
        if has_public_prefix(secret, &rule.public_prefixes) {
            return None;
        }
        match rule.check {
            Check::None => {}
            Check::UrlPassword => {
                // host:8080/path@x is a port and a path, not a password.
                let digits = secret.iter().take_while(|b| b.is_ascii_digit()).count();
                if (1..=5).contains(&digits) && secret.get(digits) == Some(&b'/') {
                    return None;
                }
            }
            Check::RandomBody => {} // checked above
            Check::GithubCrc32 => {
                if !github_checksum(secret) {
                    return None;
                }
            }
            Check::ProviderValue | Check::RandomValue => {
                if !self.values.looks_random(secret) {
                    return None;
                }
            }
        }
        Some((start, end))
    }

    /// Map byte spans of `hay` to code-point spans (each UTF-8 / WTF-8 sequence is one code point, as a
    /// Python str counts it). A span that starts or ends inside a sequence takes the whole code point.
    /// `found` must be sorted and non-overlapping, as [`Detector::scan`] returns it.
    pub fn to_code_points(hay: &[u8], found: &mut [Finding]) {
        if hay.is_ascii() {
            return;
        }
        let lead = |b: &u8| (*b as i8) >= -0x40;
        let (mut byte, mut cp) = (0usize, 0usize);
        for f in found.iter_mut() {
            cp += hay[byte..f.start].iter().filter(|b| lead(b)).count();
            byte = f.start;
            let start_cp = if f.start < hay.len() && !lead(&hay[f.start]) {
                cp - 1
            } else {
                cp
            };
            cp += hay[byte..f.end].iter().filter(|b| lead(b)).count();
            byte = f.end;
            f.start = start_cp;
            f.end = cp;
        }
    }
}

/// The byte a reader sees right before `at`. An escape that ends there (`\n`, `\t`, `\u0022`,
/// `\x22`, `%22`) stands for what it encodes (a newline for the letter escapes, `0x80` for a code
/// point past ASCII), so a token that follows an escaped quote or newline inside JSON text, or a
/// %-encoded delimiter in a URL, is not taken as glued to the escape's last letter or digit.
pub fn byte_before(hay: &[u8], at: usize) -> u8 {
    let hex = |b: u8| (b as char).to_digit(16);
    let hex_value = |digits: &[u8]| {
        digits
            .iter()
            .try_fold(0u32, |acc, &b| hex(b).map(|d| acc * 16 + d))
    };
    if at >= 6 && hay[at - 6] == b'\\' && hay[at - 5] == b'u' {
        if let Some(cp) = hex_value(&hay[at - 4..at]) {
            return if cp < 0x80 { cp as u8 } else { 0x80 };
        }
    }
    if at >= 4 && hay[at - 4] == b'\\' && hay[at - 3] == b'x' {
        if let Some(byte) = hex_value(&hay[at - 2..at]) {
            return byte as u8;
        }
    }
    if at >= 3 && hay[at - 3] == b'%' {
        if let Some(byte) = hex_value(&hay[at - 2..at]) {
            return byte as u8;
        }
    }
    let last = hay[at - 1];
    if at >= 2 && hay[at - 2] == b'\\' && matches!(last, b'n' | b'r' | b't' | b'b' | b'f' | b'v') {
        return b'\n';
    }
    last
}

/// Whether `secret` starts with one of `prefixes` (lower-case) and then `_`, `-` or `.`, in any case:
/// the shape of a public identifier (`cus_`, `msg_`, `sha512-`) rather than of a key.
fn has_public_prefix(secret: &[u8], prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| {
        let p = p.as_bytes();
        secret.len() > p.len()
            && secret[..p.len()].eq_ignore_ascii_case(p)
            && matches!(secret[p.len()], b'_' | b'-' | b'.')
    })
}

/// How long a vendor prefix may be, in bytes.
pub const RANDOM_PREFIX: std::ops::RangeInclusive<usize> = 2..=16;
/// The shortest random part a mixed-case body needs, in bytes.
pub const RANDOM_MIN_MIXED: usize = 20;
/// The shortest random part a one-case body needs (one run of letters and digits), in bytes.
pub const RANDOM_MIN_ONE_CASE: usize = 32;

/// Whether the part of `secret` after its first `_` or `-` (the vendor's prefix, 2-16 bytes, is
/// public) looks random rather than like words. A mixed-case body needs 20+ bytes, an upper- and a lower-case letter
/// and a digit, and a change of class (upper, lower, digit) between at least 30% of its neighbouring
/// letters and digits: random alphanumerics change class ~62% of the time, words and CamelCase
/// identifiers 10-25% (benches/bench_scrub.py --false-positives measures it on real text). A one-case
/// body (`a-z0-9` or `A-Z0-9`) needs a run of 32+ letters and digits holding both, with an entropy
/// above 4 bits per byte, which hex (16 symbols) cannot reach: digests and ids stay.
pub fn random_body(secret: &[u8]) -> bool {
    let Some(sep) = secret.iter().position(|b| matches!(b, b'_' | b'-')) else {
        return false;
    };
    if !(RANDOM_PREFIX.contains(&sep)) {
        return false;
    }
    let body = &secret[sep + 1..];
    let class = |b: u8| match b {
        b'A'..=b'Z' => 0,
        b'a'..=b'z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    };
    let mut counts = [0usize; 4];
    let (mut pairs, mut changes, mut prev) = (0usize, 0usize, 3);
    let (mut run_start, mut longest) = (0usize, (0usize, 0usize));
    for (i, &b) in body.iter().enumerate() {
        let c = class(b);
        counts[c] += 1;
        if c != 3 && prev != 3 {
            pairs += 1;
            changes += usize::from(c != prev);
        }
        if c == 3 {
            run_start = i + 1;
        } else if i + 1 - run_start > longest.1 - longest.0 {
            longest = (run_start, i + 1);
        }
        prev = c;
    }
    let [upper, lower, digits, _] = counts;
    if digits == 0 || upper + lower == 0 {
        return false;
    }
    if upper > 0 && lower > 0 {
        return body.len() >= RANDOM_MIN_MIXED && 10 * changes >= 3 * pairs;
    }
    // One case: its longest run of letters and digits carries the randomness (`_token` may follow).
    let run = &body[longest.0..longest.1];
    run.len() >= RANDOM_MIN_ONE_CASE
        && run.iter().any(u8::is_ascii_digit)
        && run.iter().any(u8::is_ascii_alphabetic)
        && entropy(run) > 4.0
}

/// CRC-32 (IEEE 802.3, reflected), bit by bit: a token's 30 bytes, once per candidate.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Whether a GitHub token's last 6 characters are the base62 (`0-9A-Za-z`) CRC32 of the 30 random
/// characters after its `gh?_` prefix, zero-padded: GitHub's own check that a token is well formed.
pub fn github_checksum(token: &[u8]) -> bool {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let Some(body) = token.get(4..) else {
        return false;
    };
    if body.len() != 36 {
        return false;
    }
    let (random, check) = body.split_at(30);
    let mut n = crc32(random);
    let mut want = [b'0'; 6];
    for slot in want.iter_mut().rev() {
        *slot = DIGITS[(n % 62) as usize];
        n /= 62;
    }
    n == 0 && want == check
}

/// Whether `at` lies inside a placeholder (`[REDACTED:KIND]`, its kind at most 48 bytes), past its
/// first byte.
fn inside_placeholder(hay: &[u8], at: usize, placeholders: &[usize]) -> bool {
    // `placeholders`: every occurrence in `hay`, sorted (they cannot overlap: `[` starts the prefix
    // and occurs nowhere else in it).
    let from = at.saturating_sub(PLACEHOLDER.len() + 48);
    let first = placeholders.partition_point(|&p| p < from);
    placeholders[first..]
        .iter()
        .take_while(|&&p| p < at)
        .any(|&i| !hay[i + 1..at].contains(&b']'))
}

/// Whether one of `words` (lower-case) occurs before `at` on its line, within
/// [`LINE_CONTEXT`](super::catalogue::LINE_CONTEXT) bytes (ASCII case-insensitive).
fn on_line_after(hay: &[u8], at: usize, words: &[String]) -> bool {
    let from = at.saturating_sub(super::catalogue::LINE_CONTEXT);
    let line_start = hay[from..at]
        .iter()
        .rposition(|b| matches!(b, b'\n' | b'\r'))
        .map_or(from, |i| from + i + 1);
    let window = hay[line_start..at].to_ascii_lowercase();
    words
        .iter()
        .any(|w| memchr::memmem::find(&window, w.as_bytes()).is_some())
}

/// Whether one of `labels` (lower-case) occurs within
/// [`LABEL_BEFORE`](super::catalogue::LABEL_BEFORE) bytes before `at`, on its line.
fn labelled_public(hay: &[u8], at: usize, labels: &[String]) -> bool {
    let from = at.saturating_sub(super::catalogue::LABEL_BEFORE);
    let line_start = hay[from..at]
        .iter()
        .rposition(|b| matches!(b, b'\n' | b'\r'))
        .map_or(from, |i| from + i + 1);
    holds_word(&hay[line_start..at], labels.iter().map(String::as_bytes))
}

/// Overlapping findings merge into their union: nothing of either survives. The union's rule and kind
/// are those of the member whose rule comes first in the catalogue (the catalogue runs from specific
/// shapes to generic families, so `api_key: sk-proj-...` stays OPENAI_API_KEY). Spans that only touch
/// stay apart. The result is sorted by start.
pub fn merge(mut found: Vec<Finding>) -> Vec<Finding> {
    found.sort_unstable_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.rule.cmp(&b.rule))
    });
    let mut out: Vec<Finding> = Vec::with_capacity(found.len());
    for f in found {
        match out.last_mut() {
            Some(last) if f.start < last.end => {
                last.end = last.end.max(f.end);
                if f.rule < last.rule {
                    last.rule = f.rule;
                    last.kind = f.kind;
                }
            }
            _ => out.push(f),
        }
    }
    out
}
