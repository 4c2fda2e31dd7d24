//! The matcher's tests: every search `Matcher` picks between against difflib's `find_longest_match`
//! written out as CPython has it, the byte remap, buffer reservations, tie-breaks and cancellation.

use super::*;

fn r(a: &str, b: &str) -> f64 {
    ratio(a.as_bytes(), b.as_bytes(), true)
}

/// difflib's `find_longest_match` written out as CPython has it (dict-free but the same loops),
/// with no junk function: the oracle for the searches `Matcher` picks between.
fn difflib_longest(
    a: &[u32],
    b: &[u32],
    autojunk: bool,
    (alo, ahi, blo, bhi): (usize, usize, usize, usize),
) -> (usize, usize, usize) {
    difflib_longest_with_junk(a, b, autojunk, |_| false, (alo, ahi, blo, bhi))
}

/// difflib's `find_longest_match` with an `isjunk` predicate.
fn difflib_longest_with_junk(
    a: &[u32],
    b: &[u32],
    autojunk: bool,
    junk: impl Fn(u32) -> bool,
    (alo, ahi, blo, bhi): (usize, usize, usize, usize),
) -> (usize, usize, usize) {
    let n = b.len();
    let mut popular = std::collections::HashSet::new();
    if autojunk && n >= 200 {
        let mut counts = std::collections::HashMap::new();
        for &x in b.iter().filter(|&&x| !junk(x)) {
            *counts.entry(x).or_insert(0usize) += 1;
        }
        let ntest = n / 100 + 1;
        popular.extend(
            counts
                .into_iter()
                .filter(|&(_, c)| c > ntest)
                .map(|(x, _)| x),
        );
    }
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    let mut j2len = vec![0usize; n + 1];
    for (i, &x) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut newj2len = vec![0usize; n + 1];
        for j in blo..bhi {
            if x != b[j] || popular.contains(&b[j]) || junk(b[j]) {
                continue;
            }
            let k = j2len[j] + 1;
            newj2len[j + 1] = k;
            if k > bestsize {
                (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
            }
        }
        j2len = newj2len;
    }
    for junk_pass in [false, true] {
        while besti > alo
            && bestj > blo
            && junk(b[bestj - 1]) == junk_pass
            && a[besti - 1] == b[bestj - 1]
        {
            (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && junk(b[bestj + bestsize]) == junk_pass
            && a[besti + bestsize] == b[bestj + bestsize]
        {
            bestsize += 1;
        }
    }
    (besti, bestj, bestsize)
}

/// Line-diff-like sequences (a large alphabet, most elements unique, a few frequent "blank
/// lines" that autojunk makes popular, optional junk), edited in runs, against difflib's search:
/// the searches over indexed runs when `b` has junk or popular elements.
#[test]
fn searches_with_junk_and_popular_agree_with_difflib() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut side = BSide::<u32>::default();
    let mut m = Matcher::new();
    let junk_rule = |x: u32| x % 7 == 3;
    for case in 0..1500 {
        let len = [9, 40, 150, 199, 200, 260, 700][rng.below(7)];
        let frequent = [1, 3, 40][rng.below(3)];
        let line = |rng: &mut Rng| {
            if rng.below(5) == 0 {
                rng.below(frequent) as u32
            } else {
                1000 + rng.below(100_000) as u32
            }
        };
        let a: Vec<u32> = (0..len).map(|_| line(&mut rng)).collect();
        let mut b = a.clone();
        if rng.below(4) == 0 {
            // Repeated blocks: equal-length runs tie, and the first one must win.
            let cut = rng.below(a.len() + 1);
            b.extend_from_slice(&a[cut..]);
            for _ in 0..rng.below(3) {
                let x = line(&mut rng);
                b.insert(0, x);
            }
        }
        for _ in 0..rng.below(12) {
            let at = rng.below(b.len() + 1);
            let run = 1 + rng.below(4);
            match rng.below(3) {
                0 => {
                    b.drain(at..(at + run).min(b.len()));
                }
                1 => {
                    for _ in 0..run {
                        let x = line(&mut rng);
                        b.insert(at, x);
                    }
                }
                _ => {
                    for k in at..(at + run).min(b.len()) {
                        b[k] = line(&mut rng);
                    }
                }
            }
        }
        // Chosen apart from `dense` (every fourth case) below, so it meets both settings.
        let autojunk = (case / 2) % 2 == 0;
        let with_junk = case % 3 == 0;
        let rule = |x: u32| with_junk && junk_rule(x);
        // Every fourth case codes both sides as dense first-occurrence ids (as the bindings'
        // element table does), which `rebuild_dense` indexes without its interning map.
        let dense = case % 4 == 1;
        let mut first_seen = std::collections::HashMap::new();
        for &x in &b {
            let next = first_seen.len() as u32;
            first_seen.entry(x).or_insert(next);
        }
        let code = |x: &u32| {
            first_seen
                .get(x)
                .copied()
                .unwrap_or(first_seen.len() as u32)
        };
        let (a_in, b_in): (Vec<u32>, Vec<u32>) = if dense {
            (a.iter().map(code).collect(), b.iter().map(code).collect())
        } else {
            (a.clone(), b.clone())
        };
        let element: Vec<u32> = {
            let mut by_id = vec![0; first_seen.len()];
            for (&x, &id) in &first_seen {
                by_id[id as usize] = x;
            }
            by_id
        };
        let mut junk_of = |x: u32| junk_rule(if dense { element[x as usize] } else { x });
        let junk_of: Option<&mut dyn FnMut(u32) -> bool> = with_junk.then_some(&mut junk_of);
        if dense && (case / 8) % 2 == 1 {
            // Half of them as the element table hands them over, counted.
            let mut counts = vec![0; first_seen.len()];
            for &id in &b_in {
                counts[id as usize] += 1;
            }
            side = BSide::of_dense_ids(b_in.clone(), counts, autojunk, junk_of).unwrap();
        } else if dense {
            side.rebuild_dense(&b_in, autojunk, junk_of);
        } else {
            side.rebuild(&b_in, autojunk, junk_of);
        }
        assert_eq!(side.dense_codes, dense);
        m.set_a(&a_in, &side);
        let windows = random_windows(&mut rng, a.len(), b.len());
        for w in windows {
            let want = difflib_longest_with_junk(&a, &b, autojunk, rule, w);
            assert_eq!(
                m.find_longest_match(&side, Window::new(w.0, w.1, w.2, w.3)),
                want,
                "case {case} {w:?}"
            );
        }
        // The whole recursion (which lists runs once for sequences this long and reads each
        // sub-range's longest run from the list) against difflib's, search by search.
        let want = difflib_blocks_with_junk(&a, &b, autojunk, rule);
        assert_eq!(m.matching_blocks(&side), want, "case {case}");
        let total: usize = want.iter().map(|x| x.2).sum();
        assert_eq!(m.matches(&side), total, "case {case}");
    }
}

/// Sequences with so many distinct elements that `b2j` is not kept as bitsets: the searches
/// read the position lists instead.
#[test]
fn long_distinct_sequences_search_without_bitsets() {
    let mut rng = Rng(0x9FB2_1C65_1E98_DF25);
    let mut m = Matcher::new();
    for case in 0..4 {
        let a: Vec<u32> = (0..2100).map(|k| k * 7 + rng.below(3) as u32).collect();
        let mut b = a.clone();
        for _ in 0..30 {
            let at = rng.below(b.len());
            match rng.below(3) {
                0 => {
                    b.remove(at);
                }
                1 => b.insert(at, rng.below(20_000) as u32),
                _ => b[at] = rng.below(20_000) as u32,
            }
        }
        let side = BSide::new(&b, case % 2 == 0);
        assert!(side.all_indexed && !side.has_bits);
        m.set_a(&a, &side);
        let never = |_: u32| false;
        let whole = (0, a.len(), 0, b.len());
        assert_eq!(
            m.find_longest_match(&side, Window::whole(a.len(), b.len())),
            difflib_longest_with_junk(&a, &b, case % 2 == 0, never, whole)
        );
        let want = difflib_blocks_with_junk(&a, &b, case % 2 == 0, never);
        assert_eq!(m.matching_blocks(&side), want, "case {case}");
    }
}

/// difflib's `get_matching_blocks()` (without the sentinel) over `difflib_longest_with_junk`.
fn difflib_blocks_with_junk(
    a: &[u32],
    b: &[u32],
    autojunk: bool,
    junk: impl Fn(u32) -> bool + Copy,
) -> Vec<(usize, usize, usize)> {
    let mut queue = vec![(0, a.len(), 0, b.len())];
    let mut blocks = Vec::new();
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = difflib_longest_with_junk(a, b, autojunk, junk, (alo, ahi, blo, bhi));
        if k > 0 {
            blocks.push((i, j, k));
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    blocks.sort_unstable();
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for (i, j, k) in blocks {
        match out.last_mut() {
            Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
            _ => out.push((i, j, k)),
        }
    }
    out
}

/// The whole ranges and four random sub-ranges of sequences of lengths `la` and `lb`.
fn random_windows(rng: &mut Rng, la: usize, lb: usize) -> Vec<(usize, usize, usize, usize)> {
    let mut windows = vec![(0, la, 0, lb)];
    for _ in 0..4 {
        let (x, y) = (rng.below(la + 1), rng.below(la + 1));
        let (u, v) = (rng.below(lb + 1), rng.below(lb + 1));
        windows.push((x.min(y), x.max(y), u.min(v), u.max(v)));
    }
    windows
}

use crate::test_rng::Rng;

/// Remapped to bytes, wide sequences give difflib's answers on the code points, or refuse
/// (more than 255 distinct elements in `b`).
#[test]
fn byte_remap_keeps_every_answer() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut remap = ByteRemap::default();
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for case in 0..2000 {
        let alphabet = [3, 40, 300][case % 3];
        // ASCII (NUL included), ASCII and Latin-1, basic-plane and astral text, and 0xFFF0 +
        // up to 300 across the two planes.
        let bases = [0x0u32, 0x20, 0x60, 0x100, 0x4E00, 0x1F600, 0xFFF0];
        // One range for the pair, or each element's own (ASCII, basic and astral mixed).
        let pair_base = bases[rng.below(bases.len())];
        let mixed = case % 5 == 4;
        let element = |rng: &mut Rng| {
            let base = if mixed {
                bases[rng.below(bases.len())]
            } else {
                pair_base
            };
            base + rng.below(alphabet) as u32
        };
        let a: Vec<u32> = (0..rng.below(120)).map(|_| element(&mut rng)).collect();
        let b: Vec<u32> = (0..rng.below(400)).map(|_| element(&mut rng)).collect();
        let distinct = b.iter().collect::<std::collections::HashSet<_>>().len();
        let fits = remap.remap(&a, &b, &mut ra, &mut rb);
        assert_eq!(fits, distinct <= 255);
        if fits {
            // Equal exactly where the code points are equal.
            for (x, &rx) in a.iter().zip(&ra) {
                for (y, &ry) in b.iter().zip(&rb) {
                    assert_eq!(x == y, rx == ry, "{x} {y} -> {rx} {ry}");
                }
            }
            for autojunk in [false, true] {
                assert_eq!(ratio(&ra, &rb, autojunk), ratio(&a, &b, autojunk));
                assert_eq!(
                    matching_blocks(&ra, &rb, autojunk),
                    matching_blocks(&a, &b, autojunk)
                );
            }
            assert_eq!(
                crate::contract::contained(&ra, &rb, 1),
                crate::contract::contained(&a, &b, 1)
            );
        }
    }
    // At the limits: 127 or 128 distinct non-ASCII elements beside ASCII ones (from 0x40),
    // 255 distinct elements, in one plane and across two.
    for distinct in [127, 128, 129, 191, 192, 193, 254, 255, 256] {
        for base in [0x40u32, 0x100, 0xFF80, 0x1F600] {
            // A NUL in b too: the byte an element of a absent from b must never take.
            let b: Vec<u32> = (0..distinct).map(|k| base + k).chain([0]).collect();
            let a: Vec<u32> = b.iter().rev().chain(&[base + 1000]).copied().collect();
            let fits = remap.remap(&a, &b, &mut ra, &mut rb);
            assert_eq!(fits, distinct < 255, "{distinct} from {base:#x}");
            if fits {
                for (x, &rx) in a.iter().zip(&ra) {
                    for (y, &ry) in b.iter().zip(&rb) {
                        assert_eq!(x == y, rx == ry, "{x} {y} -> {rx} {ry}");
                    }
                }
            }
        }
    }
}

#[test]
fn every_search_agrees_with_difflib() {
    every_search_case();
}

#[test]
fn every_search_agrees_with_difflib_without_avx2() {
    crate::simd::SSE2_ONLY.with(|only| only.set(true));
    every_search_case();
}

/// The byte searches' limits: ranges either side of `LANE_ROWS_MAX` rows (byte row offsets), of
/// each vector count's width (either way round: tall ranges run transposed), of
/// `DENSE_MAX_WIDTH` and of `ANCHOR_MIN_RUN`, with the longest run planted to end on
/// the last row, and small alphabets for ties between runs ending on the same row or in the
/// same column.
#[test]
fn byte_dp_row_and_width_limits() {
    let mut rng = Rng(0x5EED_F1A7);
    let mut side = BSide::<u8>::default();
    let mut m = Matcher::new();
    for rows in [
        1, 2, 31, 32, 33, 64, 65, 127, 128, 129, 253, 254, 255, 256, 257, 300,
    ] {
        for width in [
            1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 97, 127, 128, 129, 200, 255,
        ] {
            for trial in 0..9 {
                let alphabet = [2, 3, 4][trial % 3];
                let mut a: Vec<u8> = (0..rows)
                    .map(|_| b'a' + rng.below(alphabet) as u8)
                    .collect();
                let mut b: Vec<u8> = (0..width)
                    .map(|_| b'a' + rng.below(alphabet) as u8)
                    .collect();
                if trial >= 3 {
                    // A run of a letter outside the alphabet, ending on a's last row: of
                    // any length, or either side of ANCHOR_MIN_RUN.
                    let k = if trial >= 6 {
                        (ANCHOR_MIN_RUN + trial - 7).min(rows.min(width))
                    } else {
                        1 + rng.below(rows.min(width))
                    };
                    let at = rng.below(width - k + 1);
                    a[rows - k..].fill(b'z');
                    b[at..at + k].fill(b'z');
                }
                side.rebuild(&b, false, None);
                m.set_a(&a, &side);
                let (a32, b32): (Vec<u32>, Vec<u32>) = (
                    a.iter().map(|&x| x as u32).collect(),
                    b.iter().map(|&x| x as u32).collect(),
                );
                for window in [(0, rows, 0, width), (rows / 3, rows, width / 4, width)] {
                    assert_eq!(
                        m.find_longest_match(
                            &side,
                            Window::new(window.0, window.1, window.2, window.3)
                        ),
                        difflib_longest(&a32, &b32, false, window),
                        "{rows} x {width}, trial {trial}, window {window:?}"
                    );
                }
            }
        }
    }
}

/// Random labels and edits of them (long shared runs, repeats, small alphabets, lengths either
/// side of every search's limits), on one reused `BSide` and `Matcher` per element type, so the
/// buffer resets between different `b`s are exercised too.
fn every_search_case() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut side8 = BSide::<u8>::default();
    let mut side32 = BSide::<u32>::default();
    let mut m = Matcher::new();
    for case in 0..3000 {
        let alphabet = [2, 3, 5, 26, 200][rng.below(5)];
        let len = [0, 1, 7, 16, 17, 33, 64, 66, 129, 190, 260, 300][rng.below(12)];
        let a: Vec<u32> = (0..len).map(|_| rng.below(alphabet) as u32 + 97).collect();
        // b: an edit of a (shared runs) or independent text.
        let b: Vec<u32> = if rng.below(3) > 0 {
            let mut b = a.clone();
            for _ in 0..rng.below(8) {
                let at = rng.below(b.len() + 1);
                match rng.below(3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 => b.insert(at, rng.below(alphabet) as u32 + 97),
                    _ if at < b.len() => b[at] = rng.below(alphabet) as u32 + 97,
                    _ => {}
                }
            }
            b
        } else {
            (0..rng.below(300))
                .map(|_| rng.below(alphabet) as u32 + 97)
                .collect()
        };
        let autojunk = case % 2 == 0;
        let a8: Vec<u8> = a.iter().map(|&x| x as u8).collect();
        let b8: Vec<u8> = b.iter().map(|&x| x as u8).collect();
        side8.rebuild(&b8, autojunk, None);
        side32.rebuild(&b, autojunk, None);
        let windows = random_windows(&mut rng, a.len(), b.len());
        for w in windows {
            let want = difflib_longest(&a, &b, autojunk, w);
            m.set_a(&a8, &side8);
            assert_eq!(
                m.find_longest_match(&side8, Window::new(w.0, w.1, w.2, w.3)),
                want,
                "bytes {a8:?} {b8:?} {w:?}"
            );
            m.set_a(&a, &side32);
            assert_eq!(
                m.find_longest_match(&side32, Window::new(w.0, w.1, w.2, w.3)),
                want,
                "wide {a:?} {b:?} {w:?}"
            );
        }
        // The whole recursion (its shortcuts too, such as the greedy one-element ranges).
        let want = difflib_blocks_with_junk(&a, &b, autojunk, |_| false);
        let total: usize = want.iter().map(|x| x.2).sum();
        m.set_a(&a8, &side8);
        assert_eq!(m.matching_blocks(&side8), want, "bytes {a8:?} {b8:?}");
        assert_eq!(m.matches(&side8), total, "bytes {a8:?} {b8:?}");
        m.set_a(&a, &side32);
        assert_eq!(m.matching_blocks(&side32), want, "wide {a:?} {b:?}");
        assert_eq!(m.matches(&side32), total, "wide {a:?} {b:?}");
    }
}

/// The input-sized buffers `BSide::rebuild` and `Matcher::set_a` fill, as pointers: equal
/// before and after a call when it allocated none of them.
fn buffers<T: Sym>(side: &BSide<T>, m: &Matcher) -> Vec<usize> {
    let s = side;
    vec![
        s.seq.as_ptr() as usize,
        s.ids.as_ptr() as usize,
        s.positions.as_ptr() as usize,
        s.run_ids.as_ptr() as usize,
        s.counts.as_ptr() as usize,
        s.run_start.as_ptr() as usize,
        s.run_len.as_ptr() as usize,
        s.junk.as_ptr() as usize,
        s.popular.as_ptr() as usize,
        s.present.as_ptr() as usize,
        s.elems.as_ptr() as usize,
        s.bytes.as_ptr() as usize,
        s.indexed_mask.as_ptr() as usize,
        m.a_ids.as_ptr() as usize,
        m.a_bytes.as_ptr() as usize,
        m.cells.as_ptr() as usize,
    ]
}

/// After `reserve_for` (both sides' lengths), indexing a `b` (with junk and popular elements,
/// or none) and setting an `a` allocate none of the buffers sized by the input: a size the
/// machine cannot hold fails in `reserve_for`, as an error, not as an abort later.
#[test]
fn reservations_cover_every_input_sized_buffer() {
    fn case<T: Sym>(a: &[T], b: &[T], junk: bool) {
        let mut side = BSide::<T>::default();
        let mut m = Matcher::new();
        side.reserve_for(b.len()).unwrap();
        m.reserve_for::<T>(a.len(), b.len()).unwrap();
        let before = buffers(&side, &m);
        let mut is_junk = |x: T| x.code() % 5 == 0;
        let is_junk: Option<&mut dyn FnMut(T) -> bool> = junk.then_some(&mut is_junk);
        side.rebuild(b, true, is_junk);
        m.set_a(a, &side);
        assert_eq!(buffers(&side, &m), before, "{} / {}", a.len(), b.len());
        if !junk {
            let want: usize = matching_blocks(a, b, true).iter().map(|x| x.2).sum();
            assert_eq!(m.matches(&side), want);
        }
    }
    let mut rng = Rng(0xA110_C8ED);
    for n in [1, 30, 250, 900] {
        for distinct in [3, 50, 5000] {
            let b: Vec<u32> = (0..n).map(|_| 1 + rng.below(distinct) as u32).collect();
            let a: Vec<u32> = (0..n / 2).map(|_| 1 + rng.below(distinct) as u32).collect();
            for junk in [false, true] {
                case(&a, &b, junk);
                if distinct < 256 {
                    let (a8, b8): (Vec<u8>, Vec<u8>) = (
                        a.iter().map(|&x| x as u8).collect(),
                        b.iter().map(|&x| x as u8).collect(),
                    );
                    case(&a8, &b8, junk);
                }
            }
        }
    }
    let too_large = isize::MAX as usize / 2;
    assert!(matches!(
        Matcher::new().reserve_for::<u32>(0, too_large),
        Err(crate::Error::OutOfMemory(_))
    ));
    assert!(matches!(
        BSide::<u32>::default().reserve_for(too_large),
        Err(crate::Error::OutOfMemory(_))
    ));
}

#[test]
fn known_difflib_values() {
    // Values printed by CPython 3.11's difflib.
    assert_eq!(r("abcd", "bcde"), 0.75);
    assert_eq!(r("", ""), 1.0);
    assert_eq!(r("a", ""), 0.0);
    assert_eq!(
        r(
            "private Thread currentThread;",
            "private volatile Thread currentThread;"
        ),
        0.8656716417910447
    );
    assert_eq!(
        matching_blocks(b"abxcd", b"abcd", true),
        vec![(0, 0, 2), (3, 2, 2)]
    );
}

#[test]
fn asymmetry_is_difflib_s() {
    // difflib's ratio depends on argument order; both orders match CPython.
    assert_eq!(r("tide", "diet"), 0.25);
    assert_eq!(r("diet", "tide"), 0.5);
}

#[test]
fn longest_match_tie_breaks() {
    let side = BSide::new(b"ab ab", false);
    let mut m = Matcher::new();
    m.set_a(b" abcd", &side);
    assert_eq!(
        m.find_longest_match(&side, Window::new(0, 5, 0, 5)),
        (0, 2, 3)
    );
    let side = BSide::new(b"abcd", false);
    m.set_a(b"abxab", &side);
    assert_eq!(
        m.find_longest_match(&side, Window::new(0, 5, 0, 4)),
        (0, 0, 2)
    );
}

#[test]
fn first_positions_of_indexed_ids_only() {
    // Dense ids in first-occurrence order; 3 is popular in a b of 300 (more than 300 / 100 + 1
    // times), 1 is junk: those two are not in b2j and have no first position.
    let mut ids: Vec<u32> = vec![0, 1, 2, 0, 1];
    ids.extend(std::iter::repeat_n(3, 10));
    ids.extend(4..289);
    ids.extend([2, 3, 0]);
    let mut counts = vec![0u32; 289];
    for &id in &ids {
        counts[id as usize] += 1;
    }
    let side = BSide::of_dense_ids(ids.clone(), counts, true, Some(&mut |id| id == 1)).unwrap();
    assert!(side.popular_elements() == [3] && side.junk_elements() == [1]);
    for id in 0..289u32 {
        let first = ids
            .iter()
            .position(|&x| x == id)
            .filter(|_| id != 1 && id != 3);
        assert_eq!(side.first_position(id), first, "id {id}");
    }
    assert_eq!(side.first_position(289), None);
    let b2j: Vec<(u32, Vec<u32>)> = side.b2j();
    assert_eq!(b2j.len(), 287);
    for (id, positions) in b2j {
        let expected: Vec<u32> = (0..ids.len() as u32)
            .filter(|&j| ids[j as usize] == id)
            .collect();
        assert_eq!(positions, expected, "id {id}");
    }
}

#[test]
fn popular_elements_are_dropped_from_the_index_only() {
    let b: Vec<u8> = std::iter::repeat_n(b'a', 300).chain(*b"xyz").collect();
    let side = BSide::new(&b, true);
    assert_eq!(side.popular_elements(), vec![b'a']);
    // Identical sequences still match completely: the extension walks over popular elements.
    let mut m = Matcher::new();
    m.set_a(&b, &side);
    assert_eq!(m.matches(&side), b.len());
    let side = BSide::new(&b, false);
    assert!(side.popular_elements().is_empty());
}

#[test]
fn junk_extension() {
    // isjunk = " ": CPython gives 0.9333333333333333 (2 * 7 / 15) for these.
    let a = b"a b c d";
    let b = b"a  b c d";
    let mut side = BSide::default();
    side.rebuild(b, true, Some(&mut |c| c == b' '));
    let mut m = Matcher::new();
    m.set_a(a, &side);
    let got = ratio_of(m.matches(&side), a.len() + b.len());
    assert_eq!(got, 2.0 * 7.0 / 15.0);
    assert_eq!(side.junk_elements(), vec![b' ']);
}

#[test]
fn threshold_decision_agrees_with_ratio() {
    let words = [
        "uses pytest and ruff",
        "uses pytest and ruff for python",
        "prefers dark mode",
        "abcabcabc",
    ];
    let mut m = Matcher::new();
    for a in words {
        for b in words {
            let side = BSide::new(b.as_bytes(), true);
            m.set_a(a.as_bytes(), &side);
            let exact = ratio_of(m.matches(&side), a.len() + b.len());
            for t in [0.0, 0.3, 0.5, exact, 0.85, 0.9, 1.0, f64::NAN, 1.5, -1.0] {
                m.set_a(a.as_bytes(), &side);
                assert_eq!(m.ratio_at_least(&side, t), exact >= t, "{a:?} {b:?} {t}");
            }
        }
    }
}

/// A search cancelled part way stops (whatever the strategy: dense rows, anchors, the sparse
/// DP with junk, line ids) and leaves the matcher's buffers as a finished one does: the next
/// search on it gives difflib's answer.
#[test]
fn a_cancelled_search_stops_and_leaves_the_matcher_reusable() {
    use crate::cancel::Cancel;
    let mut rng = crate::test_rng::Rng(4242);
    let long = |rng: &mut crate::test_rng::Rng, n: usize, k: usize| -> Vec<u8> {
        (0..n).map(|_| b"abcd"[rng.below(k)]).collect()
    };
    let (a, b) = (long(&mut rng, 200_000, 4), long(&mut rng, 200_000, 4));
    let ids_a: Vec<u32> = a.iter().map(|&c| c as u32 % 3).collect();
    let ids_b: Vec<u32> = b.iter().map(|&c| c as u32 % 3).collect();
    let small: Vec<(Vec<u8>, Vec<u8>)> = (0..50)
        .map(|_| {
            let (la, lb) = (rng.below(300), rng.below(300));
            (long(&mut rng, la, 3), long(&mut rng, lb, 3))
        })
        .collect();
    for autojunk in [false, true] {
        let mut m = Matcher::new();
        for round in 0..2 {
            let cancel = Cancel::new();
            let stopper = cancel.clone();
            let timer = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20 * round));
                stopper.cancel();
            });
            m.set_cancel(&cancel);
            let side = BSide::new(&b, autojunk);
            m.set_a(&a, &side);
            m.matching_blocks(&side);
            timer.join().unwrap();
            assert!(m.stopped());
            let side = BSide::new(&ids_b, autojunk);
            m.set_a(&ids_a, &side);
            assert!(!m.ratio_at_least(&side, 0.5) || m.stopped());
            m.set_cancel(&Cancel::never());
            for (x, y) in &small {
                let side = BSide::new(y, autojunk);
                m.set_a(x, &side);
                let want = ratio(x, y, autojunk);
                assert_eq!(ratio_of(m.matches(&side), x.len() + y.len()), want);
            }
        }
    }
}

#[test]
fn wide_and_narrow_agree() {
    let a = "prefers dark mode in every editor";
    let b = "prefers a dark theme in editors";
    let aw: Vec<u32> = a.chars().map(|c| c as u32).collect();
    let bw: Vec<u32> = b.chars().map(|c| c as u32).collect();
    assert_eq!(
        ratio(&aw, &bw, true),
        ratio(a.as_bytes(), b.as_bytes(), true)
    );
    assert_eq!(
        quick_ratio(&aw, &bw).unwrap(),
        quick_ratio(a.as_bytes(), b.as_bytes()).unwrap()
    );
}
