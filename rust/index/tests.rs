//! The index against deciding every stored label ([`LabelIndex::query_brute`]).

use super::*;
use crate::bounds::m_min;
use crate::contract::{MatchParams, PairDecider};
use crate::test_rng::Rng;

/// Labels built from a few words, so that restatements, containment and near misses are common;
/// some wide, some long (over 255 elements, where histograms are not used).
fn label(rng: &mut Rng) -> Text {
    const WORDS: [&str; 12] = [
        "user", "prefers", "dark", "mode", "in", "every", "editor", "lives", "berlin", "café",
        "日本", "x",
    ];
    let n = match rng.below(20) {
        0 => 60 + rng.below(40),
        _ => 1 + rng.below(9),
    };
    let words: Vec<&str> = (0..n).map(|_| WORDS[rng.below(WORDS.len())]).collect();
    Text::from_text(&words.join(" "))
}

fn params(rng: &mut Rng) -> MatchParams {
    const T: [f64; 7] = [0.85, 0.85, 0.6, 0.95, 1.0, 0.0, 1.5];
    const C: [usize; 6] = [16, 16, 4, 0, 30, 1];
    MatchParams {
        threshold: T[rng.below(T.len())],
        min_chars: C[rng.below(C.len())],
    }
}

fn check(index: &LabelIndex, part: u32, q: &Text, p: &MatchParams, rng_first: bool) {
    let mut s = QueryScratch::default();
    let mut d = PairDecider::default();
    let never = Cancel::never();
    let got = index.query(part, q, p, rng_first, &mut s, &never).unwrap();
    let want = index.query_brute(part, q, p, rng_first, &mut d).unwrap();
    assert_eq!(got, want, "query {q:?} with {p:?}");
}

#[test]
fn queries_equal_brute_force_as_labels_come_and_go() {
    for seed in 1..=12u64 {
        let mut rng = Rng(seed * 0x9E37_79B9);
        let serves = [16, 16, 4, 1, 40][rng.below(5)];
        let mut index = LabelIndex::new(serves);
        for step in 0..400 {
            let part = rng.below(2) as u32;
            match rng.below(10) {
                0 if index.next_seq() > 0 => {
                    let slot = rng.below(index.next_seq() as usize) as u64;
                    index.remove(slot).unwrap();
                }
                6 if index.next_seq() > 0 => {
                    let seq = rng.below(index.next_seq() as usize) as u64;
                    let live = index.contains(seq);
                    let text = label(&mut rng);
                    assert_eq!(index.relabel(seq, text, &Cancel::never()).unwrap(), live);
                }
                1..=5 => {
                    index
                        .insert(part, label(&mut rng), &Cancel::never())
                        .unwrap();
                }
                _ => {}
            }
            if step % 3 == 0 {
                let q = label(&mut rng);
                let p = params(&mut rng);
                check(&index, part, &q, &p, rng.below(2) == 0);
            }
        }
    }
}

#[test]
fn insert_many_equals_one_by_one() {
    let mut rng = Rng(77);
    let texts: Vec<Text> = (0..300).map(|_| label(&mut rng)).collect();
    let parts: Vec<u32> = (0..300).map(|k| (k % 3) as u32).collect();
    let mut a = LabelIndex::new(16);
    let mut b = LabelIndex::new(16);
    assert_eq!(
        a.insert_many(&parts, texts.clone(), &Cancel::never())
            .unwrap(),
        0
    );
    for (t, &p) in texts.iter().zip(&parts) {
        b.insert(p, t.clone(), &Cancel::never()).unwrap();
    }
    assert_eq!(a.len(), 300);
    let p = MatchParams::default();
    let (mut s, mut d) = (QueryScratch::default(), PairDecider::default());
    for q in texts.iter().take(60) {
        for part in 0..3 {
            let never = Cancel::never();
            let x = a.query(part, q, &p, false, &mut s, &never).unwrap();
            let y = b.query(part, q, &p, false, &mut s, &never).unwrap();
            assert_eq!(x, y);
            assert_eq!(x, a.query_brute(part, q, &p, false, &mut d).unwrap());
        }
    }
}

#[test]
fn containment_across_lengths_is_found_both_ways() {
    let mut index = LabelIndex::new(16);
    let short = Text::from_text("prefers dark mode everywhere");
    let long = Text::from_text(
        "the user told us on several occasions that they prefers dark mode everywhere, at home and at work",
    );
    index.insert(0, short.clone(), &Cancel::never()).unwrap();
    index.insert(0, long.clone(), &Cancel::never()).unwrap();
    let p = MatchParams::default();
    let mut s = QueryScratch::default();
    let never = Cancel::never();
    // The short stored label occurs in the long incoming one, and the short incoming one in the
    // long stored one: both outside the ratio window.
    let hits = index.query(0, &long, &p, false, &mut s, &never).unwrap();
    assert_eq!(
        hits.iter().map(|h| (h.0, h.1)).collect::<Vec<_>>(),
        [(0, Reason::Containment), (1, Reason::Ratio)]
    );
    let hits = index.query(0, &short, &p, false, &mut s, &never).unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [0, 1]);
    // Another partition sees nothing.
    assert!(index
        .query(1, &short, &p, false, &mut s, &never)
        .unwrap()
        .is_empty());
    // Retracted: gone.
    assert!(index.remove(1).unwrap());
    assert!(!index.remove(1).unwrap());
    assert_eq!(
        index
            .query(0, &short, &p, false, &mut s, &never)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(index.len(), 1);
}

/// Issue 37: slots are reused (lowest first) and given back, memory returns to its level, and the
/// answers keep the insertion order whatever slot a label lives in.
#[test]
fn churn_reuses_slots_and_memory_returns_to_its_level() {
    let never = Cancel::never();
    let p = MatchParams::default();
    let mut s = QueryScratch::default();
    let mut index = LabelIndex::new(16);
    let keep = Text::from_text("the user prefers dark mode in every editor they use");
    index.insert(0, keep.clone(), &never).unwrap();
    let level = index.memory_bytes();
    let churned = Text::from_text("the user prefers dark mode in every editor they use at work");
    for k in 0..20_000u64 {
        let seq = index.insert(0, churned.clone(), &never).unwrap();
        assert_eq!(seq, k + 1);
        assert!(index.remove(seq).unwrap());
    }
    let st = index.stats();
    assert_eq!(
        (st.labels, st.slots, st.free_slots, st.partitions),
        (1, 1, 0, 1)
    );
    assert!(st.tombstones <= 4096, "{st:?}");
    assert!(
        index.memory_bytes() <= level + 4096 * 24,
        "{} vs {level}",
        index.memory_bytes()
    );
    // Zero live labels: everything is given back.
    let mut empty = LabelIndex::new(16);
    let zero = empty.memory_bytes();
    for _ in 0..5_000 {
        let seq = empty.insert(7, churned.clone(), &never).unwrap();
        empty.remove(seq).unwrap();
    }
    assert_eq!(empty.memory_bytes(), zero);
    assert_eq!(empty.stats().partitions, 0);

    // A reused slot: the newest label lives in the lowest slot, and still answers last.
    let mut index = LabelIndex::new(16);
    let a = index.insert(0, keep.clone(), &never).unwrap();
    let b = index.insert(0, churned.clone(), &never).unwrap();
    assert!(index.remove(a).unwrap());
    let c = index.insert(0, keep.clone(), &never).unwrap();
    assert_eq!(index.stats().slots, 2);
    let hits = index.query(0, &keep, &p, false, &mut s, &never).unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [b, c]);
    let first = index.query(0, &keep, &p, true, &mut s, &never).unwrap();
    assert_eq!(first.iter().map(|h| h.0).collect::<Vec<_>>(), [b]);
    assert!(!index.remove(a).unwrap() && !index.contains(a));
}

/// Issue 37: insertion numbers go past 2^32 (no limit over the index's life), generations wrap.
#[test]
fn insertion_numbers_past_u32_and_generations_wrap() {
    let never = Cancel::never();
    let mut index = LabelIndex::new(4);
    index.next_seq = u32::MAX as u64 - 1;
    index.next_gen = u32::MAX - 1;
    let t = Text::from_text("prefers dark mode");
    let seqs: Vec<u64> = (0..4)
        .map(|_| index.insert(0, t.clone(), &never).unwrap())
        .collect();
    assert_eq!(seqs[3], u32::MAX as u64 + 2);
    assert!(index.remove(seqs[1]).unwrap());
    let mut s = QueryScratch::default();
    let hits = index
        .query(0, &t, &MatchParams::default(), false, &mut s, &never)
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        [seqs[0], seqs[2], seqs[3]]
    );
}

/// Issue 37: removing N copies of one label, or N labels sharing a phrase, visits O(total
/// postings) list entries (counted), not O(N x list length).
#[test]
fn removals_are_linear_in_total() {
    let never = Cancel::never();
    for distinct in [false, true] {
        let mut visited = Vec::new();
        for n in [2_000usize, 8_000] {
            let mut index = LabelIndex::new(16);
            let seqs: Vec<u64> = (0..n)
                .map(|k| {
                    let text = if distinct {
                        format!("{k} the user prefers dark mode in every editor")
                    } else {
                        "the user prefers dark mode in every editor".to_string()
                    };
                    index.insert(0, Text::from_text(&text), &never).unwrap()
                })
                .collect();
            let filed: usize = index.entries.iter().map(|e| e.postings as usize).sum();
            let before = index.list_work();
            for seq in seqs {
                index.remove(seq).unwrap();
            }
            // The partition is dropped with its last label: count what the removals visited.
            visited.push((index.list_work() - before) as f64 / filed as f64);
        }
        // Per posting filed, the work stays flat as N grows x4.
        assert!(
            visited[1] <= 4.0 && visited[1] <= 2.0 * visited[0] + 1.0,
            "{visited:?}"
        );
    }
}

/// A label longer than a posting's length field holds is still found both ways by containment.
#[test]
fn labels_past_the_posting_length_field_are_found() {
    let never = Cancel::never();
    let p = MatchParams::default();
    let mut s = QueryScratch::default();
    let mut rng = Rng(8);
    let long: Vec<u8> = (0..substrings::LEN_MAX as usize + 100)
        .map(|_| b"abcdefgh "[rng.below(9)])
        .collect();
    let piece = Text::Narrow(long[500_000..500_040].to_vec());
    let long = Text::Narrow(long);
    let mut index = LabelIndex::new(16);
    let a = index.insert(0, long.clone(), &never).unwrap();
    let hits = index.query(0, &piece, &p, false, &mut s, &never).unwrap();
    assert_eq!(
        hits.iter().map(|h| (h.0, h.1)).collect::<Vec<_>>(),
        [(a, Reason::Containment)]
    );
    let b = index.insert(0, piece.clone(), &never).unwrap();
    let mut long_query = long.clone();
    if let Text::Narrow(v) = &mut long_query {
        v.push(b'x');
    }
    let hits = index
        .query(0, &long_query, &p, false, &mut s, &never)
        .unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [a, b]);
}

/// A cancelled `insert_many` stores nothing (what it had placed is taken out again).
#[test]
fn a_cancelled_insert_many_stores_nothing() {
    let mut rng = Rng(41);
    let texts: Vec<Text> = (0..10_000).map(|_| label(&mut rng)).collect();
    let mut index = LabelIndex::new(16);
    index.insert(0, texts[0].clone(), &Cancel::never()).unwrap();
    let before = index.memory_bytes();
    let cancel = Cancel::new();
    cancel.cancel();
    let parts = vec![0u32; texts.len()];
    assert!(matches!(
        index.insert_many(&parts, texts, &cancel),
        Err(Error::Interrupted)
    ));
    assert_eq!((index.len(), index.stats().slots), (1, 1));
    assert!(index.memory_bytes() <= before + 64 * 1024);
}

/// Relabel keeps the insertion number (the order) and the slot, and answers as a fresh label.
#[test]
fn relabel_keeps_the_place_in_the_order() {
    let never = Cancel::never();
    let p = MatchParams::default();
    let mut s = QueryScratch::default();
    let mut d = PairDecider::default();
    let mut index = LabelIndex::new(16);
    let old = Text::from_text("lives in berlin with two cats and a dog");
    let new = Text::from_text("the user prefers dark mode in every editor");
    let a = index.insert(0, old.clone(), &never).unwrap();
    let b = index.insert(0, new.clone(), &never).unwrap();
    assert!(index.relabel(a, new.clone(), &never).unwrap());
    let hits = index.query(0, &new, &p, false, &mut s, &never).unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [a, b]);
    assert!(index
        .query(0, &old, &p, false, &mut s, &never)
        .unwrap()
        .is_empty());
    assert_eq!(hits, index.query_brute(0, &new, &p, false, &mut d).unwrap());
    assert_eq!(index.stats().slots, 2);
    assert!(!index.relabel(99, old, &never).unwrap());
}

#[test]
fn minimisers_of_a_substring_are_among_the_text_s() {
    let mut rng = Rng(5);
    for _ in 0..300 {
        let t = label(&mut rng);
        let cps = t.codepoints();
        if cps.len() < 2 {
            continue;
        }
        let a = rng.below(cps.len());
        let b = a + 1 + rng.below(cps.len() - a);
        let sub = Text::from_codepoints(&cps[a..b]).unwrap();
        for (g, w) in [(8, 9), (4, 1), (1, 1), (3, 5)] {
            let (mut all, mut part) = (Vec::new(), Vec::new());
            minimisers::minimisers(&t, g, w, &mut all, &Cancel::never()).unwrap();
            minimisers::minimisers(&sub, g, w, &mut part, &Cancel::never()).unwrap();
            assert!(part.iter().all(|m| all.contains(m)), "{sub:?} in {t:?}");
        }
    }
}

/// Timing on a real corpus: `MEMDEDUP_JOIN_CORPUS=... cargo test --release --lib index_real_corpus_timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn index_real_corpus_timing() {
    let path = std::env::var("MEMDEDUP_JOIN_CORPUS").expect("set MEMDEDUP_JOIN_CORPUS");
    let raw = std::fs::read(&path).unwrap();
    let mut labels = Vec::new();
    let mut out = Vec::new();
    for line in raw.split(|&b| b == b'\n') {
        if crate::normalise::normalise_ascii(line, &mut out).unwrap() {
            labels.push(Text::Narrow(out.clone()));
        }
    }
    let parts = vec![0u32; labels.len()];
    let t0 = std::time::Instant::now();
    let mut index = LabelIndex::new(16);
    index
        .insert_many(&parts, labels.clone(), &Cancel::never())
        .unwrap();
    println!(
        "{} labels, build {:?}, {} MB",
        labels.len(),
        t0.elapsed(),
        index.memory_bytes() >> 20
    );
    let p = MatchParams::default();
    let mut s = QueryScratch::default();
    let never = Cancel::never();
    let part = &index.partitions[&0];
    let mut rng = Rng(3);
    let (mut t_ratio, mut t_cont, mut t_dec) = (0f64, 0f64, 0f64);
    let (mut n_ratio, mut n_cont, mut n_hit) = (0usize, 0usize, 0usize);
    let q_n = 2000;
    for _ in 0..q_n {
        let q = &labels[rng.below(labels.len())];
        s.candidates.clear();
        let t = std::time::Instant::now();
        index.ratio_candidates(part, q, &p, &mut s, &never).unwrap();
        t_ratio += t.elapsed().as_secs_f64();
        n_ratio += s.candidates.len();
        let t = std::time::Instant::now();
        let before = s.candidates.len();
        index
            .containment_candidates(part, q, &p, &mut s, &never)
            .unwrap();
        t_cont += t.elapsed().as_secs_f64();
        n_cont += s.candidates.len() - before;
        let t = std::time::Instant::now();
        n_hit += index.query(0, q, &p, false, &mut s, &never).unwrap().len();
        t_dec += t.elapsed().as_secs_f64();
    }
    // Where the window's labels go: scanned, past both histograms, past the LCS bound.
    let (mut scanned, mut hist_pass) = (0usize, 0usize);
    let mut hits = Vec::new();
    for _ in 0..200 {
        let q = &labels[rng.below(labels.len())];
        let lb = q.len();
        let (c, f) = (coarse_histogram(q).unwrap(), histogram(q).unwrap());
        for (&la, run) in &part.runs {
            if LabelIndex::in_window(la, lb, p.threshold) && la <= 255 {
                let need = m_min(la + lb, p.threshold).unwrap();
                scanned += run.slots.len();
                crate::simd::nibble_filter(&c, &run.packed, need as u32, &mut hits);
                hist_pass += hits
                    .iter()
                    .filter(|&&k| {
                        let r = Run::record_len(la);
                        let at = k as usize * r;
                        let fine: &[u8; crate::histogram::BUCKETS] = run.records
                            [at..at + crate::histogram::BUCKETS]
                            .try_into()
                            .unwrap();
                        crate::histogram::hist_overlap(&f, fine) as usize >= need
                    })
                    .count();
            }
        }
    }
    println!(
        "per query: {} scanned, {} pass the histograms",
        scanned / 200,
        hist_pass / 200
    );
    let t = std::time::Instant::now();
    let mut passed = 0;
    for _ in 0..200 {
        let q = &labels[rng.below(labels.len())];
        let lb = q.len();
        let c = coarse_histogram(q).unwrap();
        for (&la, run) in &part.runs {
            if LabelIndex::in_window(la, lb, p.threshold) && la <= 255 {
                let need = m_min(la + lb, p.threshold).unwrap();
                crate::simd::nibble_filter(&c, &run.packed, need as u32, &mut hits);
                passed += hits.len();
            }
        }
    }
    println!(
        "nibble kernel alone: {:.1} us a query ({} pass)",
        t.elapsed().as_secs_f64() / 200.0 * 1e6,
        passed / 200
    );
    // The same kernel on one run that stays in cache: compute, not memory.
    let (&la, run) = part.runs.iter().max_by_key(|(_, r)| r.slots.len()).unwrap();
    let q = labels.iter().find(|t| t.len() == la).unwrap();
    let c = coarse_histogram(q).unwrap();
    let need = m_min(2 * la, p.threshold).unwrap() as u32;
    let t = std::time::Instant::now();
    for _ in 0..200 {
        crate::simd::nibble_filter(&c, &run.packed[..4096], need, &mut hits);
    }
    let per = t.elapsed().as_secs_f64() / (200.0 * 4096.0) * 1e9;
    println!("kernel on 4096 cached labels: {per:.2} ns a label");
    // What the containment lists cost: postings read and substring tests.
    let subs = part.substrings.as_ref().unwrap();
    let (mut read_one, mut read_all, mut tests) = (0usize, 0usize, 0usize);
    let mut mins = Vec::new();
    for _ in 0..200 {
        let q = &labels[rng.below(labels.len())];
        let lb = q.len();
        subs.minimisers_of(q, &mut mins, &Cancel::never()).unwrap();
        for posting in subs.containing(&mins) {
            read_all += 1;
            let len = posting.len().unwrap_or(0);
            tests += (len >= lb
                && !LabelIndex::in_window(len, lb, p.threshold)
                && substrings::element_mask(q) & !posting.mask() == 0)
                as usize;
        }
        for posting in subs.contained(&mins) {
            read_one += 1;
            let len = posting.len().unwrap_or(0);
            tests +=
                (len < lb && len >= 16 && !LabelIndex::in_window(len, lb, p.threshold)) as usize;
        }
    }
    println!("containment per query: {} postings on the one-lists, {} on the chosen all-list, {} substring tests", read_one / 200, read_all / 200, tests / 200);
    let us = |x: f64| x / q_n as f64 * 1e6;
    println!(
        "per query: ratio candidates {:.1} us ({} each), containment {:.1} us ({}), whole query {:.1} us, hits {}",
        us(t_ratio), n_ratio / q_n, us(t_cont), n_cont / q_n, us(t_dec), n_hit / q_n
    );
}
