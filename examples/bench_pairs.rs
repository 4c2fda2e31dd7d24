//! Times the core on label pairs without Python: `cargo run --release --example bench_pairs -- PAIRS.tsv`
//! (one `stored<TAB>incoming` pair per line). A quick loop for tuning the matcher itself.

use std::time::Instant;

use memdedup::matcher::{ratio_of, BSide, Matcher};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: bench_pairs PAIRS.tsv");
    let text = std::fs::read_to_string(path).expect("readable pairs file");
    let pairs: Vec<(&[u8], &[u8])> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
        .collect();
    let mut m = Matcher::new();
    let mut side = BSide::default();
    for round in 0..3 {
        let start = Instant::now();
        let mut total = 0.0;
        for _ in 0..10 {
            for (a, b) in &pairs {
                side.rebuild(b, true, None);
                m.set_a(a, &side);
                total += ratio_of(m.matches(&side), a.len() + b.len());
            }
        }
        let per = start.elapsed().as_secs_f64() / (10 * pairs.len()) as f64 * 1e9;
        println!("round {round}: {per:.0} ns/pair (checksum {total:.6})");
    }
}
