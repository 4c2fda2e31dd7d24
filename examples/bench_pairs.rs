//! Times the core on label pairs without Python: `cargo run --release --example bench_pairs -- PAIRS.tsv`
//! (one `stored<TAB>incoming` pair per line): difflib's ratio, and the contract's decision on the
//! normalised labels. Run it under `valgrind --tool=callgrind` for instruction counts that machine
//! load cannot skew.

use std::time::Instant;

use memdedup::contract::MatchParams;
use memdedup::matcher::{ratio_of, BSide, Matcher};
use memdedup::{Query, Text};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: bench_pairs PAIRS.tsv [rounds] [ratio|match]");
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    // Optional third argument: `ratio` or `match`, to time (or count instructions of) one alone.
    let only = std::env::args().nth(3).unwrap_or_default();
    let text = std::fs::read_to_string(path).expect("readable pairs file");
    let pairs: Vec<(&[u8], &[u8])> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
        .collect();
    let normalised: Vec<(Text, Text)> = pairs
        .iter()
        .filter(|_| only != "ratio")
        .map(|(a, b)| {
            let norm = |s: &[u8]| {
                Text::from_codepoints(&s.iter().map(|&c| c as u32).collect::<Vec<_>>())
                    .and_then(|t| t.normalise_ascii())
                    .expect("a small label fits memory")
                    .unwrap_or_default()
            };
            (norm(a), norm(b))
        })
        .collect();
    let mut m = Matcher::new();
    let mut side = BSide::default();
    let p = MatchParams::default();
    for round in 0..rounds {
        let start = Instant::now();
        let mut total = 0.0;
        for (a, b) in pairs.iter().filter(|_| only != "match") {
            side.rebuild(b, true, None);
            m.set_a(a, &side);
            total += ratio_of(m.matches(&side), a.len() + b.len());
        }
        let ratio_ns = start.elapsed().as_secs_f64() / pairs.len() as f64 * 1e9;
        let start = Instant::now();
        let mut hits = 0;
        for (a, b) in normalised.iter().filter(|_| only != "ratio") {
            hits += Query::new(b.clone()).matches(&mut m, a, &p) as usize;
        }
        let match_ns = start.elapsed().as_secs_f64() / pairs.len() as f64 * 1e9;
        println!("round {round}: ratio {ratio_ns:.0} ns/pair, labels_match {match_ns:.0} ns/pair (checksum {total:.6}, {hits} matches)");
    }
}
