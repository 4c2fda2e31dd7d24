//! The detector against the catalogue's own vectors (tests/data/scrub_vectors.toml, shared with the
//! Python suite), the key-name rules, offsets, merging and the linear-time guard on patterns.

use super::*;
use crate::test_rng::Rng;

const VECTORS: &str = include_str!("../../tests/data/scrub_vectors.toml");

fn det() -> &'static Detector {
    detector().expect("the bundled catalogue builds")
}

fn alphabet(name: &str) -> &'static str {
    match name {
        "d" => "0123456789",
        "h" => "0123456789abcdef",
        "H" => "0123456789ABCDEF",
        "a" => "abcdefghijklmnopqrstuvwxyz",
        "A" => "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "an" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "ad" => "abcdefghijklmnopqrstuvwxyz0123456789",
        "AN" => "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "an_" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
        "url" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
        "b64" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
        "b32" => "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
        other => panic!("unknown alphabet {other}"),
    }
}

/// Fill `{alphabet:length}` fields (with a digit, a lower- and an upper-case letter where the alphabet
/// has them, as the Python generator does), then split out the «» marks: the text and the marked byte
/// spans.
fn expand(template: &str, rng: &mut Rng) -> (String, Vec<(usize, usize)>) {
    let mut filled = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map(|c| open + c);
        let field = close.and_then(|c| rest[open + 1..c].split_once(':'));
        match (close, field) {
            (Some(close), Some((name, len)))
                if len.bytes().all(|b| b.is_ascii_digit())
                    && !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                filled.push_str(&rest[..open]);
                let chars: Vec<char> = alphabet(name).chars().collect();
                let n: usize = len.parse().unwrap();
                let mut out: Vec<char> = (0..n).map(|_| chars[rng.below(chars.len())]).collect();
                let classes: [fn(&char) -> bool; 3] = [
                    char::is_ascii_digit,
                    char::is_ascii_lowercase,
                    char::is_ascii_uppercase,
                ];
                let present: Vec<_> = classes.iter().filter(|c| chars.iter().any(c)).collect();
                if n >= 2 * present.len() {
                    for (i, class) in present.iter().enumerate() {
                        if !out.iter().any(class) {
                            let pool: Vec<char> =
                                chars.iter().copied().filter(|ch| class(ch)).collect();
                            out[1 + 2 * i] = pool[rng.below(pool.len())];
                        }
                    }
                }
                filled.extend(out);
                rest = &rest[close + 1..];
            }
            _ => {
                filled.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    filled.push_str(rest);
    let mut text = String::new();
    let mut spans = Vec::new();
    let mut start = 0;
    for ch in filled.chars() {
        match ch {
            '«' => start = text.len(),
            '»' => spans.push((start, text.len())),
            c => text.push(c),
        }
    }
    (text, spans)
}

struct Vector {
    rule: String,
    text: String,
    spans: Vec<(usize, usize)>,
    kind: Option<String>,
    pii: bool,
}

fn vectors() -> Vec<Vector> {
    let table: toml::Table = toml::from_str(VECTORS).expect("vectors parse");
    let mut rng = Rng(0x5eed_cafe);
    let mut out = Vec::new();
    for (rule, entry) in table {
        let pii = entry
            .get("pii")
            .and_then(toml::Value::as_bool)
            .unwrap_or(false);
        for (field, positive) in [("tp", true), ("fp", false)] {
            for template in entry
                .get(field)
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
            {
                let template = template.as_str().expect("a vector is a string");
                let (kind, template) = match template.split_once("::") {
                    Some((k, t))
                        if positive && k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') =>
                    {
                        (Some(k.to_string()), t)
                    }
                    _ => (None, template),
                };
                let (text, spans) = expand(template, &mut rng);
                assert_eq!(positive, !spans.is_empty(), "{rule}: {template}");
                out.push(Vector {
                    rule: rule.clone(),
                    text,
                    spans,
                    kind,
                    pii,
                });
            }
        }
    }
    out
}

#[test]
fn the_bundled_catalogue_builds_and_every_rule_has_both_kinds_of_vector() {
    let d = det();
    let vectors = vectors();
    for rule in d.rules() {
        let tp = vectors
            .iter()
            .filter(|v| v.rule == rule.id && !v.spans.is_empty())
            .count();
        let fp = vectors
            .iter()
            .filter(|v| v.rule == rule.id && v.spans.is_empty())
            .count();
        assert!(
            tp > 0 && fp > 0,
            "rule {} has {tp} true- and {fp} false-positive vectors",
            rule.id
        );
    }
    for v in &vectors {
        assert!(
            d.rules().iter().any(|r| r.id == v.rule),
            "vectors for an unknown rule {}",
            v.rule
        );
    }
}

#[test]
fn every_true_positive_is_found_span_exact_by_its_rule_and_every_false_positive_is_left_alone() {
    let d = det();
    let mut failures = Vec::new();
    for v in vectors() {
        let found = d.scan_bytes(v.text.as_bytes(), v.pii);
        let rule = d.rules().iter().position(|r| r.id == v.rule).unwrap();
        let kind = v
            .kind
            .clone()
            .or_else(|| d.rules()[rule].kind.clone())
            .unwrap_or_default();
        let got: Vec<_> = found
            .iter()
            .map(|f| {
                (
                    f.start,
                    f.end,
                    d.rules()[f.rule].id.as_str(),
                    d.kind_name(f),
                )
            })
            .collect();
        let want: Vec<_> = v
            .spans
            .iter()
            .map(|&(s, e)| (s, e, v.rule.as_str(), kind.as_str()))
            .collect();
        if got != want {
            failures.push(format!(
                "{}: {:?}\n   got  {got:?}\n   want {want:?}",
                v.rule, v.text
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn key_names_are_judged_by_their_final_word() {
    let keys = det().keys();
    let yes = [
        ("client_secret", "SECRET"),
        ("apiKey", "API_KEY"),
        ("x-api-key", "API_KEY"),
        ("db_pass", "PASSWORD"),
        ("private_key_id", "SECRET"),
        ("bearer", "TOKEN"),
        ("pass", "PASSWORD"),
        ("creds", "SECRET"),
        ("pin", "PIN"),
        ("key", "SECRET"),
        ("AccountKey", "SECRET"),
        ("signature", "SECRET"),
        ("session_id", "TOKEN"),
        ("otp", "PIN"),
        ("password", "PASSWORD"),
        ("api_key", "API_KEY"),
        ("authToken", "TOKEN"),
        ("access_token", "TOKEN"),
        ("secret", "SECRET"),
        ("private_key", "SECRET"),
        ("Authorization", "TOKEN"),
        ("PGPASSWORD", "PASSWORD"),
        ("APIKEY", "API_KEY"),
        ("sessionid", "TOKEN"),
        ("XApiKey", "API_KEY"),
        ("OAuth2Token", "TOKEN"),
        ("aws_secret_access_key", "SECRET"),
        ("pw", "PASSWORD"),
    ];
    for (name, class) in yes {
        assert_eq!(
            keys.classify(name.as_bytes()).map(KeyClass::name),
            Some(class),
            "{name}"
        );
    }
    let no = [
        "password_min_length",
        "token_count",
        "max_tokens",
        "secret_manager",
        "password_policy",
        "tokenizer",
        "secretary",
        "author",
        "authority",
        "primary_key",
        "sort_key",
        "keyboard",
        "monkey",
        "subject",
        "memory_category",
        "passenger",
        "keynote",
        "value",
        "",
        "eos_token",
        "next_page_token",
        "key_id",
        "public_key",
        "signature_algorithm",
        "boarding_pass",
        "bypass",
        "hotkey",
    ];
    for name in no {
        assert_eq!(keys.classify(name.as_bytes()), None, "{name}");
    }
    assert_eq!(split_words(b"XApiKey"), ["x", "api", "key"]);
    assert_eq!(split_words(b"APIKey"), ["api", "key"]);
    assert_eq!(split_words(b"OAuth2Token"), ["o", "auth2", "token"]);
    assert_eq!(
        split_words(b"DB_PASSWORD.x-y z"),
        ["db", "password", "x", "y", "z"]
    );
    assert_eq!(keys.words(b"pgpassword"), ["pg", "password"]);
}

#[test]
fn every_credential_word_holds_an_assignment_keyword() {
    // A key the classifier accepts must also wake the assignment rule's prefilter.
    let d = det();
    let keywords = &d
        .rules()
        .iter()
        .find(|r| r.id == "assignment")
        .unwrap()
        .keywords;
    let names = [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pwd",
        "pw",
        "pword",
        "pin",
        "otp",
        "totp",
        "hotp",
        "cvv",
        "cvc",
        "token",
        "bearer",
        "jwt",
        "cookie",
        "authorization",
        "secret",
        "credential",
        "creds",
        "signature",
        "sig",
        "auth",
        "mnemonic",
        "apikey",
        "sessionid",
        "pincode",
        "seed_phrase",
        "otp_code",
        "password_hash",
        "api_key",
    ];
    for name in names {
        assert!(d.keys().classify(name.as_bytes()).is_some(), "{name}");
        assert!(
            keywords.iter().any(|k| name.contains(k.as_str())),
            "{name} wakes no keyword"
        );
    }
}

#[test]
fn patterns_are_bounded() {
    for rule in det().rules() {
        assert!(rule.max_width <= catalogue::MAX_WIDTH, "{}", rule.id);
    }
    for bad in [
        "a+",
        "a*b",
        "(?:ab){2,}",
        "^abc",
        "abc$",
        "a{0,5000}",
        "(?:)",
    ] {
        let source = format!(
            "version = 1\n[[rules]]\nid = \"x\"\nkind = \"X\"\ndescription = \"\"\npattern = '{bad}'\n{}",
            &CATALOGUE[CATALOGUE.find("[keys]").unwrap()..]
        );
        assert!(Detector::new(&source).is_err(), "{bad} was accepted");
    }
}

#[test]
fn overlapping_findings_merge_into_their_union_with_the_first_rules_kind() {
    let f = |start, end, rule| Finding {
        start,
        end,
        rule,
        kind: rule,
    };
    assert_eq!(
        merge(vec![f(5, 20, 3), f(0, 10, 7), f(30, 40, 1)]),
        vec![f(0, 20, 3), f(30, 40, 1)]
    );
    assert_eq!(
        merge(vec![f(0, 10, 2), f(10, 12, 1)]),
        vec![f(0, 10, 2), f(10, 12, 1)]
    );
    assert_eq!(merge(vec![f(0, 10, 2), f(0, 10, 1)]), vec![f(0, 10, 1)]);
}

#[test]
fn byte_spans_map_to_code_points() {
    // "é" is 2 bytes, "😀" 4, a WTF-8 lone surrogate 3: one code point each.
    let hay = "é ghp_x 😀 y".as_bytes();
    let mut found = vec![
        Finding {
            start: 3,
            end: 8,
            rule: 0,
            kind: 0,
        },
        Finding {
            start: 9,
            end: 13,
            rule: 0,
            kind: 0,
        },
    ];
    Detector::to_code_points(hay, &mut found);
    assert_eq!(
        (found[0].start, found[0].end, found[1].start, found[1].end),
        (2, 7, 8, 9)
    );
    // A span that starts or ends inside a sequence takes the whole code point.
    let mut inside = vec![Finding {
        start: 1,
        end: 10,
        rule: 0,
        kind: 0,
    }];
    Detector::to_code_points(hay, &mut inside);
    assert_eq!((inside[0].start, inside[0].end), (0, 9));
    let wtf8 = [b'a', 0xED, 0xA0, 0x80, b'b'];
    let mut lone = vec![Finding {
        start: 4,
        end: 5,
        rule: 0,
        kind: 0,
    }];
    Detector::to_code_points(&wtf8, &mut lone);
    assert_eq!((lone[0].start, lone[0].end), (2, 3));
}

#[test]
fn scrubbed_output_never_matches_again() {
    let d = det();
    for v in vectors() {
        let found = d.scan_bytes(v.text.as_bytes(), v.pii);
        let mut out = Vec::new();
        let mut done = 0;
        for f in &found {
            out.extend_from_slice(&v.text.as_bytes()[done..f.start]);
            out.extend_from_slice(format!("[REDACTED:{}]", d.kind_name(f)).as_bytes());
            done = f.end;
        }
        out.extend_from_slice(&v.text.as_bytes()[done..]);
        assert_eq!(
            d.scan_bytes(&out, v.pii),
            vec![],
            "{}: {}",
            v.rule,
            String::from_utf8_lossy(&out)
        );
    }
}

#[test]
fn adversarial_inputs_finish() {
    // Not a timing test: it runs every rule over inputs built to make a backtracking or a restarting
    // scan quadratic, at a size where a quadratic scan would not finish in the test's lifetime.
    let d = det();
    let n = 1 << 18;
    let inputs: Vec<Vec<u8>> = vec![
        b"a.".repeat(n / 2),
        b"a=".repeat(n / 2),
        b"password: ".repeat(n / 10),
        [b"http://a:".as_slice(), &b"b@".repeat(n / 2)].concat(),
        b"@".repeat(n),
        b"-----BEGIN RSA PRIVATE KEY-----\n".repeat(n / 32),
        b"eyJ".repeat(n / 3),
        b"tokens=".repeat(n / 7),
        // Keys nested in the value of the key before them (each once cost a 1 KiB read).
        b"key=".repeat(n / 4),
        b"api_key=".repeat(n / 8),
        b"key=<".repeat(n / 5),
        b"password:your_".repeat(n / 14),
        b"token: \"".repeat(n / 8),
        b"?token=".repeat(n / 7),
        b"eyJhaaaaaaaa.eyJaaaaaaaaa.".repeat(n / 26),
        // Issue 36's grammars.
        [b"key=a".as_slice(), &b")".repeat(n)].concat(),
        [b"key=".as_slice(), &b"(".repeat(n)].concat(),
        b"token: {{".repeat(n / 9),
        b"token: |\n".repeat(n / 9),
        b"<password>".repeat(n / 10),
        b"<key>password</key>".repeat(n / 19),
        b"name=\"password\" value=".repeat(n / 22),
        [
            b"kind: Secret\n".as_slice(),
            &b"\ndata:\n  a: b".repeat(n / 14),
        ]
        .concat(),
        b"Secret".repeat(n / 6),
        b"sumologic key=".repeat(n / 14),
        b"apiToken,".repeat(n / 9),
        b"apikey \"".repeat(n / 8),
        b"-----BEGIN PUBLIC KEY-----\n".repeat(n / 27),
        b"ssh-rsa AAAA".repeat(n / 12),
        b"token=Zq8vH5jK2mNp4QrT ".repeat(n / 23),
    ];
    for hay in inputs {
        let _ = d.scan_bytes(&hay, true);
    }
}

#[test]
fn no_cap_cuts_a_secret() {
    // A secret far longer than any bound the detector has (a value, a run, a pattern's repetition)
    // is covered whole by one finding.
    let d = det();
    let mut rng = Rng(23);
    let an = alphabet("an").as_bytes();
    let secret: String = (0..70_000)
        .map(|_| an[rng.below(an.len())] as char)
        .collect();
    let secret = format!("aZ7{secret}");
    let templates = [
        "api_key={}",
        "password: {} then",
        "the password is {}",
        "token=\"{}\"",
        "Authorization: Bearer {}",
        "curl -u dana:{} https://example.com",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}",
    ];
    for template in templates {
        let text = template.replace("{}", &secret);
        let at = text.find(&secret).unwrap();
        let found = d.scan_bytes(text.as_bytes(), false);
        assert!(
            found
                .iter()
                .any(|f| f.start <= at && f.end >= at + secret.len()),
            "{template}: {found:?}"
        );
    }
}

/// Where a scan's time goes, rule by rule, on a text file (default /tmp/prose.txt, or $SCRUB_PROFILE):
/// `cargo test --release --lib profile_rules -- --ignored --nocapture`.
#[test]
#[ignore]
fn profile_rules() {
    let path = std::env::var("SCRUB_PROFILE").unwrap_or_else(|_| "/tmp/prose.txt".into());
    let hay = std::fs::read(path).unwrap();
    let d = det();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let _ = d.scan_bytes(&hay, false);
        eprintln!("total {:?} for {} bytes", t.elapsed(), hay.len());
    }
    // SCRUB_SPLIT=lines or paragraphs: the text as the write path meets it, record by record, and
    // which rules the records wake (the cost of a rule summed over them).
    if let Ok(split) = std::env::var("SCRUB_SPLIT") {
        let sep: &[u8] = if split == "lines" { b"\n" } else { b"\n\n" };
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut rest: &[u8] = &hay;
        while let Some(i) = memchr::memmem::find(rest, sep) {
            parts.push(&rest[..i]);
            rest = &rest[i + sep.len()..];
        }
        parts.push(rest);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for p in &parts {
                let _ = d.scan_bytes(p, false);
            }
            eprintln!("records {:?} for {} records", t.elapsed(), parts.len());
        }
        let mut per_rule = vec![std::time::Duration::ZERO; d.rules().len()];
        let mut woke = vec![0usize; d.rules().len()];
        let mut keywords = std::time::Duration::ZERO;
        for p in &parts {
            let t = std::time::Instant::now();
            let on = d.selected(p, false);
            keywords += t.elapsed();
            for (i, rule) in d.rules().iter().enumerate() {
                if on[i] {
                    let mut out = Vec::new();
                    let t = std::time::Instant::now();
                    d.scan_rule(i, rule, p, &[], &mut out);
                    per_rule[i] += t.elapsed();
                    woke[i] += 1;
                }
            }
        }
        eprintln!("keywords over records {keywords:?}");
        eprintln!(
            "rules over records {:?}",
            per_rule.iter().sum::<std::time::Duration>()
        );
        let t = std::time::Instant::now();
        for p in &parts {
            let _ = scan::public_ranges(p);
        }
        eprintln!("public ranges over records {:?}", t.elapsed());
        let mut order: Vec<usize> = (0..per_rule.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(per_rule[i]));
        for &i in order.iter().take(60) {
            eprintln!(
                "{:30} {:?} over {} records",
                d.rules()[i].id,
                per_rule[i],
                woke[i]
            );
        }
    }
    let t = std::time::Instant::now();
    let on = d.keywords.find_overlapping_iter(&hay).count();
    eprintln!("keywords {:?} ({on} hits)", t.elapsed());
    let on = d.selected(&hay, false);
    let mut all = Vec::new();
    let (mut rules_total, mut small) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    for (i, rule) in d.rules().iter().enumerate() {
        if !on[i] {
            continue;
        }
        let mut out = Vec::new();
        let t = std::time::Instant::now();
        d.scan_rule(i, rule, &hay, &[], &mut out);
        let el = t.elapsed();
        rules_total += el;
        if el.as_micros() > 500 {
            eprintln!("{:30} {:?} {} found", rule.id, el, out.len());
        } else {
            small += el;
        }
        all.extend(out);
    }
    eprintln!("rules {rules_total:?} (of which under 0.5 ms each: {small:?})");
    let t = std::time::Instant::now();
    let public = scan::public_ranges(&hay);
    eprintln!("public ranges {:?} ({} ranges)", t.elapsed(), public.len());
    let t = std::time::Instant::now();
    let merged = merge(all);
    eprintln!("merge {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let n = scan::copies(&hay, merged, &[], &[]).len();
    eprintln!("copies {:?} ({n} findings)", t.elapsed());
}
