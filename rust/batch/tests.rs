//! The batch layer's tests: results that do not depend on who computes them, worker counts, replay
//! and clusters against the pairwise contract.

use super::*;

fn texts(labels: &[&str]) -> Vec<Text> {
    labels.iter().map(|s| Text::from_text(s)).collect()
}

#[test]
fn cdist_is_the_same_whoever_computes_it() {
    let queries = texts(&["the cat sat", "a dog ran", "", "ωmega the cat"]);
    let choices = texts(&[
        "the cat sat down",
        "dog ran",
        "the cat",
        "x",
        "ωmega cat sat",
    ]);
    for cutoff in [0.0, 0.5] {
        let one = cdist(
            &queries,
            &choices,
            true,
            cutoff,
            Workers::Calling,
            &Cancel::never(),
        );
        let one = one.unwrap();
        assert!(one.iter().any(|&r| r > 0.0));
        for workers in [Workers::All, Workers::Threads(2), Workers::Threads(3)] {
            let got = cdist(&queries, &choices, true, cutoff, workers, &Cancel::never());
            assert_eq!(got.unwrap(), one, "{workers:?}");
        }
    }
}

#[test]
fn workers_counts_as_rapidfuzz_takes_them() {
    assert_eq!(Workers::from_count(-1), Ok(Workers::All));
    assert_eq!(Workers::from_count(1), Ok(Workers::Calling));
    assert_eq!(Workers::from_count(2), Ok(Workers::Threads(2)));
    let most = MAX_WORKERS as i64;
    assert_eq!(Workers::from_count(most), Ok(Workers::Threads(MAX_WORKERS)));
    for n in [0, -2, i64::MIN, most + 1, i64::MAX] {
        assert!(
            matches!(Workers::from_count(n), Err(Error::InvalidInput(_))),
            "{n}"
        );
    }
    let pool = Workers::Threads(2).pool().unwrap().unwrap();
    assert_eq!(pool.current_num_threads(), 2);
    assert!(Workers::Calling.pool().unwrap().is_none());
}

#[test]
fn replay_follows_the_prefix_gate_and_partitions() {
    let raw = [
        "Uses pytest and ruff",
        "Uses pytest and ruff for Python projects",
        "uses pytest and ruff",
        "Uses pytest and ruff",
        "  ",
        "Prefers dark mode",
        "Prefers dark mode",
    ];
    let stripped: Vec<Text> = texts(&raw).iter().map(|t| t.strip_py().unwrap()).collect();
    let norm: Vec<Text> = raw
        .iter()
        .map(|s| {
            let mut out = Vec::new();
            crate::normalise::normalise_ascii(s.as_bytes(), &mut out).unwrap();
            Text::Narrow(out)
        })
        .collect();
    let partition = [0, 0, 0, 1, 0, 0, 0];
    let rp = ReplayParams {
        matching: MatchParams::default(),
        prefix_mode: PrefixMode::Raw,
        prefix_len: 20,
        query_limit: 20,
    };
    let r = replay(&stripped, &norm, &partition, &rp, &Cancel::never()).unwrap();
    // 1 extends 0 (containment); 2 differs in case at the start: not fetched under the raw gate;
    // 3 is in another partition; 4 is empty; 6 restates 5 (short key: the whole label is the prefix).
    assert_eq!(r.canonical, vec![0, 0, 2, 3, 4, 5, 5]);
    assert_eq!(r.outcome[4], Some(Outcome::Empty));
    let rp = ReplayParams {
        prefix_mode: PrefixMode::Normalised,
        ..rp
    };
    let r = replay(&stripped, &norm, &partition, &rp, &Cancel::never()).unwrap();
    assert_eq!(r.canonical, vec![0, 0, 0, 3, 4, 5, 5]);
}

#[test]
fn clusters_canonical_and_components() {
    // 0-1, 1-2 match but 0-2 do not: canonical keeps 2 apart, components chain it in.
    let pairs = [(0, 1), (1, 2), (3, 4)];
    let never = Cancel::never();
    let (c, via) = clusters(5, &pairs, ClusterMode::Canonical, &never).unwrap();
    assert_eq!(c, vec![0, 0, 2, 3, 3]);
    assert_eq!(via, vec![None, Some(0), None, None, Some(3)]);
    let (c, _) = clusters(5, &pairs, ClusterMode::Components, &never).unwrap();
    assert_eq!(c, vec![0, 0, 0, 3, 3]);
}
