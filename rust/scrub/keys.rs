//! Credential-named keys and the values they may keep.
//!
//! A key is credential-named by its words, and its FINAL word decides: `client_secret`, `apiKey`,
//! `x-api-key`, `db_pass`, `private_key_id` are; `password_min_length`, `token_count`, `max_tokens`,
//! `secret_manager` are not. The word lists live in the catalogue's `[keys]` table; the pure-Python
//! fallback (`memdedup.scrub`) implements the same steps over the same table.

use smallvec::SmallVec;

use super::catalogue::{RawKeys, RawValues};

/// A small, fixed map from words to values: open addressing on an FNV-1a hash. The key tables hold a
/// few dozen short words and are read once or more per candidate key: SipHash (std's HashMap) was
/// ~10% of a scan of 4 MB of JSON keys, bisection's string compares ~30% of a scan of 150 K
/// candidate keys (perf, profile_rules); a hash of a few bytes and, usually, one compare is neither.
pub struct WordMap<V> {
    slots: Vec<Option<(u64, String, V)>>,
    mask: usize,
}

fn fnv1a(word: &[u8]) -> u64 {
    word.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl<V> WordMap<V> {
    /// The map of `entries`; a word listed twice keeps its first value.
    fn new(entries: Vec<(String, V)>) -> WordMap<V> {
        let size = (entries.len() * 2).next_power_of_two().max(8);
        let mut map = WordMap {
            slots: (0..size).map(|_| None).collect(),
            mask: size - 1,
        };
        for (word, value) in entries {
            let hash = fnv1a(word.as_bytes());
            let mut i = hash as usize & map.mask;
            loop {
                match &map.slots[i] {
                    None => {
                        map.slots[i] = Some((hash, word, value));
                        break;
                    }
                    Some((_, w, _)) if *w == word => break,
                    Some(_) => i = (i + 1) & map.mask,
                }
            }
        }
        map
    }

    pub fn get(&self, word: &str) -> Option<&V> {
        let hash = fnv1a(word.as_bytes());
        let mut i = hash as usize & self.mask;
        loop {
            match &self.slots[i] {
                None => return None,
                Some((h, w, v)) if *h == hash && w == word => return Some(v),
                Some(_) => i = (i + 1) & self.mask,
            }
        }
    }

    pub fn contains(&self, word: &str) -> bool {
        self.get(word).is_some()
    }

    fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
}

impl<V> FromIterator<(String, V)> for WordMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> WordMap<V> {
        WordMap::new(iter.into_iter().collect())
    }
}

/// A small set of words.
pub type WordSet = WordMap<()>;

fn word_set(words: Vec<String>) -> WordSet {
    words.into_iter().map(|w| (w, ())).collect()
}

/// What a credential-named key holds, and so the kind its value is redacted as.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum KeyClass {
    Password,
    Pin,
    Token,
    ApiKey,
    Secret,
}

impl KeyClass {
    pub const ALL: [KeyClass; 5] = [
        KeyClass::Password,
        KeyClass::Pin,
        KeyClass::Token,
        KeyClass::ApiKey,
        KeyClass::Secret,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KeyClass::Password => "PASSWORD",
            KeyClass::Pin => "PIN",
            KeyClass::Token => "TOKEN",
            KeyClass::ApiKey => "API_KEY",
            KeyClass::Secret => "SECRET",
        }
    }

    pub fn parse(name: &str) -> Result<KeyClass, String> {
        KeyClass::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| format!("catalogue: unknown key class {name:?}"))
    }

    /// Digits are the secret itself (a PIN, a numeric password): no number is kept under these.
    pub fn digits_are_secret(self) -> bool {
        matches!(self, KeyClass::Password | KeyClass::Pin)
    }
}

struct After {
    class: KeyClass,
    words: WordSet,
    classes: WordMap<KeyClass>,
    after_credential: bool,
}

/// The `[keys]` table, ready to classify.
pub struct KeyPolicy {
    suffixes: Vec<String>,
    final_words: WordMap<KeyClass>,
    after: WordMap<After>,
    not_after: WordMap<WordSet>,
    compounds: WordMap<Vec<String>>,
}

fn is_lower(b: u8) -> bool {
    b.is_ascii_lowercase()
}

fn is_upper(b: u8) -> bool {
    b.is_ascii_uppercase()
}

/// Where the raw words of a key name are: maximal ASCII alphanumeric runs, split at camelCase humps
/// (`apiKey` -> api Key, `APIKey` -> API Key, `S3Bucket` -> S3 Bucket).
fn word_bounds(name: &[u8]) -> SmallVec<[(usize, usize); 8]> {
    let mut bounds = SmallVec::new();
    let mut i = 0;
    while i < name.len() {
        if !name[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < name.len() && name[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let mut piece = start;
        for j in start + 1..i {
            let (prev, cur) = (name[j - 1], name[j]);
            let hump = ((is_lower(prev) || prev.is_ascii_digit()) && is_upper(cur))
                || (is_upper(prev) && is_upper(cur) && j + 1 < i && is_lower(name[j + 1]));
            if hump {
                bounds.push((piece, j));
                piece = j;
            }
        }
        bounds.push((piece, i));
    }
    bounds
}

/// The raw words of a key name (see [`word_bounds`]), lower-cased.
pub fn split_words(name: &[u8]) -> Vec<String> {
    word_bounds(name)
        .into_iter()
        .map(|(s, e)| String::from_utf8_lossy(&name[s..e]).to_ascii_lowercase())
        .collect()
}

impl KeyPolicy {
    pub(crate) fn from_raw(raw: RawKeys) -> Result<KeyPolicy, String> {
        let mut final_words = Vec::new();
        for (class, words) in raw.final_words {
            let class = KeyClass::parse(&class)?;
            final_words.extend(words.into_iter().map(|w| (w, class)));
        }
        let mut after = Vec::new();
        for (word, a) in raw.after {
            let classes = a
                .kinds
                .into_iter()
                .map(|(w, k)| Ok((w, KeyClass::parse(&k)?)))
                .collect::<Result<WordMap<_>, String>>()?;
            let class = KeyClass::parse(&a.kind)?;
            after.push((
                word,
                After {
                    class,
                    words: word_set(a.words),
                    classes,
                    after_credential: a.after_credential,
                },
            ));
        }
        let count = final_words.len();
        let final_words = WordMap::new(final_words);
        if final_words.len() != count {
            return Err("catalogue: a word is listed under two classes in [keys.final]".into());
        }
        Ok(KeyPolicy {
            suffixes: raw.suffixes,
            final_words,
            after: WordMap::new(after),
            not_after: raw
                .not_after
                .into_iter()
                .map(|(w, l)| (w, word_set(l)))
                .collect(),
            compounds: raw.compounds.into_iter().collect(),
        })
    }

    /// The words a key is judged by, borrowed from `lower` (the name lower-cased) and the policy:
    /// [`split_words`], then one-word concatenations split (`apikey` -> api key, `pgpassword` -> pg
    /// password). No allocation for names of up to 8 words.
    fn expand<'a>(&'a self, name: &[u8], lower: &'a [u8]) -> SmallVec<[&'a str; 8]> {
        let mut out = SmallVec::new();
        for (start, end) in word_bounds(name) {
            // Alphanumeric ASCII only: always UTF-8.
            let word = std::str::from_utf8(&lower[start..end]).unwrap_or_default();
            if let Some(parts) = self.compounds.get(word) {
                out.extend(parts.iter().map(String::as_str));
                continue;
            }
            match self
                .suffixes
                .iter()
                .find(|s| word.len() > s.len() && word.ends_with(s.as_str()))
            {
                Some(suffix) => {
                    out.push(&word[..word.len() - suffix.len()]);
                    out.push(suffix.as_str());
                }
                None => out.push(word),
            }
        }
        out
    }

    /// The words a key is judged by, as strings.
    pub fn words(&self, name: &[u8]) -> Vec<String> {
        let lower = name.to_ascii_lowercase();
        self.expand(name, &lower)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The class of a credential-named key, or None.
    pub fn classify(&self, name: &[u8]) -> Option<KeyClass> {
        // Key rules read at most ~100 bytes of key; a longer name takes the heap.
        let mut buffer = [0u8; 128];
        let heap;
        let lower: &[u8] = if name.len() <= buffer.len() {
            buffer[..name.len()].copy_from_slice(name);
            buffer[..name.len()].make_ascii_lowercase();
            &buffer[..name.len()]
        } else {
            heap = name.to_ascii_lowercase();
            &heap
        };
        let words = self.expand(name, lower);
        self.classify_words(&words)
    }

    fn classify_words(&self, words: &[&str]) -> Option<KeyClass> {
        let last = *words.last()?;
        let prev = if words.len() >= 2 {
            words[words.len() - 2]
        } else {
            ""
        };
        if self.not_after.get(last).is_some_and(|l| l.contains(prev)) {
            return None;
        }
        if let Some(&class) = self.final_words.get(last) {
            return Some(class);
        }
        let after = self.after.get(last)?;
        if after.words.contains(prev) {
            return Some(after.classes.get(prev).copied().unwrap_or(after.class));
        }
        if after.after_credential && words.len() >= 3 {
            return self.classify_words(&words[..words.len() - 1]);
        }
        None
    }
}

/// The `[values]` table: which values a credential-named key keeps.
pub struct ValuePolicy {
    placeholders: WordSet,
    mask_chars: Vec<char>,
    mask_min_len: usize,
    max_kept_digits: usize,
    template_prefixes: Vec<String>,
    /// The first bytes of the template prefixes: most values start with none of them.
    template_first: [bool; 256],
    prose_stopwords: WordSet,
    /// The longest prose stop word or placeholder word, in bytes.
    longest: usize,
}

fn trim_ascii(mut v: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = v {
        if first.is_ascii_whitespace() {
            v = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = v {
        if last.is_ascii_whitespace() {
            v = rest;
        } else {
            break;
        }
    }
    v
}

/// `$NAME` or `%NAME%`: a reference to an environment variable, not its value.
fn is_env_reference(v: &[u8]) -> bool {
    let ident = |s: &[u8]| {
        !s.is_empty()
            && (s[0].is_ascii_alphabetic() || s[0] == b'_')
            && s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    match v {
        [b'$', rest @ ..] => ident(rest),
        [b'%', middle @ .., b'%'] => ident(middle),
        _ => false,
    }
}

/// The longest placeholder word or template prefix.
const HEAD: usize = 32;

impl ValuePolicy {
    pub(crate) fn from_raw(raw: RawValues) -> Result<ValuePolicy, String> {
        if raw
            .placeholders
            .iter()
            .chain(&raw.template_prefixes)
            .chain(&raw.prose_stopwords)
            .any(|w| w.len() > HEAD || w.to_ascii_lowercase() != *w || !w.is_ascii())
        {
            return Err(format!("catalogue: placeholders, template prefixes and prose stop words are lower-case ASCII, at most {HEAD} bytes"));
        }
        let longest = raw
            .placeholders
            .iter()
            .chain(&raw.prose_stopwords)
            .map(String::len)
            .max()
            .unwrap_or(0);
        Ok(ValuePolicy {
            longest,
            placeholders: word_set(raw.placeholders),
            mask_chars: raw.mask_chars.chars().collect(),
            mask_min_len: raw.mask_min_len,
            max_kept_digits: raw.max_kept_digits,
            template_first: {
                let mut first = [false; 256];
                for p in &raw.template_prefixes {
                    if let Some(&b) = p.as_bytes().first() {
                        first[b as usize] = true;
                    }
                }
                first
            },
            template_prefixes: raw.template_prefixes,
            prose_stopwords: word_set(raw.prose_stopwords),
        })
    }

    /// A value that names or masks a credential rather than holding one: empty, a placeholder word,
    /// a mask (`***`), a template (`<token>`, `{{ x }}`, `${X}`, `your_api_key`), an environment
    /// reference (`$TOKEN`, `%TOKEN%`) or a placeholder this scrubber wrote.
    pub fn is_placeholder(&self, value: &[u8]) -> bool {
        let mut v = trim_ascii(value);
        if let [q @ (b'"' | b'\''), inner @ .., last] = v {
            if q == last {
                v = trim_ascii(inner);
            }
        }
        if v.is_empty() {
            return true;
        }
        // Every placeholder word and template prefix is shorter than HEAD (from_raw checks): lower-case
        // that much on the stack, not the whole value on the heap (this runs once per candidate value).
        let mut buf = [0u8; HEAD];
        let n = v.len().min(HEAD);
        buf[..n].copy_from_slice(&v[..n]);
        buf[..n].make_ascii_lowercase();
        let head = &buf[..n];
        if v.len() <= HEAD && std::str::from_utf8(head).is_ok_and(|w| self.placeholders.contains(w))
        {
            return true;
        }
        if self.template_first[head[0] as usize]
            && self
                .template_prefixes
                .iter()
                .any(|p| head.starts_with(p.as_bytes()))
        {
            return true;
        }
        self.is_mask(v) || is_env_reference(v)
    }

    /// A mask: valid UTF-8, all of it in mask_chars (compared lower-cased), at least mask_min_len
    /// characters. Read up to its first character that is not a mask's: a long value costs what it
    /// shares with a mask, not its length.
    fn is_mask(&self, v: &[u8]) -> bool {
        let (mut i, mut count) = (0, 0);
        while i < v.len() {
            let width = match v[i] {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => return false,
            };
            let Some(c) = v
                .get(i..i + width)
                .and_then(|seq| std::str::from_utf8(seq).ok())
                .and_then(|s| s.chars().next())
            else {
                return false;
            };
            if !self.mask_chars.contains(&c.to_ascii_lowercase()) {
                return false;
            }
            count += 1;
            i += width;
        }
        count >= self.mask_min_len
    }

    /// The longest prose stop word or placeholder word, in bytes: a longer word is neither.
    pub fn longest_word(&self) -> usize {
        self.longest
    }

    /// An integer or decimal with at most `max_kept_digits` integer digits (`4096`, `0.5`).
    pub fn is_small_number(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        // The integer part has at most max_kept_digits digits: look for its dot no further.
        let head = &v[..v.len().min(self.max_kept_digits + 1)];
        if !head.contains(&b'.') && v.len() > self.max_kept_digits {
            return false;
        }
        let (int, frac) = match head.iter().position(|&b| b == b'.') {
            Some(dot) => (&v[..dot], Some(&v[dot + 1..])),
            None => (v, None),
        };
        !int.is_empty()
            && int.len() <= self.max_kept_digits
            && int.iter().all(u8::is_ascii_digit)
            && frac.is_none_or(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
    }

    /// Whether an unquoted word in running text looks generated rather than like a word: 16+ bytes,
    /// a digit (4+ bytes), a symbol, or an upper-case letter after a lower-case one.
    pub fn looks_generated(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        if v.len() >= 16 {
            return true;
        }
        let digit = v.iter().any(u8::is_ascii_digit);
        let symbol = v.iter().any(|b| b"!@#$%^&*+/=~|\\?".contains(b));
        let inner_upper = v.iter().skip(1).any(|b| b.is_ascii_uppercase())
            && v.iter().any(|b| b.is_ascii_lowercase());
        v.len() >= 16 || (digit && v.len() >= 4) || symbol || inner_upper
    }

    /// Whether a credential-named key of `class` keeps `value`. `quoted`: the value was written as a
    /// string (JSON, YAML, a property), so even a plain word is taken as the credential.
    pub fn kept(&self, class: KeyClass, value: &[u8], quoted: bool) -> bool {
        if self.is_placeholder(value) {
            return true;
        }
        if !class.digits_are_secret() && self.is_small_number(value) {
            return true;
        }
        !quoted && !class.digits_are_secret() && !self.looks_generated(value)
    }

    /// A word that describes rather than reveals, after "password is".
    pub fn is_prose_stopword(&self, word: &[u8]) -> bool {
        let w = trim_ascii(word);
        let w = match w {
            [rest @ .., b'.' | b',' | b'!' | b'?' | b':' | b';'] => rest,
            _ => w,
        };
        // Every stop word and placeholder word is ASCII: a longer word is none of them (and lower-
        // casing all of a long value, once per key, would cost its length each time).
        if w.len() > self.longest {
            return false;
        }
        let lower = String::from_utf8_lossy(w).to_ascii_lowercase();
        self.prose_stopwords.contains(&lower) || self.placeholders.contains(&lower)
    }
}
