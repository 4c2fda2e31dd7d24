//! Which values a credential-named key keeps: the `[values]` table of the catalogue.
//!
//! A value is kept (not redacted) when it names or masks a credential rather than holding one: a
//! placeholder word, a mask, a template, a reference to where the secret lives (an environment
//! variable, a dotted or called expression, a path, a URL, a secret manager's id), a small number, or
//! (unquoted) prose that describes it ("see the wiki"). A key that only *contains* a credential word
//! (`password_super_secure`, `theapikey`) or a provider's name (`sumologic.accessId`) is weaker
//! evidence: its value must also [`look random`](ValuePolicy::looks_random), as detect-secrets' keyword
//! plugin pairs a keyword with a value test. The pure-Python fallback (`memdedup._scrub_py.values`)
//! implements the same steps over the same table.

use super::catalogue::RawValues;
use super::keys::{word_set, KeyClass, WordSet};
use super::scan::entropy;

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
    prose_leaders: WordSet,
    placeholder_parts: Vec<String>,
    reference_prefixes: Vec<String>,
    path_extensions: WordSet,
    /// The longest prose stop word, leader or placeholder word, in bytes.
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

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(s: &[u8]) -> bool {
    !s.is_empty()
        && is_ident_start(s[0])
        && s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// `$NAME` or `%NAME%`: a reference to an environment variable, not its value.
fn is_env_reference(v: &[u8]) -> bool {
    match v {
        [b'$', rest @ ..] => is_ident(rest),
        [b'%', middle @ .., b'%'] => is_ident(middle),
        _ => false,
    }
}

/// The longest placeholder word or template prefix.
const HEAD: usize = 32;
/// The longest template [`template_end`] looks for (bytes).
pub const TEMPLATE_MAX: usize = 256;
/// The longest value the shape tests read (bytes): a longer one is no location or reference, and
/// [`ValuePolicy::looks_random`] judges its first `SHAPE_MAX` bytes. A value is read to its true end
/// (no cap cuts a secret), but judging it reads a bounded part: keys nested in a long value are
/// judged once each, so a judgement that read all of it would cost its length per key.
pub const SHAPE_MAX: usize = 256;

/// The end of a template that starts at `pos` (`{{ x }}`, `${X}`, `${{ secrets.X }}`, `$(cmd)`,
/// `%(name)s`, `<your token>`, `{name}`), on its line and within [`TEMPLATE_MAX`] bytes, or None.
/// A template's inside holds none of its own brackets: `{{h}o)p${e]nob(ody}}` is no template but a
/// secret full of brackets.
pub fn template_end(hay: &[u8], pos: usize) -> Option<usize> {
    let rest = &hay[pos..hay.len().min(pos + TEMPLATE_MAX)];
    let (open, close, inner_bad): (usize, &[u8], &[u8]) = if rest.starts_with(b"${{") {
        (3, b"}}", b"{}")
    } else if rest.starts_with(b"{{") || rest.starts_with(b"{%") {
        (2, if rest[1] == b'%' { b"%}" } else { b"}}" }, b"{}")
    } else if rest.starts_with(b"${") {
        (2, b"}", b"{}")
    } else if rest.starts_with(b"$(") || rest.starts_with(b"%(") {
        (2, b")", b"()")
    } else if rest.starts_with(b"<") {
        (1, b">", b"<>")
    } else if rest.starts_with(b"{") {
        (1, b"}", b"{}")
    } else {
        return None;
    };
    let body = &rest[open..];
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if matches!(b, b'\n' | b'\r') {
            return None;
        }
        if body[i..].starts_with(close) {
            let end = pos + open + i + close.len();
            // `%(name)s`: the conversion letter belongs to it.
            let end = if rest[0] == b'%' && hay.get(end).is_some_and(u8::is_ascii_alphabetic) {
                end + 1
            } else {
                end
            };
            let inner = &body[..i];
            let single_brace = rest[0] == b'{' && open == 1;
            // A single-brace template is a format field: a name, no blanks (`{SumoAccessKey}`).
            if single_brace && !is_ident(inner) {
                return None;
            }
            return (!inner.is_empty()).then_some(end);
        }
        if inner_bad.contains(&b) {
            return None;
        }
        i += 1;
    }
    None
}

/// A dotted name of identifiers (`process.env.STRIPE_KEY`, `this.apiKey`, `settings.CLIENT_SECRET`),
/// none of whose parts looks random.
fn is_dotted_name(v: &[u8]) -> bool {
    let mut parts = 0;
    for part in v.split(|b| *b == b'.') {
        let part = part.strip_prefix(b"$").unwrap_or(part);
        if !is_ident(part) || part.len() > 40 || looks_random_part(part) {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// A name that reads as a word or an identifier rather than as generated: no digit, or a snake,
/// kebab or SCREAMING name whose pieces are words and numbers.
fn looks_random_part(part: &[u8]) -> bool {
    let upper = part.iter().any(u8::is_ascii_uppercase);
    let lower = part.iter().any(u8::is_ascii_lowercase);
    let digits = part.iter().filter(|b| b.is_ascii_digit()).count();
    digits >= 2 && (upper || lower) && part.len() >= 10 && entropy(part) >= 3.0
}

/// Whether the brackets of `v` nest as code's do: each closer closes the last opener of its kind,
/// and none is left open.
fn nests(v: &[u8]) -> bool {
    let mut stack: Vec<u8> = Vec::new();
    for &b in v {
        match b {
            b'(' => stack.push(b')'),
            b'[' => stack.push(b']'),
            b'{' => stack.push(b'}'),
            b')' | b']' | b'}' if stack.pop() != Some(b) => return false,
            _ => {}
        }
    }
    stack.is_empty()
}

/// A piece of a path: words (one case, or Capitalized) and numbers joined by `.` `_` `-` `~` (a
/// directory, `db_password.txt`, `id_rsa`, `.ssh`), not random characters (a base64 secret holds `/`).
fn is_wordy_piece(piece: &[u8]) -> bool {
    piece
        .split(|b| matches!(b, b'.' | b'_' | b'-' | b'~' | b'@'))
        .all(|word| {
            // Letters then digits: `ed25519`, `python3`, `v2`.
            let letters = word.iter().take_while(|b| b.is_ascii_alphabetic()).count();
            let (alpha, digits) = word.split_at(letters);
            word.len() <= 3
                || (digits.iter().all(u8::is_ascii_digit)
                    && (alpha.iter().skip(1).all(|b| !b.is_ascii_uppercase())
                        || alpha.iter().all(|b| !b.is_ascii_lowercase())))
        })
}

/// Whether `word` (letters) reads as a word, not random letters: a lowercase run of 4+ letters is at
/// least a quarter vowels (`y` counts) with no run of more than 3 consonants; an uppercase run (an
/// acronym) is at most 6 letters.
fn reads_as_word(word: &[u8], upper: bool) -> bool {
    if upper {
        return word.len() <= 6;
    }
    if word.len() < 4 {
        return true;
    }
    let vowel = |b: u8| {
        matches!(
            b.to_ascii_lowercase(),
            b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
        )
    };
    let (mut run, mut longest, mut vowels) = (0usize, 0usize, 0usize);
    for &b in word {
        run = if vowel(b) { 0 } else { run + 1 };
        vowels += usize::from(vowel(b));
        longest = longest.max(run);
    }
    longest <= 3 && 4 * vowels >= word.len()
}

/// A value made of words (a name, a slug, a title), not a generated one: pieces split at
/// `/ - _ . : @ +`, each made of humps of 2+ letters (`booking`, `DataCrawler`, `herosAPI`,
/// `GENerator`: an acronym, then capitalised or lowercase words) that each read as a word, words of
/// 4+ letters holding at least half the letters. With `digits` (a value judged on weak evidence: is it
/// random?), it takes 2+ pieces and a piece of letters may end in up to 4 digits
/// (`DataCrawler/booking-com15`); without, a sentence's mark after the value is not part of it
/// (`Password Databases!`). A random value fails at a one-letter hump, a digit inside a piece or a
/// run of consonants (`wJalrXUtn`, `K7MDENG`, `Zq8vH5jK`); a password of words at its number or its
/// symbol (`tukaka_niro.528!`). Of random 12-character values over `[A-Za-z0-9_-]`, about 1 in
/// 1,000 reads as words (`tests/test_scrub_classes.py`).
pub fn made_of_words(value: &[u8], digits: bool) -> bool {
    let v = trim_ascii(value);
    let v = match v {
        [rest @ .., b'.' | b',' | b'!' | b'?' | b';' | b':'] if !digits => rest,
        _ => v,
    };
    if v.is_empty() || v.len() > SHAPE_MAX {
        return false;
    }
    let separator = |b: &u8| matches!(b, b'/' | b'-' | b'_' | b'.' | b':' | b'@' | b'+');
    if digits && v.split(separator).filter(|p| !p.is_empty()).count() < 2 {
        return false;
    }
    let (mut letters, mut in_words) = (0usize, 0usize);
    for piece in v.split(separator) {
        let count = piece.iter().take_while(|b| b.is_ascii_alphabetic()).count();
        let (alpha, tail) = piece.split_at(count);
        let number = tail.len() <= 4 && tail.iter().all(u8::is_ascii_digit);
        // Digits end a piece of letters only where `digits` allows them.
        let tail_ok = tail.is_empty() || (digits && !alpha.is_empty() && number);
        if !tail_ok {
            return false;
        }
        letters += alpha.len();
        if alpha.len() == 1 {
            continue;
        }
        let mut i = 0;
        while i < alpha.len() {
            let uppers = alpha[i..]
                .iter()
                .take_while(|b| b.is_ascii_uppercase())
                .count();
            let lowers = alpha[i + uppers..]
                .iter()
                .take_while(|b| b.is_ascii_lowercase())
                .count();
            // `GENerator`: the acronym `GE`, then `Nerator` (an acronym's last capital starts the
            // next word when lowercase letters follow).
            let (acronym, word) = if lowers == 0 {
                (uppers, 0)
            } else {
                (uppers.saturating_sub(1), usize::from(uppers > 0) + lowers)
            };
            if acronym == 1 || (acronym > 0 && !reads_as_word(&alpha[i..i + acronym], true)) {
                return false;
            }
            let at = i + acronym;
            if word > 0
                && (word < 2 || !reads_as_word(&alpha[at..at + word].to_ascii_lowercase(), false))
            {
                return false;
            }
            if word >= 4 {
                in_words += word;
            }
            i = at + word;
        }
    }
    2 * in_words >= letters
}

/// A call the value's reader cut after its first argument (at the comma): a method or a snake_case
/// function (`self.register(fileobj`, `Reg.read_keys(HKCU`, `base64.b64encode(user_passwd.`), then
/// one name. A name without `.` or `_` before the bracket (`Summer(Time`) may be a password.
fn cut_call(name: &[u8], argument: &[u8]) -> bool {
    name.iter().any(|&b| b == b'.' || b == b'_')
        && argument.first().is_some_and(|&b| is_ident_start(b))
        && argument
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// An identifier written the way code names things: `snake_case`, `SCREAMING_SNAKE`, whose pieces
/// (split at `_`) are each letters of one case or digits only: a name, not a value. (A kebab-case
/// value is not one: `opaque-value-42` is a value.)
fn is_plain_identifier(v: &[u8]) -> bool {
    if v.is_empty() || !is_ident_start(v[0]) {
        return false;
    }
    let mut pieces = 0;
    for piece in v.split(|b| *b == b'_') {
        if piece.is_empty() {
            continue;
        }
        let alpha = piece.iter().all(u8::is_ascii_alphabetic);
        let digits = piece.iter().all(u8::is_ascii_digit);
        let one_case = piece.iter().all(|b| !b.is_ascii_uppercase())
            || piece.iter().skip(1).all(|b| !b.is_ascii_lowercase());
        if !((alpha && one_case) || digits) {
            return false;
        }
        pieces += 1;
    }
    pieces >= 2
}

impl ValuePolicy {
    pub(crate) fn from_raw(raw: RawValues) -> Result<ValuePolicy, String> {
        if raw
            .placeholders
            .iter()
            .chain(&raw.template_prefixes)
            .chain(&raw.prose_stopwords)
            .chain(&raw.prose_leaders)
            .chain(&raw.placeholder_parts)
            .chain(&raw.reference_prefixes)
            .chain(&raw.path_extensions)
            .any(|w| w.len() > HEAD || w.to_ascii_lowercase() != *w || !w.is_ascii())
        {
            return Err(format!("catalogue: the [values] word lists are lower-case ASCII, at most {HEAD} bytes a word"));
        }
        let longest = raw
            .placeholders
            .iter()
            .chain(&raw.prose_stopwords)
            .chain(&raw.prose_leaders)
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
            prose_leaders: word_set(raw.prose_leaders),
            placeholder_parts: raw.placeholder_parts,
            reference_prefixes: raw.reference_prefixes,
            path_extensions: word_set(raw.path_extensions),
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
        if self.template_first[head[0] as usize] {
            // A bracketed prefix is a template only when the whole value is one (`{{h}o)p...}}` is
            // not); a word prefix (`your_`, `[redacted`) is one by itself.
            if template_end(v, 0) == Some(v.len()) {
                return true;
            }
            if self
                .template_prefixes
                .iter()
                .filter(|p| !matches!(p.as_bytes()[0], b'{' | b'$' | b'<' | b'%'))
                .any(|p| head.starts_with(p.as_bytes()))
            {
                return true;
            }
        }
        let one_case =
            !(v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase));
        if v.len() <= 64 && one_case {
            // `fakesecret`, `my-dummy-token`, `EXAMPLEKEY`: a value of words that says it is not real
            // (AWS's documented `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY` mixes cases: a key's shape).
            let lower = v.to_ascii_lowercase();
            if self
                .placeholder_parts
                .iter()
                .any(|p| memchr::memmem::find(&lower, p.as_bytes()).is_some())
            {
                return true;
            }
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

    /// The longest prose stop word, leader or placeholder word, in bytes: a longer word is neither.
    pub fn longest_word(&self) -> usize {
        self.longest
    }

    /// An integer or decimal with at most `max_kept_digits` integer digits (`4096`, `0.5`), or any such
    /// number followed by `%` (a share, not a secret).
    pub fn is_small_number(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        // A 32-bit constant written in hex (`0x08074b50`): a magic number, not a secret.
        if let [b'0', b'x' | b'X', digits @ ..] = v {
            return (1..=8).contains(&digits.len()) && digits.iter().all(u8::is_ascii_hexdigit);
        }
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

    /// `85%`, `12.5%`: a share.
    fn is_percentage(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        v.len() >= 2 && v[v.len() - 1] == b'%' && self.is_small_number(&v[..v.len() - 1])
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
            && v.iter().any(u8::is_ascii_lowercase);
        v.len() >= 16 || (digit && v.len() >= 4) || symbol || inner_upper
    }

    /// Where the secret lives rather than the secret: a URL (`https://...`, `op://vault/item`), a
    /// secret manager's reference (`arn:`, `vault:`), or a path (`/run/secrets/db`, `~/.ssh/id_rsa`,
    /// `C:\keys\x.pem`, `secrets/prod/api_key`) whose pieces are words, not random characters (a
    /// base64 secret holds `/` too).
    pub fn is_location(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        if v.is_empty() || v.len() > SHAPE_MAX {
            return false;
        }
        let head = &v[..v.len().min(HEAD)];
        let scheme = head
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
            .count();
        if scheme >= 2 && head[0].is_ascii_alphabetic() && head[scheme..].starts_with(b"://") {
            return true;
        }
        let lower = head.to_ascii_lowercase();
        if self
            .reference_prefixes
            .iter()
            .any(|p| lower.starts_with(p.as_bytes()))
        {
            return true;
        }
        let rooted = v.starts_with(b"/")
            || v.starts_with(b"~/")
            || v.starts_with(b"./")
            || v.starts_with(b"../")
            || v.starts_with(b"\\\\")
            || (v.len() > 3
                && v[0].is_ascii_alphabetic()
                && v[1] == b':'
                && matches!(v[2], b'\\' | b'/'));
        let body = if v.len() > 3 && v[1] == b':' {
            &v[2..]
        } else {
            v
        };
        let mut slashes = 0;
        let mut last: &[u8] = b"";
        for piece in body.split(|b| matches!(b, b'/' | b'\\')) {
            slashes += 1;
            if piece.is_empty() {
                continue;
            }
            if !is_wordy_piece(piece) {
                return false;
            }
            last = piece;
        }
        let slashes = slashes - 1;
        let extension = last
            .iter()
            .rposition(|b| *b == b'.')
            .map(|dot| String::from_utf8_lossy(&last[dot + 1..]).to_ascii_lowercase())
            .is_some_and(|ext| self.path_extensions.contains(&ext));
        slashes >= 1 && (rooted || slashes >= 2 || extension)
    }

    /// A reference written as code, unquoted: a YAML tag (`!vault`, `!Ref x`), a dotted name
    /// (`process.env.X`, `this.apiKey`), a call or a subscript (`getToken(user)`, `os.Getenv(`,
    /// `request.json_body[`), `$this->password`, an SQL parameter (`:password`, `@password`), or an
    /// identifier written as code names things (`DB_PASSWORD`, `reset_password_url`).
    pub fn is_reference(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        if v.len() > SHAPE_MAX {
            return false;
        }
        match v {
            [] => false,
            [b'!', b, ..] if b.is_ascii_alphabetic() => true,
            [b':' | b'@', rest @ ..] if rest.len() >= 2 => {
                is_ident(rest)
                    && rest
                        .iter()
                        .all(|b| !b.is_ascii_uppercase() && !b.is_ascii_digit())
            }
            _ => {
                let name_len = v
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
                    .count();
                let name = &v[..name_len];
                let named = !name.is_empty() && (is_ident_start(name[0]) || name[0] == b'$');
                // A call or a subscript: cut at its bracket (`os.Getenv(`, `request.json_body[`) or
                // with its brackets nested as code nests them (`foo(hey)you`); `pelo[mibo)loka...`
                // is random punctuation, not code.
                if named
                    && matches!(v.get(name_len), Some(b'(' | b'['))
                    && (name_len + 1 == v.len()
                        || nests(&v[name_len..])
                        || cut_call(name, &v[name_len + 1..]))
                {
                    return true;
                }
                if named && name[0] == b'$' && v[name_len..].starts_with(b"->") {
                    return true;
                }
                (name_len == v.len() && is_dotted_name(v)) || is_plain_identifier(v)
            }
        }
    }

    /// Whether a clause (words after `password:`) describes where or how the password is rather than
    /// giving it: it starts with a leader word (`see the wiki`, `ask Dana`, `all green`, `same as
    /// staging`, `the one from yesterday`). `first` is its first word.
    pub fn is_prose_lead(&self, first: &[u8]) -> bool {
        self.listed_word(first)
            .is_some_and(|lower| self.prose_leaders.contains(&lower))
    }

    /// Whether a credential-named key of `class` keeps `value`. `quoted`: the value was written as a
    /// string (JSON, YAML, a property), so even a plain word is taken as the credential.
    pub fn kept(&self, class: KeyClass, value: &[u8], quoted: bool) -> bool {
        if self.is_placeholder(value) || self.is_location(value) || self.is_percentage(value) {
            return true;
        }
        if !class.digits_are_secret() && self.is_small_number(value) {
            return true;
        }
        // A PIN has digits: a word after `pin` (`GridPin: addresses to coordinates`) is none.
        if class == KeyClass::Pin && !value.iter().any(u8::is_ascii_digit) {
            return true;
        }
        if quoted {
            return false;
        }
        self.is_reference(value) || (!class.digits_are_secret() && !self.looks_generated(value))
    }

    /// Whether a value looks random enough to be a secret on weaker evidence than a credential-named
    /// key's (a key that only contains a credential word or a provider's name, a provider named
    /// nearby): 8+ bytes with no blank or quote, letters with digits (or 2+ symbols), at least 3 bits
    /// of entropy per byte, and neither a placeholder, a location, a reference, nor a name made of
    /// words (`Version2Handler`, `reset_password_2`).
    pub fn looks_random(&self, value: &[u8]) -> bool {
        let v = trim_ascii(value);
        let v = &v[..v.len().min(SHAPE_MAX)];
        if v.len() < 8
            || v.iter()
                .any(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`'))
        {
            return false;
        }
        let letters = v.iter().filter(|b| b.is_ascii_alphabetic()).count();
        let digits = v.iter().filter(|b| b.is_ascii_digit()).count();
        // Separators join words (`deploy-user-production`): only other symbols count.
        let separators = v.iter().filter(|b| matches!(b, b'-' | b'_' | b'.')).count();
        let symbols = v.len() - letters - digits - separators;
        if letters == 0 || (digits == 0 && symbols < 2) {
            return false;
        }
        if entropy(v) < 3.0 || made_of_words(v, true) {
            return false;
        }
        if digits > 0 && digits <= 2 && symbols == 0 {
            // One or two digits among letters: a versioned name (`Version2Handler`) unless the
            // letters change case like random ones do.
            let pairs = v
                .windows(2)
                .filter(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_alphabetic());
            let (mut total, mut changes) = (0usize, 0usize);
            for w in pairs {
                total += 1;
                changes += usize::from(w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase());
            }
            if 10 * changes < 2 * total {
                return false;
            }
        }
        !(self.is_placeholder(v) || self.is_location(v) || self.is_reference(v))
    }

    /// A word that describes rather than reveals, after "password is".
    pub fn is_prose_stopword(&self, word: &[u8]) -> bool {
        self.listed_word(word).is_some_and(|lower| {
            self.prose_stopwords.contains(&lower) || self.placeholders.contains(&lower)
        })
    }

    /// `word` as the word lists hold it (blanks and one sentence's mark after it dropped, lower case),
    /// or None when it is longer than every listed word: each is ASCII, so a longer word is none of them
    /// (and lower-casing all of a long value, once per key, would cost its length each time).
    fn listed_word(&self, word: &[u8]) -> Option<String> {
        let w = trim_ascii(word);
        let w = match w {
            [rest @ .., b'.' | b',' | b'!' | b'?' | b':' | b';'] => rest,
            _ => w,
        };
        (w.len() <= self.longest).then(|| String::from_utf8_lossy(w).to_ascii_lowercase())
    }
}
