//! The join against the brute-force oracle, and the timing harness on a real corpus.

use super::*;

use crate::test_rng::Rng;

/// A random label over `alphabet` of `len` code points.
fn word(rng: &mut Rng, alphabet: &[u32], len: usize) -> Vec<u32> {
    (0..len)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect()
}

/// `s` with a few random insertions, deletions and substitutions.
fn edit(rng: &mut Rng, s: &[u32], alphabet: &[u32], edits: usize) -> Vec<u32> {
    let mut v = s.to_vec();
    for _ in 0..edits {
        let c = alphabet[rng.below(alphabet.len())];
        match rng.below(3) {
            0 => v.insert(rng.below(v.len() + 1), c),
            1 if !v.is_empty() => {
                v.remove(rng.below(v.len()));
            }
            _ if !v.is_empty() => {
                let k = rng.below(v.len());
                v[k] = c;
            }
            _ => v.push(c),
        }
    }
    v
}

/// A mixed set: near-duplicates by edits, repeats, substrings, empty and very short labels, long
/// labels (over 200 elements, so difflib's popular-element rule applies), and wide texts.
fn corpus(seed: u64, n: usize) -> Vec<Text> {
    let mut rng = Rng(seed | 1);
    let small: Vec<u32> = "ab c".chars().map(|c| c as u32).collect();
    let mid: Vec<u32> = "abcdefgh ".chars().map(|c| c as u32).collect();
    let wide: Vec<u32> = "ab é☕ж".chars().map(|c| c as u32).collect();
    let mut out: Vec<Vec<u32>> = Vec::new();
    let mut wide_flag: Vec<bool> = Vec::new();
    while out.len() < n {
        let kind = rng.below(10);
        let alphabet = match rng.below(3) {
            0 => &small,
            1 => &mid,
            _ => &wide,
        };
        let v = match kind {
            0 => Vec::new(),
            1 => {
                let len = 1 + rng.below(2);
                word(&mut rng, alphabet, len)
            }
            2 if !out.is_empty() => out[rng.below(out.len())].clone(),
            3 if !out.is_empty() => {
                let base = out[rng.below(out.len())].clone();
                let a = rng.below(base.len() + 1);
                let b = a + rng.below(base.len() - a + 1);
                base[a..b].to_vec()
            }
            4 => {
                let len = 200 + rng.below(60);
                word(&mut rng, alphabet, len)
            }
            5..=7 if !out.is_empty() => {
                let base = out[rng.below(out.len())].clone();
                let e = rng.below(4);
                edit(&mut rng, &base, alphabet, e)
            }
            _ => {
                let len = 3 + rng.below(40);
                word(&mut rng, alphabet, len)
            }
        };
        // Sometimes a Wide text whose code points all fit a byte (equal to the Narrow one).
        wide_flag.push(rng.below(8) == 0);
        out.push(v);
    }
    out.iter()
        .zip(wide_flag)
        .map(|(v, w)| {
            if w {
                Text::Wide(v.clone())
            } else {
                Text::from_codepoints(v).unwrap()
            }
        })
        .collect()
}

const THRESHOLDS: [f64; 5] = [0.0, 0.5, 0.85, 0.95, 1.0];
const MIN_CHARS: [usize; 3] = [0, 1, 16];

/// `join`, and `join_groups` expanded, equal the brute-force oracle.
fn check(labels: &[Text], p: MatchParams) {
    let never = Cancel::never();
    let brute = join_brute(labels, &p);
    assert!(join(labels, &p, &never).unwrap() == brute, "{p:?} join");
    let (of, groups) = join_groups(labels, &p, &never).unwrap();
    assert!(
        expand_groups(&of, &groups, &never).unwrap() == brute,
        "{p:?} groups"
    );
}

#[test]
fn join_equals_brute_on_random_sets() {
    for seed in 1..=3u64 {
        let labels = corpus(seed * 7919, 150);
        for t in THRESHOLDS {
            for mc in MIN_CHARS {
                check(
                    &labels,
                    MatchParams {
                        threshold: t,
                        min_chars: mc,
                    },
                );
            }
        }
    }
}

#[test]
fn join_equals_brute_at_odd_thresholds() {
    let labels = corpus(42, 120);
    for t in [
        -1.0,
        -0.0,
        0.3,
        2.0 / 3.0,
        0.7,
        0.8,
        0.9,
        0.99,
        1.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        for mc in [0, 3, 40] {
            check(
                &labels,
                MatchParams {
                    threshold: t,
                    min_chars: mc,
                },
            );
        }
    }
}

#[test]
fn join_equals_brute_on_near_duplicates() {
    // Many near-duplicates of a few real-looking labels: most window pairs pass the histograms.
    let mut rng = Rng(12345);
    let bases = [
        "a python library for parsing json files quickly",
        "command line tool to manage your dotfiles",
        "add your description here",
        "the official python client for the example api",
    ];
    let alphabet: Vec<u32> = "abcdefghijklmnopqrstuvwxyz "
        .chars()
        .map(|c| c as u32)
        .collect();
    let mut labels = Vec::new();
    for _ in 0..150 {
        let b: Vec<u32> = bases[rng.below(bases.len())]
            .chars()
            .map(|c| c as u32)
            .collect();
        let e = rng.below(8);
        labels.push(Text::from_codepoints(&edit(&mut rng, &b, &alphabet, e)).unwrap());
    }
    for t in [0.6, 0.75, 0.85, 0.95] {
        for mc in [10, 16] {
            check(
                &labels,
                MatchParams {
                    threshold: t,
                    min_chars: mc,
                },
            );
        }
    }
}

#[test]
fn groups_expand_to_the_pairs() {
    let labels: Vec<Text> = ["x", "abc", "", "abc", "abcd", "x", "", "abc"]
        .iter()
        .map(|s| Text::from_text(s))
        .collect();
    let p = MatchParams {
        threshold: 0.85,
        min_chars: 16,
    };
    let never = Cancel::never();
    let (of, pairs) = join_groups(&labels, &p, &never).unwrap();
    assert_eq!(of, vec![0, 1, 2, 1, 3, 0, 2, 1]);
    // "abc" vs "abcd": 6/7 = 0.857 >= 0.85 both ways; "x" x2 and "abc" x3 match themselves.
    assert_eq!(pairs, vec![(0, 0), (1, 1), (1, 3), (3, 1)]);
    assert_eq!(join(&labels, &p, &never).unwrap(), join_brute(&labels, &p));
    assert!(join(&[], &p, &never).unwrap().is_empty());
    assert!(join(&[Text::default()], &p, &never).unwrap().is_empty());
    // At threshold 0 every pair of non-empty labels matches, listed by group pair too.
    let zero = MatchParams {
        threshold: 0.0,
        ..p
    };
    let (_, pairs) = join_groups(&labels, &zero, &never).unwrap();
    assert_eq!(pairs.len(), 8); // "x" and "abc" self pairs, the 6 ordered pairs of 3 groups
    assert_eq!(
        join(&labels, &zero, &never).unwrap(),
        join_brute(&labels, &zero)
    );
}

#[test]
fn a_cancelled_join_stops() {
    let labels = corpus(5, 400);
    let cancel = Cancel::new();
    cancel.cancel();
    for t in [0.0, 0.85] {
        let p = MatchParams {
            threshold: t,
            min_chars: 16,
        };
        assert_eq!(join(&labels, &p, &cancel), Err(Error::Interrupted));
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let labels = corpus(777, 250);
    let p = MatchParams::default();
    let run = |threads: usize| {
        // A pool that cannot be built fails the test: it must not pass without comparing.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        assert_eq!(pool.current_num_threads(), threads);
        pool.install(|| join_groups_with_stats(&labels, &p, &Cancel::never()))
            .unwrap()
    };
    let (one, many) = (run(1), run(4));
    assert!(
        !one.1.is_empty(),
        "the corpus has matching pairs to compare"
    );
    assert_eq!((&one.0, &one.1), (&many.0, &many.1));
    assert_eq!(one.2.counts(), many.2.counts());
}

/// This process's CPU time from /proc (Linux; 0 elsewhere): the machine may be shared, so wall
/// time alone can mislead.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |k: usize| f.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// Reads `MEMDEDUP_JOIN_CORPUS` (one label per line), normalises the ASCII ones, and times the
/// join: `cargo test --release --lib join_real_corpus_timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn join_real_corpus_timing() {
    // A timing harness run on purpose: without its corpus it fails rather than pass idle.
    let path = std::env::var("MEMDEDUP_JOIN_CORPUS")
        .expect("set MEMDEDUP_JOIN_CORPUS to a file with one label per line");
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut labels = Vec::new();
    let mut out = Vec::new();
    let mut skipped = 0usize;
    let raw = raw.strip_suffix(b"\n").unwrap_or(&raw);
    // MEMDEDUP_JOIN_ALL_LINES: keep non-ASCII lines too, lower-cased by Rust's `to_lowercase`
    // (close to Python's `str.lower`, not exact: good enough for timing, not for answers).
    let all_lines = std::env::var("MEMDEDUP_JOIN_ALL_LINES").is_ok();
    for line in raw.split(|&b| b == b'\n') {
        if crate::normalise::normalise_ascii(line, &mut out).unwrap() {
            labels.push(Text::Narrow(out.clone()));
        } else if all_lines {
            let lowered: Vec<u32> = String::from_utf8_lossy(line)
                .to_lowercase()
                .chars()
                .map(|c| c as u32)
                .collect();
            let mut collapsed = Vec::new();
            crate::normalise::collapse_lowered(&lowered, &mut collapsed).unwrap();
            labels.push(Text::from_codepoints(&collapsed).unwrap());
        } else {
            skipped += 1;
        }
    }
    let limit: usize = std::env::var("MEMDEDUP_JOIN_LIMIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    labels.truncate(limit);
    println!(
        "{} labels ({} non-ASCII lines skipped), {} threads",
        labels.len(),
        skipped,
        rayon::current_num_threads()
    );
    let threshold = std::env::var("MEMDEDUP_JOIN_THRESHOLD")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(crate::contract::DEFAULT_THRESHOLD);
    let p = MatchParams {
        threshold,
        ..MatchParams::default()
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{p:?}; load average before: {}", load.trim());
    let cpu0 = cpu_seconds();
    let start = std::time::Instant::now();
    let never = Cancel::never();
    let (joined, stats) = join_groups_in(&labels, &p, &never).unwrap();
    let t_groups = start.elapsed().as_secs_f64();
    let mut pairs = vec![[0u32; 2]; joined.pair_count(&never).unwrap()];
    joined.expand_into(&mut pairs, &never).unwrap();
    let t_all = start.elapsed().as_secs_f64();
    println!("{stats:#?}");
    println!("cpu (user+sys, all threads) {:.3} s", cpu_seconds() - cpu0);
    println!(
        "join_groups {t_groups:.3} s, + expansion {:.3} s = {t_all:.3} s; {} pairs",
        t_all - t_groups,
        pairs.len()
    );
    if std::env::var("MEMDEDUP_JOIN_SKIP_BRUTE").is_ok() {
        return;
    }
    let k = labels.len().min(5000);
    let start = std::time::Instant::now();
    let brute = join_brute(&labels[..k], &p);
    let t_brute = start.elapsed().as_secs_f64();
    let start = std::time::Instant::now();
    let fast = join(&labels[..k], &p, &never).unwrap();
    let t_fast = start.elapsed().as_secs_f64();
    println!(
        "first {k}: {} pairs, brute {t_brute:.3} s, join {t_fast:.3} s",
        brute.len()
    );
    assert!(fast == brute);
}
