//! Packed 16-bucket histograms (4 bits a count, 8 bytes a label) and the filter the label index
//! scans them with: `Σ_b min(q[b], h[b]) >= need`, four histograms an AVX2 step.

/// Buckets of a packed histogram: 16 counts of 4 bits in 8 bytes (byte `i`: bucket `i` in the low
/// nibble, bucket `i + 8` in the high one). A count of 15 means "15 or more".
pub const PACKED_BUCKETS: usize = 16;

/// Pack 16 byte counts into nibbles (counts above 15 are stored as 15: "15 or more").
pub fn pack_nibbles(counts: &[u8; PACKED_BUCKETS]) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = counts[i].min(15) | (counts[i + 8].min(15) << 4);
    }
    out
}

/// `Σ_b min(q[b], h[b])` with a stored count of 15 read as unbounded: at least the same sum over
/// the true counts, so an upper bound wherever the true one is.
#[inline]
pub fn nibble_overlap(q: &[u8; PACKED_BUCKETS], packed: &[u8; 8]) -> u32 {
    let mut sum = 0u32;
    for (i, &byte) in packed.iter().enumerate() {
        for (b, h) in [(i, byte & 15), (i + 8, byte >> 4)] {
            sum += if h == 15 {
                q[b] as u32
            } else {
                q[b].min(h) as u32
            };
        }
    }
    sum
}

/// The indices `k` of `packed` with `nibble_overlap(q, packed[k]) >= need`, ascending, written to
/// `hits` (cleared); returns their number.
pub fn nibble_filter(q: &[u8; PACKED_BUCKETS], packed: &[[u8; 8]], need: u32, hits: &mut Vec<u32>) {
    hits.clear();
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // A query count of at most 15 is at most any stored count read as "15 or more": then
            // `min` on the stored nibble as it is gives the same sum, and the kernel skips the
            // mapping of 15 (two of its slowest instructions).
            if q.iter().all(|&c| c <= 15) {
                // SAFETY: the CPU supports AVX2 (checked above).
                unsafe { nibble_filter_avx2::<false>(q, packed, need, hits) };
            } else {
                // SAFETY: as above.
                unsafe { nibble_filter_avx2::<true>(q, packed, need, hits) };
            }
            return;
        }
    }
    hits.extend(
        packed
            .iter()
            .enumerate()
            .filter(|(_, h)| nibble_overlap(q, h) >= need)
            .map(|(k, _)| k as u32),
    );
}

/// [`nibble_filter`] four histograms a step: the low and high nibbles unpacked into two registers
/// (one histogram's eight buckets per 64-bit lane), with `MAP_15` a 15 turned into 255 so that
/// `min` takes the query's count, one `sad` per register for the lane sums, compared with `need` at once.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn nibble_filter_avx2<const MAP_15: bool>(
    q: &[u8; PACKED_BUCKETS],
    packed: &[[u8; 8]],
    need: u32,
    hits: &mut Vec<u32>,
) {
    use std::arch::x86_64::*;
    let lo_q = u64::from_le_bytes([q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]]) as i64;
    let hi_q = u64::from_le_bytes([q[8], q[9], q[10], q[11], q[12], q[13], q[14], q[15]]) as i64;
    let qlo = _mm256_set1_epi64x(lo_q);
    let qhi = _mm256_set1_epi64x(hi_q);
    let nib = _mm256_set1_epi8(15);
    let zero = _mm256_setzero_si256();
    // Passing lanes have `sum > need - 1`.
    let below = _mm256_set1_epi64x(need as i64 - 1);
    let quads = packed.len() / 4;
    for o in 0..quads {
        // SAFETY: histograms 4o..4o + 4 (8 bytes each) lie inside `packed` (o < len / 4).
        let v = unsafe { _mm256_loadu_si256(packed.as_ptr().add(4 * o).cast()) };
        let lo = _mm256_and_si256(v, nib);
        let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
        let (lo, hi) = if MAP_15 {
            (
                _mm256_or_si256(lo, _mm256_cmpeq_epi8(lo, nib)),
                _mm256_or_si256(hi, _mm256_cmpeq_epi8(hi, nib)),
            )
        } else {
            (lo, hi)
        };
        let sum = _mm256_add_epi64(
            _mm256_sad_epu8(_mm256_min_epu8(lo, qlo), zero),
            _mm256_sad_epu8(_mm256_min_epu8(hi, qhi), zero),
        );
        let mut pass =
            _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(sum, below))) as u32;
        while pass != 0 {
            let b = pass.trailing_zeros();
            pass &= pass - 1;
            hits.push(4 * o as u32 + b);
        }
    }
    for (k, h) in packed.iter().enumerate().skip(4 * quads) {
        if nibble_overlap(q, h) >= need {
            hits.push(k as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    #[test]
    fn the_kernel_equals_the_plain_sum_and_bounds_the_true_one() {
        let mut rng = Rng(11);
        for _ in 0..200 {
            let mut q = [0u8; 16];
            // Half the queries within 15 (the kernel without the mapping of 15), half beyond.
            let top = if rng.below(2) == 0 { 16 } else { 40 };
            q.iter_mut().for_each(|x| *x = rng.below(top) as u8);
            let counts: Vec<[u8; 16]> = (0..rng.below(40))
                .map(|_| {
                    let mut c = [0u8; 16];
                    c.iter_mut().for_each(|x| *x = rng.below(24) as u8);
                    c
                })
                .collect();
            let packed: Vec<[u8; 8]> = counts.iter().map(pack_nibbles).collect();
            for (c, p) in counts.iter().zip(&packed) {
                let exact: u32 = q.iter().zip(c).map(|(&a, &b)| a.min(b) as u32).sum();
                assert!(nibble_overlap(&q, p) >= exact);
            }
            let need = rng.below(200) as u32;
            let mut hits = vec![7];
            nibble_filter(&q, &packed, need, &mut hits);
            let want: Vec<u32> = (0..packed.len() as u32)
                .filter(|&k| nibble_overlap(&q, &packed[k as usize]) >= need)
                .collect();
            assert_eq!(hits, want);
        }
    }
}
