//! Credentials in markup's shapes, where the key and the value are not `KEY=value`: an XML element
//! named like a credential (`<apiToken>VALUE</apiToken>`, its value on its own line too), a
//! name/value pair (`<add key="Password" value="..."/>`, `{"name": "apiToken", "value": "..."}`,
//! a Kubernetes env entry `- name: DB_PASSWORD` / `value: ...`), and every value of a Kubernetes
//! Secret's `data:` or `stringData:` block, whatever its keys are called.
//!
//! Each reads forward from its match only: an element to its closing tag's `<`, a pair's value to
//! its end, a data block to the first line indented no deeper than `data:`; the scan resumes past
//! an accepted value, so every byte is read O(1) times per rule.

use super::extend::{read_value, Memo, Value, ValueMode};
use super::keys::{KeyClass, KeyPolicy};
use super::values::ValuePolicy;

/// Whether a key of this strength keeps the value: a strong key keeps only what the policy keeps
/// (a string is a credential), a weak one every value that does not look random.
fn keeps(values: &ValuePolicy, class: KeyClass, weak: bool, text: &[u8], quoted: bool) -> bool {
    if weak {
        !values.looks_random(text)
    } else {
        values.kept(class, text, quoted)
    }
}

/// `<NAME>VALUE</`: the element's text, if NAME (after a namespace prefix) names a credential and
/// the text is not kept. `ms..me` is the opening tag. The text may sit on its own lines
/// (`<apiToken>\n    VALUE\n</apiToken>`): it runs from its first non-blank byte to the last one
/// before the `<` that closes it; an element holding other elements holds no value.
pub fn element(
    hay: &[u8],
    (ms, me): (usize, usize),
    (keys, values): (&KeyPolicy, &ValuePolicy),
) -> Option<(Value, KeyClass)> {
    let tag = &hay[ms + 1..me - 1];
    let name = tag.rsplit(|b| *b == b':').next().unwrap_or(tag);
    let (start, end) = text_of(hay, me)?;
    // A property list names its entries with `<key>`: `<key>Password</key>` then the value's
    // element (`<string>...</string>`).
    let (hit, start, end) = if name.eq_ignore_ascii_case(b"key") {
        let hit = keys.classify_key(&hay[start..end])?;
        let next = skip_blanks(hay, end + memchr::memchr(b'>', &hay[end..])? + 1);
        let open = b"<string>";
        if !hay[next..].starts_with(open) {
            return None;
        }
        let (s, e) = text_of(hay, next + open.len())?;
        (hit, s, e)
    } else {
        (keys.classify_key(name)?, start, end)
    };
    if keeps(values, hit.class, hit.weak, &hay[start..end], true) {
        return None;
    }
    let value = Value {
        start,
        end,
        quoted: true,
        first_end: end,
        mode: ValueMode::Token,
        query: false,
        capped: false,
    };
    Some((value, hit.class))
}

fn skip_blanks(hay: &[u8], mut at: usize) -> usize {
    while at < hay.len() && hay[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The text of an element whose opening tag ends at `me`: from its first non-blank byte to the last
/// one before the `</` that closes it; None for an empty element or one holding other elements.
fn text_of(hay: &[u8], me: usize) -> Option<(usize, usize)> {
    let start = skip_blanks(hay, me);
    let close = start + memchr::memchr(b'<', &hay[start..])?;
    if hay.get(close + 1) != Some(&b'/') {
        return None;
    }
    let mut end = close;
    while end > start && hay[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    (end > start).then_some((start, end))
}

/// Where a name/value pair's name is, read back from its `value` / `content` keyword at `at`: the
/// text before it must be `NAMEWORD [:=] NAME` then separators (`key="Password" value=`, `"name":
/// "apiToken", "value":`, `- name: DB_PASSWORD` and an indented `value:`), where NAMEWORD is `key`,
/// `name`, `id`, `param`, `property`, `variable`, `var` or `setting`, a whole word. Each part is read
/// a bounded way (blanks up to 8, separators up to 64, a name up to 96 bytes): O(1) per keyword.
pub fn pair_name_before(hay: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    let quote = |i: &mut usize| {
        if *i > 0 && matches!(hay[*i - 1], b'"' | b'\'') {
            *i -= 1;
            if *i > 0 && hay[*i - 1] == b'\\' {
                *i -= 1;
            }
        }
    };
    let blanks = |i: &mut usize, most: usize| {
        let mut n = 0;
        while *i > 0 && n < most && matches!(hay[*i - 1], b' ' | b'\t') {
            *i -= 1;
            n += 1;
        }
    };
    quote(&mut i);
    let before_blanks = i;
    blanks(&mut i, 8);
    // Blanks right before the keyword are separators unless a `-` (a YAML list item) comes first.
    let mut separators = before_blanks - i;
    if i > 0 && hay[i - 1] == b'-' {
        i -= 1;
        separators = 0;
    }
    while i > 0 && separators < 64 {
        if matches!(hay[i - 1], b' ' | b'\t' | b'\r' | b'\n') {
            i -= 1;
        } else if i >= 2 && hay[i - 2] == b'\\' && matches!(hay[i - 1], b'n' | b'r' | b't') {
            i -= 2;
        } else {
            break;
        }
        separators += 1;
    }
    if separators == 0 {
        return None;
    }
    if i > 0 && hay[i - 1] == b',' {
        i -= 1;
    }
    blanks(&mut i, 4);
    quote(&mut i);
    let name_end = i;
    while i > 0
        && name_end - i < 96
        && (hay[i - 1].is_ascii_alphanumeric() || b"_.-".contains(&hay[i - 1]))
    {
        i -= 1;
    }
    if i == name_end {
        return None;
    }
    let name_start = i;
    quote(&mut i);
    blanks(&mut i, 4);
    if i == 0 || !matches!(hay[i - 1], b':' | b'=') {
        return None;
    }
    i -= 1;
    blanks(&mut i, 4);
    quote(&mut i);
    let word_end = i;
    while i > 0 && word_end - i < 9 && hay[i - 1].is_ascii_alphabetic() {
        i -= 1;
    }
    let word = hay[i..word_end].to_ascii_lowercase();
    let named = matches!(
        word.as_slice(),
        b"key" | b"name" | b"id" | b"param" | b"property" | b"variable" | b"var" | b"setting"
    );
    let whole = i == 0 || !(hay[i - 1].is_ascii_alphanumeric() || hay[i - 1] == b'_');
    (named && whole).then_some((name_start, name_end))
}

/// A name/value pair: the match is its `value` / `content` keyword and what assigns after it; the
/// name is read back ([`pair_name_before`]), the value read from `me` as a key rule reads one
/// (quoted, a token, a YAML block).
pub fn attribute(
    hay: &[u8],
    ms: usize,
    me: usize,
    (keys, values): (&KeyPolicy, &ValuePolicy),
    memo: &mut Memo,
) -> Option<(Value, KeyClass)> {
    let (start, end) = pair_name_before(hay, ms)?;
    let hit = keys.classify_key(&hay[start..end])?;
    let value = read_value(hay, me, ValueMode::Token, false, memo)?;
    let text = &hay[value.start..value.end];
    if keeps(values, hit.class, hit.weak, text, value.quoted) {
        return None;
    }
    Some((value, hit.class))
}

/// The indentation (blanks) at `line`, a line's first byte.
fn indent(hay: &[u8], line: usize) -> usize {
    hay[line..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

/// The values of a `data:` / `stringData:` block whose header line is indented `header` blanks and
/// whose first line starts at `from`: each `name: value` line indented deeper gives its value (the
/// inside of its quotes; a block scalar, `name: |`, gives its lines). Returns the values and where
/// the block ends.
pub fn secret_data(hay: &[u8], header: usize, from: usize) -> (Vec<(usize, usize)>, usize) {
    let mut out = Vec::new();
    let mut line = from;
    // The indentation of a `name: |` line whose deeper lines are its value.
    let mut scalar: Option<usize> = None;
    while line < hay.len() {
        let eol = memchr::memchr(b'\n', &hay[line..]).map_or(hay.len(), |i| line + i);
        let blanks = indent(hay, line);
        let content = line + blanks;
        let mut end = eol;
        while end > content && hay[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        if end <= content || hay[content] == b'#' {
            line = eol + 1; // a blank or comment line does not end the block
            continue;
        }
        if blanks <= header {
            return (out, line);
        }
        if let Some(outer) = scalar {
            if blanks > outer {
                out.push((content, end));
                line = eol + 1;
                continue;
            }
            scalar = None;
        }
        if let Some(colon) = memchr::memchr(b':', &hay[content..end]).map(|i| content + i) {
            let mut start = colon + 1;
            while start < end && matches!(hay[start], b' ' | b'\t') {
                start += 1;
            }
            let mut stop = end;
            if stop > start + 1 && matches!(hay[start], b'"' | b'\'') && hay[stop - 1] == hay[start]
            {
                start += 1;
                stop -= 1;
            }
            if matches!(
                &hay[start..stop],
                b"|" | b">" | b"|-" | b">-" | b"|+" | b">+"
            ) {
                scalar = Some(blanks);
            } else if stop > start {
                out.push((start, stop));
            }
        }
        line = eol + 1;
    }
    (out, hay.len())
}
