//! Credential-named keys and the values they may keep.
//!
//! A key is credential-named by its words, and its FINAL word decides: `client_secret`, `apiKey`,
//! `x-api-key`, `db_pass`, `private_key_id` are; `password_min_length`, `token_count`, `max_tokens`,
//! `secret_manager` are not. The word lists live in the catalogue's `[keys]` table; the pure-Python
//! fallback (`memdedup.scrub`) implements the same steps over the same table.

use std::collections::{HashMap, HashSet};

use super::catalogue::{RawKeys, RawValues};

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
    words: HashSet<String>,
    classes: HashMap<String, KeyClass>,
    after_credential: bool,
}

/// The `[keys]` table, ready to classify.
pub struct KeyPolicy {
    suffixes: Vec<String>,
    final_words: HashMap<String, KeyClass>,
    after: HashMap<String, After>,
    not_after: HashMap<String, HashSet<String>>,
    compounds: HashMap<String, Vec<String>>,
}

fn is_lower(b: u8) -> bool {
    b.is_ascii_lowercase()
}

fn is_upper(b: u8) -> bool {
    b.is_ascii_uppercase()
}

/// The raw words of a key name: maximal ASCII alphanumeric runs, split at camelCase humps
/// (`apiKey` -> api Key, `APIKey` -> API Key, `S3Bucket` -> S3 Bucket), lower-cased.
pub fn split_words(name: &[u8]) -> Vec<String> {
    let mut words = Vec::new();
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
        let run = &name[start..i];
        let mut piece = 0;
        for j in 1..run.len() {
            let (prev, cur) = (run[j - 1], run[j]);
            let hump = ((is_lower(prev) || prev.is_ascii_digit()) && is_upper(cur))
                || (is_upper(prev) && is_upper(cur) && j + 1 < run.len() && is_lower(run[j + 1]));
            if hump {
                words.push(String::from_utf8_lossy(&run[piece..j]).to_ascii_lowercase());
                piece = j;
            }
        }
        words.push(String::from_utf8_lossy(&run[piece..]).to_ascii_lowercase());
    }
    words
}

impl KeyPolicy {
    pub(crate) fn from_raw(raw: RawKeys) -> Result<KeyPolicy, String> {
        let mut final_words = HashMap::new();
        for (class, words) in raw.final_words {
            let class = KeyClass::parse(&class)?;
            for w in words {
                final_words.insert(w, class);
            }
        }
        let mut after = HashMap::new();
        for (word, a) in raw.after {
            let classes = a
                .kinds
                .into_iter()
                .map(|(w, k)| Ok((w, KeyClass::parse(&k)?)))
                .collect::<Result<HashMap<_, _>, String>>()?;
            after.insert(
                word,
                After {
                    class: KeyClass::parse(&a.kind)?,
                    words: a.words.into_iter().collect(),
                    classes,
                    after_credential: a.after_credential,
                },
            );
        }
        let not_after = raw
            .not_after
            .into_iter()
            .map(|(w, l)| (w, l.into_iter().collect()))
            .collect();
        Ok(KeyPolicy {
            suffixes: raw.suffixes,
            final_words,
            after,
            not_after,
            compounds: raw.compounds.into_iter().collect(),
        })
    }

    /// The words a key is judged by: [`split_words`], then one-word concatenations split
    /// (`apikey` -> api key, `pgpassword` -> pg password).
    pub fn words(&self, name: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for word in split_words(name) {
            if let Some(parts) = self.compounds.get(&word) {
                out.extend(parts.iter().cloned());
                continue;
            }
            match self
                .suffixes
                .iter()
                .find(|s| word.len() > s.len() && word.ends_with(s.as_str()))
            {
                Some(suffix) => {
                    out.push(word[..word.len() - suffix.len()].to_string());
                    out.push(suffix.clone());
                }
                None => out.push(word),
            }
        }
        out
    }

    /// The class of a credential-named key, or None.
    pub fn classify(&self, name: &[u8]) -> Option<KeyClass> {
        self.classify_words(&self.words(name))
    }

    fn classify_words(&self, words: &[String]) -> Option<KeyClass> {
        let last = words.last()?;
        let prev = if words.len() >= 2 {
            words[words.len() - 2].as_str()
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
    placeholders: HashSet<String>,
    mask_chars: Vec<char>,
    mask_min_len: usize,
    max_kept_digits: usize,
    template_prefixes: Vec<String>,
    prose_stopwords: HashSet<String>,
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

impl ValuePolicy {
    pub(crate) fn from_raw(raw: RawValues) -> ValuePolicy {
        ValuePolicy {
            placeholders: raw.placeholders.into_iter().collect(),
            mask_chars: raw.mask_chars.chars().collect(),
            mask_min_len: raw.mask_min_len,
            max_kept_digits: raw.max_kept_digits,
            template_prefixes: raw.template_prefixes,
            prose_stopwords: raw.prose_stopwords.into_iter().collect(),
        }
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
        let lower = String::from_utf8_lossy(v).to_ascii_lowercase();
        if self.placeholders.contains(&lower) {
            return true;
        }
        if lower.chars().count() >= self.mask_min_len
            && lower.chars().all(|c| self.mask_chars.contains(&c))
        {
            return true;
        }
        if self
            .template_prefixes
            .iter()
            .any(|p| lower.starts_with(p.as_str()))
        {
            return true;
        }
        is_env_reference(v)
    }

    /// An integer or decimal with at most `max_kept_digits` integer digits (`4096`, `0.5`).
    pub fn is_small_number(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        let (int, frac) = match v.iter().position(|&b| b == b'.') {
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
        let lower = String::from_utf8_lossy(w).to_ascii_lowercase();
        self.prose_stopwords.contains(&lower) || self.placeholders.contains(&lower)
    }
}
