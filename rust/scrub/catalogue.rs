//! The rule catalogue: parsed from TOML, every pattern checked and compiled once.
//!
//! A pattern is refused unless every repetition in it is bounded (at most [`MAX_REPEAT`]), it matches
//! at least one byte, and it uses no anchor but `\b`: with bounded repetitions a search scans at most
//! [`MAX_WIDTH`] bytes past the start of the match it reports, which is what keeps a scan linear (see
//! `scan.rs`). The same text drives the pure-Python fallback, so patterns also stay within what Python's
//! `re` reads the same way (no `\z`, no classes of classes).

use std::collections::{BTreeMap, HashMap};

use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind, Look};
use serde::Deserialize;

use super::keys::KeyPolicy;
use super::values::ValuePolicy;

/// The largest bound a repetition may have.
pub const MAX_REPEAT: u32 = 1024;
/// The longest match a pattern may describe (its maximum length, in bytes).
pub const MAX_WIDTH: usize = 2048;
/// How far back on its line a rule's `line_context` word may be.
pub const LINE_CONTEXT: usize = 512;
/// How far before a match a `key_before` rule's key may start.
pub const KEY_BEFORE: usize = 48;
/// How far before a match a rule's `public_labels` word may be.
pub const LABEL_BEFORE: usize = 32;
/// The longest stretch a `run_before` extension may cover before its match.
pub const MAX_RUN_BEFORE: usize = 32;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalogue {
    version: u32,
    rules: Vec<RawRule>,
    keys: RawKeys,
    values: RawValues,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    kind: String,
    description: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    pattern: String,
    boundary: Option<String>,
    before: Option<String>,
    entropy: Option<f64>,
    #[serde(default)]
    digits: bool,
    #[serde(default)]
    placeholder: bool,
    #[serde(default)]
    generated: bool,
    #[serde(default)]
    mixed: bool,
    run: Option<String>,
    run_inner: Option<String>,
    run_before: Option<String>,
    #[serde(default)]
    tail: Vec<String>,
    extend: Option<String>,
    near: Option<String>,
    near_within: Option<usize>,
    #[serde(default)]
    line_context: Vec<String>,
    check: Option<String>,
    #[serde(default)]
    public_prefixes: Vec<String>,
    #[serde(default)]
    pii: bool,
    #[serde(default)]
    provider_keywords: bool,
    #[serde(default)]
    near_lines: bool,
    #[serde(default)]
    public_labels: Vec<String>,
    #[serde(default)]
    key_before: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKeys {
    pub suffixes: Vec<String>,
    #[serde(rename = "final")]
    pub final_words: BTreeMap<String, Vec<String>>,
    pub after: BTreeMap<String, RawAfter>,
    pub not_after: BTreeMap<String, Vec<String>>,
    pub compounds: BTreeMap<String, Vec<String>>,
    pub types: Vec<String>,
    pub providers: Vec<String>,
    pub weak: RawWeak,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWeak {
    pub describing: Vec<String>,
    pub substrings: BTreeMap<String, String>,
    pub provider_finals: BTreeMap<String, String>,
    pub id_qualifiers: Vec<String>,
    pub credential_ids: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAfter {
    pub kind: String,
    pub words: Vec<String>,
    #[serde(default)]
    pub kinds: BTreeMap<String, String>,
    #[serde(default)]
    pub after_credential: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawValues {
    pub placeholders: Vec<String>,
    pub mask_chars: String,
    pub mask_min_len: usize,
    pub max_kept_digits: usize,
    pub template_prefixes: Vec<String>,
    pub prose_stopwords: Vec<String>,
    pub prose_leaders: Vec<String>,
    pub placeholder_parts: Vec<String>,
    pub reference_prefixes: Vec<String>,
    pub path_extensions: Vec<String>,
}

/// A set of bytes, from a spec such as `A-Za-z0-9_-` (ranges and single bytes; a `-` at either end is
/// literal) or one of the named sets; `^` before a spec is every byte not in it (`^ \t"'`: what
/// `[^ \t"']` matches, bytes past ASCII too).
#[derive(Clone)]
pub struct ByteSet([bool; 256]);

impl ByteSet {
    pub fn parse(spec: &str) -> Result<ByteSet, String> {
        if let Some(rest) = spec.strip_prefix('^').filter(|r| !r.is_empty()) {
            let ByteSet(inner) = ByteSet::parse(rest)?;
            return Ok(ByteSet(inner.map(|b| !b)));
        }
        let mut set = [false; 256];
        let named = match spec {
            "none" => Some(""),
            "word" => Some("A-Za-z0-9_"),
            "token" => Some("A-Za-z0-9_-"),
            "alnum" => Some("A-Za-z0-9"),
            "b64" => Some("A-Za-z0-9+/="),
            _ => None,
        };
        let bytes = named.unwrap_or(spec).as_bytes();
        if !bytes.is_ascii() {
            return Err(format!("byte set {spec:?} is not ASCII"));
        }
        let mut i = 0;
        while i < bytes.len() {
            if i + 2 < bytes.len() && bytes[i + 1] == b'-' {
                let (lo, hi) = (bytes[i], bytes[i + 2]);
                if lo > hi {
                    return Err(format!("byte set {spec:?} has a backwards range"));
                }
                for b in lo..=hi {
                    set[b as usize] = true;
                }
                i += 3;
            } else {
                set[bytes[i] as usize] = true;
                i += 1;
            }
        }
        Ok(ByteSet(set))
    }

    #[inline]
    pub fn contains(&self, b: u8) -> bool {
        self.0[b as usize]
    }

    pub fn is_empty(&self) -> bool {
        !self.0.iter().any(|&b| b)
    }
}

/// What code finds the secret from a rule's match.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Extend {
    None,
    Assignment,
    Flag,
    Prose,
    PemBlock,
    PuttyBlock,
    /// `<apiToken>VALUE</apiToken>`: an XML element named like a credential (`shapes.rs element`).
    Element,
    /// `name="db.password" value="VALUE"`, `{"name": "apiToken", "value": "VALUE"}`, `- name: X` /
    /// `value: VALUE`: a name/value pair (`shapes.rs attribute`).
    Attribute,
    /// Every value of a Kubernetes Secret's `data:` / `stringData:` block (`shapes.rs secret_data`).
    SecretData,
}

/// A check that code makes on a candidate, beyond the fields every rule has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Check {
    None,
    /// Refuse a port-then-path shape (`host:8080/path@x`): a URL's port, not its password.
    UrlPassword,
    /// The part after the secret's first `_` or `-` (its prefix is a vendor's public name) must look
    /// random: see [`random_body`](super::scan::random_body).
    RandomBody,
    /// A value named only by a provider nearby: it must look random
    /// ([`ValuePolicy::looks_random`](super::values::ValuePolicy::looks_random)), and the stretch
    /// from the provider's name to it must assign it (`=` or `:` right before it) or name a credential
    /// (key, token, secret...), and must not label it public (sha, commit, id...).
    ProviderValue,
    /// The secret must look random ([`ValuePolicy::looks_random`](super::values::ValuePolicy::looks_random)).
    RandomValue,
    /// GitHub's checksum: the last 6 characters are the base62 CRC32 of the 30 before them.
    GithubCrc32,
}

/// A rule's second stage: the secret is the first match of `regex` within `within` bytes after the
/// rule's match (its context: a provider's name), on the same line.
pub struct Near {
    pub pattern: String,
    pub regex: Regex,
    pub within: usize,
    pub max_width: usize,
    /// The stretch may cross line breaks (a provider's name on the line before the value).
    pub lines: bool,
}

/// A rule, compiled.
pub struct Rule {
    pub id: String,
    /// The placeholder kind; None for `BY_KEY` (the key's class names it).
    pub kind: Option<String>,
    pub description: String,
    pub keywords: Vec<String>,
    pub pattern: String,
    pub regex: Regex,
    /// Capture group indices of `secret*` groups, in pattern order.
    pub secret_groups: Vec<usize>,
    pub boundary: ByteSet,
    /// Bytes that may not come right before the secret (the `boundary` unless the rule says).
    pub before: ByteSet,
    pub entropy: Option<f64>,
    pub digits: bool,
    pub placeholder: bool,
    pub generated: bool,
    pub mixed: bool,
    pub run: Option<(ByteSet, ByteSet)>,
    /// Extend the secret's start back over these bytes (at most [`MAX_RUN_BEFORE`]): a vendor prefix
    /// before a separator the pattern starts at.
    pub run_before: Option<ByteSet>,
    /// Extend an accepted secret's end over these bytes, one set per secret group (the last serves the
    /// groups after it): the bytes of the bounded repetition the secret ends with, so the bound never
    /// cuts a secret (`scan.rs tail`).
    pub tail: Vec<ByteSet>,
    pub extend: Extend,
    pub near: Option<Near>,
    /// Words one of which must come before the match on its line (within [`LINE_CONTEXT`] bytes).
    pub line_context: Vec<String>,
    pub check: Check,
    /// Lower-case prefixes of public identifiers the rule refuses (`cus_`, `msg_`, `sha256-`).
    pub public_prefixes: Vec<String>,
    /// The pattern is the providers' names (no pattern given): a scan reads their places from the
    /// keyword pass.
    pub from_providers: bool,
    /// The key starts up to [`KEY_BEFORE`] key bytes before the match (a pattern that starts at a
    /// credential word inside the key).
    pub key_before: bool,
    /// Lower-case words that label what follows as public (`publishable key`, `commit hash`): one of
    /// them within [`LABEL_BEFORE`] bytes before the match, on its line, refuses it.
    pub public_labels: Vec<String>,
    pub pii: bool,
    /// The longest match the pattern describes, in bytes.
    pub max_width: usize,
}

/// The parsed catalogue.
pub struct Catalogue {
    pub rules: Vec<Rule>,
    pub keys: KeyPolicy,
    pub values: ValuePolicy,
}

/// Refuse what would break linear time or the Python fallback's reading of the same pattern.
fn check_hir(hir: &Hir, id: &str) -> Result<(), String> {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            match rep.max {
                None => return Err(format!("rule {id}: unbounded repetition")),
                Some(max) if max > MAX_REPEAT => {
                    return Err(format!(
                        "rule {id}: repetition bound {max} exceeds {MAX_REPEAT}"
                    ))
                }
                _ => {}
            }
            check_hir(&rep.sub, id)
        }
        HirKind::Capture(cap) => check_hir(&cap.sub, id),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            subs.iter().try_for_each(|h| check_hir(h, id))
        }
        HirKind::Look(Look::WordAscii | Look::WordAsciiNegate) => Ok(()),
        HirKind::Look(look) => Err(format!("rule {id}: anchor {look:?} (only \\b is allowed)")),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) => Ok(()),
    }
}

/// Check a pattern (bounded, never empty, no anchor but `\b`) and compile it: the regex and its
/// maximum match length.
fn compile_pattern(pattern: &str, id: &str) -> Result<(Regex, usize), String> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(|e| format!("rule {id}: {e}"))?;
    check_hir(&hir, id)?;
    let props = hir.properties();
    if props.minimum_len().unwrap_or(0) == 0 {
        return Err(format!("rule {id}: the pattern can match nothing"));
    }
    let max_width = props
        .maximum_len()
        .ok_or_else(|| format!("rule {id}: unbounded width"))?;
    if max_width > MAX_WIDTH {
        return Err(format!(
            "rule {id}: matches up to {max_width} bytes (more than {MAX_WIDTH})"
        ));
    }
    let regex = RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 23)
        .dfa_size_limit(1 << 22)
        .build()
        .map_err(|e| format!("rule {id}: {e}"))?;
    Ok((regex, max_width))
}

/// The pattern of a rule whose keywords are the providers' names: any of them, at a word's start.
pub fn provider_pattern(names: &[String]) -> String {
    let escaped: Vec<String> = names.iter().map(|n| regex_syntax::escape(n)).collect();
    format!("\\b(?i:{})", escaped.join("|"))
}

fn compile_rule(mut raw: RawRule, providers: &[String]) -> Result<Rule, String> {
    let id = raw.id.clone();
    let from_providers = raw.provider_keywords && raw.pattern.is_empty();
    if raw.provider_keywords {
        raw.keywords.extend(providers.iter().cloned());
        if raw.pattern.is_empty() {
            raw.pattern = provider_pattern(providers);
        }
    }
    let (regex, max_width) = compile_pattern(&raw.pattern, &id)?;
    let mut secret_groups = Vec::new();
    for (index, name) in regex.capture_names().enumerate() {
        match name {
            Some(n) if n.starts_with("secret") => secret_groups.push(index),
            Some(other) => return Err(format!("rule {id}: unknown group name {other:?}")),
            None => {}
        }
    }
    let near = match (raw.near, raw.near_within) {
        (Some(pattern), Some(within)) => {
            let (regex, max_width) = compile_pattern(&pattern, &id)?;
            if regex.captures_len() > 1 || within > MAX_WIDTH {
                return Err(format!(
                    "rule {id}: near takes no groups and a distance of at most {MAX_WIDTH}"
                ));
            }
            Some(Near {
                pattern,
                regex,
                within,
                max_width,
                lines: raw.near_lines,
            })
        }
        (None, None) => None,
        _ => return Err(format!("rule {id}: near and near_within go together")),
    };
    let extend = match raw.extend.as_deref() {
        None => Extend::None,
        Some("assignment") => Extend::Assignment,
        Some("flag") => Extend::Flag,
        Some("prose") => Extend::Prose,
        Some("pem_block") => Extend::PemBlock,
        Some("putty_block") => Extend::PuttyBlock,
        Some("element") => Extend::Element,
        Some("attribute") => Extend::Attribute,
        Some("secret_data") => Extend::SecretData,
        Some(other) => return Err(format!("rule {id}: unknown extender {other:?}")),
    };
    if near.is_some() && (extend != Extend::None || !secret_groups.is_empty()) {
        return Err(format!(
            "rule {id}: a near rule has no extender and no secret group"
        ));
    }
    let kind = match raw.kind.as_str() {
        "BY_KEY" => {
            if !matches!(
                extend,
                Extend::Assignment
                    | Extend::Flag
                    | Extend::Prose
                    | Extend::Element
                    | Extend::Attribute
            ) {
                return Err(format!("rule {id}: kind BY_KEY needs a key extender"));
            }
            None
        }
        k if !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
        {
            Some(k.to_string())
        }
        k => return Err(format!("rule {id}: kind {k:?} is not an upper-case name")),
    };
    let check = match raw.check.as_deref() {
        None => Check::None,
        Some("url_password") => Check::UrlPassword,
        Some("random_body") => Check::RandomBody,
        Some("provider_value") => Check::ProviderValue,
        Some("random_value") => Check::RandomValue,
        Some("github_crc32") => Check::GithubCrc32,
        Some(other) => return Err(format!("rule {id}: unknown check {other:?}")),
    };
    if raw
        .keywords
        .iter()
        .chain(&raw.public_prefixes)
        .chain(&raw.public_labels)
        .any(|k| k.is_empty() || k.to_ascii_lowercase() != *k || !k.is_ascii())
    {
        return Err(format!(
            "rule {id}: keywords and public prefixes must be non-empty lower-case ASCII"
        ));
    }
    let run = match (&raw.run, &raw.run_inner) {
        (Some(run), inner) => Some((
            ByteSet::parse(run)?,
            ByteSet::parse(inner.as_deref().unwrap_or("none"))?,
        )),
        (None, Some(_)) => return Err(format!("rule {id}: run_inner without run")),
        (None, None) => None,
    };
    Ok(Rule {
        kind,
        description: raw.description,
        keywords: raw.keywords,
        pattern: raw.pattern,
        regex,
        secret_groups,
        boundary: ByteSet::parse(raw.boundary.as_deref().unwrap_or("word"))?,
        before: ByteSet::parse(
            raw.before
                .as_deref()
                .or(raw.boundary.as_deref())
                .unwrap_or("word"),
        )?,
        entropy: raw.entropy,
        digits: raw.digits,
        placeholder: raw.placeholder,
        generated: raw.generated,
        mixed: raw.mixed,
        run,
        run_before: raw.run_before.as_deref().map(ByteSet::parse).transpose()?,
        tail: raw
            .tail
            .iter()
            .map(|t| ByteSet::parse(t))
            .collect::<Result<_, _>>()?,
        extend,
        near,
        line_context: raw.line_context,
        check,
        public_prefixes: raw.public_prefixes,
        public_labels: raw.public_labels,
        key_before: raw.key_before,
        from_providers,
        pii: raw.pii,
        max_width,
        id,
    })
}

impl Catalogue {
    /// Parse and compile a catalogue; any problem is refused with the rule that has it.
    pub fn parse(source: &str) -> Result<Catalogue, String> {
        let raw: RawCatalogue = toml::from_str(source).map_err(|e| format!("catalogue: {e}"))?;
        if raw.version != 1 {
            return Err(format!("catalogue: unknown version {}", raw.version));
        }
        let mut seen = HashMap::new();
        let mut rules = Vec::with_capacity(raw.rules.len());
        for raw_rule in raw.rules {
            if seen.insert(raw_rule.id.clone(), ()).is_some() {
                return Err(format!("catalogue: rule {} is listed twice", raw_rule.id));
            }
            rules.push(compile_rule(raw_rule, &raw.keys.providers)?);
        }
        let keys = KeyPolicy::from_raw(raw.keys)?;
        let values = ValuePolicy::from_raw(raw.values)?;
        Ok(Catalogue {
            rules,
            keys,
            values,
        })
    }
}
