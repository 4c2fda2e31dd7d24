//! Credential-named keys and the values they may keep.
//!
//! A key is credential-named by its words, and its FINAL word decides: `client_secret`, `apiKey`,
//! `x-api-key`, `db_pass`, `private_key_id` are; `password_min_length`, `token_count`, `max_tokens`,
//! `secret_manager` are not. The word lists live in the catalogue's `[keys]` table; the pure-Python
//! fallback (`memdedup.scrub`) implements the same steps over the same table.

use smallvec::SmallVec;

use super::catalogue::RawKeys;

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

pub(crate) fn word_set(words: Vec<String>) -> WordSet {
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
    types: WordSet,
    describing: WordSet,
    substrings: Vec<(String, KeyClass)>,
    providers: WordSet,
    provider_list: Vec<String>,
    provider_finals: WordMap<KeyClass>,
    id_qualifiers: WordSet,
    credential_ids: WordSet,
}

/// How a key names a credential. A strong key's final word names one (`client_secret`, `apiKey`);
/// a weak key only holds a credential word before other words (`password_super_secure`), inside one
/// word (`theapikey`), or names a provider (`sumologic.accessId`): its value must also look random.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KeyHit {
    pub class: KeyClass,
    pub weak: bool,
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
        let mut substrings = Vec::new();
        for (word, class) in raw.weak.substrings {
            substrings.push((word, KeyClass::parse(&class)?));
        }
        let mut provider_finals = Vec::new();
        for (word, class) in raw.weak.provider_finals {
            provider_finals.push((word, KeyClass::parse(&class)?));
        }
        Ok(KeyPolicy {
            types: word_set(raw.types),
            describing: word_set(raw.weak.describing),
            substrings,
            provider_list: raw.providers.clone(),
            providers: word_set(raw.providers),
            provider_finals: WordMap::new(provider_finals),
            id_qualifiers: word_set(raw.weak.id_qualifiers),
            credential_ids: word_set(raw.weak.credential_ids),
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

    /// The providers' names, in the catalogue's order.
    pub fn providers(&self) -> &[String] {
        &self.provider_list
    }

    /// Whether `word` is a type word (`string`, `str`): in `apiToken: string = "..."` the value
    /// follows the `=`.
    pub fn is_type(&self, word: &[u8]) -> bool {
        word.len() <= 24
            && self
                .types
                .contains(&String::from_utf8_lossy(word).to_ascii_lowercase())
    }

    /// The words a key is judged by, as strings.
    pub fn words(&self, name: &[u8]) -> Vec<String> {
        let lower = name.to_ascii_lowercase();
        self.expand(name, &lower)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// The class of a credential-named key (a strong one: its final word decides), or None.
    pub fn classify(&self, name: &[u8]) -> Option<KeyClass> {
        self.with_words(name, |words| self.classify_words(words))
    }

    /// How `name` names a credential, strongly or weakly ([`KeyHit`]), or None. A trailing type word
    /// is dropped first (`var apiToken string =`: the key is `var apiToken`), and a final word's
    /// trailing digits (`sumoKey1`, `token2`).
    pub fn classify_key(&self, name: &[u8]) -> Option<KeyHit> {
        self.with_words(name, |words| self.classify_key_words(words))
    }

    /// Whether `name`'s final word is refused after the word before it (`next_page_token`,
    /// `boarding pass`): such a phrase names no credential, and neither does its last word alone.
    pub fn refuses(&self, name: &[u8]) -> bool {
        self.with_words(name, |words| self.refuses_words(words))
    }

    fn refuses_words(&self, words: &[&str]) -> bool {
        match self.trimmed(words) {
            [.., prev, last] => self.not_after.get(last).is_some_and(|l| l.contains(prev)),
            _ => false,
        }
    }

    /// [`KeyPolicy::refuses`] and [`KeyPolicy::classify_key`] of one name, its words found once:
    /// `None` when the name is refused, else its hit (itself `None` when it names no credential).
    pub fn judge_phrase(&self, name: &[u8]) -> Option<Option<KeyHit>> {
        self.with_words(name, |words| {
            (!self.refuses_words(words)).then(|| self.classify_key_words(words))
        })
    }

    fn with_words<R>(&self, name: &[u8], f: impl FnOnce(&[&str]) -> R) -> R {
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
        f(&words)
    }

    /// `words` without a trailing type word (`string`, `str`) when a name comes before it.
    fn trimmed<'w>(&self, words: &'w [&'w str]) -> &'w [&'w str] {
        match words {
            [rest @ .., last] if !rest.is_empty() && self.types.contains(last) => rest,
            _ => words,
        }
    }

    /// `word` without trailing digits (`key1` -> `key`) when what is left is a word the tables know.
    fn undigit<'w>(&self, word: &'w str) -> &'w str {
        let stem = word.trim_end_matches(|c: char| c.is_ascii_digit());
        if stem.len() < word.len()
            && word.len() - stem.len() <= 2
            && (self.final_words.contains(stem)
                || self.after.contains(stem)
                || self.provider_finals.contains(stem))
        {
            stem
        } else {
            word
        }
    }

    fn classify_key_words(&self, words: &[&str]) -> Option<KeyHit> {
        let words = self.trimmed(words);
        let (&last, rest) = words.split_last()?;
        let last = self.undigit(last);
        let mut owned: SmallVec<[&str; 8]> = rest.iter().copied().collect();
        owned.push(last);
        let words = &owned[..];
        let prev = rest.last().copied().unwrap_or("");
        if self.not_after.get(last).is_some_and(|l| l.contains(prev)) {
            return None;
        }
        if let Some(class) = self.classify_words(words) {
            return Some(KeyHit { class, weak: false });
        }
        let weak = |class| Some(KeyHit { class, weak: true });
        // A describing word after the credential word names something about it, not it
        // (`password_min_length`, `token_count`, `secret_manager`, `key_id`).
        let described = |from: usize| words[from..].iter().any(|w| self.describing.contains(w));
        // A credential named before other words: `password_super_secure`, `api_key_prod`, `token_v2`;
        // the words after it must read as words (`token-hnl5d`: a token's id, not a qualifier).
        let wordy = |w: &&str| {
            let letters = w.bytes().take_while(u8::is_ascii_alphabetic).count();
            w.bytes().skip(letters).all(|b| b.is_ascii_digit())
        };
        for end in (1..words.len()).rev() {
            if let Some(class) = self.classify_words(&words[..end]) {
                let qualified = words[end..].iter().all(wordy);
                return if described(end) || !qualified {
                    None
                } else {
                    weak(class)
                };
            }
        }
        // A credential word inside one word: `theapikey`, `fooapikeyfoo`, `mypassword2`.
        for (i, word) in words.iter().enumerate() {
            if self.describing.contains(word) {
                continue; // `tokenizer`, `secretary`: a word of its own
            }
            if let Some((sub, class)) = self
                .substrings
                .iter()
                .find(|(s, _)| word.contains(s.as_str()))
            {
                // `max_tokens`: what refuses the word refuses the word inside it.
                let refused = i > 0
                    && self
                        .not_after
                        .get(sub)
                        .is_some_and(|l| l.contains(words[i - 1]));
                return if refused || described(i + 1) {
                    None
                } else {
                    weak(*class)
                };
            }
        }
        // A credential word across the words of one name: `fooprivate_keyfoo` (private key).
        if words.len() >= 2 {
            // Joined on the stack (this runs once per key a rule reads).
            let mut buffer = [0u8; 128];
            let mut len = 0;
            for w in words {
                let take = w.len().min(buffer.len() - len);
                buffer[len..len + take].copy_from_slice(&w.as_bytes()[..take]);
                len += take;
            }
            let joined = &buffer[..len];
            if let Some((_, class)) = self
                .substrings
                .iter()
                .find(|(s, _)| memchr::memmem::find(joined, s.as_bytes()).is_some())
            {
                if !words.iter().any(|w| self.describing.contains(w)) {
                    return weak(*class);
                }
            }
        }
        // An id that is half of a credential pair: `access_id`, `accessId`.
        if matches!(last, "id" | "ids") && self.credential_ids.contains(prev) {
            return weak(KeyClass::Secret);
        }
        // A provider's name and a credential-ish final word: `sumologic.accessId`, `SUMO_KEY`.
        if words.len() >= 2 && rest.iter().any(|w| self.providers.contains(w)) {
            if let Some(&class) = self.provider_finals.get(last) {
                let qualified = last != "id" && last != "ids" || self.id_qualifiers.contains(prev);
                if qualified {
                    return weak(class);
                }
            }
        }
        None
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
