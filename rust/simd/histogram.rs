//! Byte-count histograms: `Σ_b min(a[b], b[b])` of two 32-bucket histograms (SSE2, the x86_64
//! baseline), and the join's two-stage filter over a run of labels (16 buckets, then 32 on what
//! passes; AVX2, eight labels a step). What the sums bound and why is [`crate::histogram`]'s.

/// `Σ_b min(a[b], b[b])`, in plain code: the answer every kernel here must give.
#[inline]
pub fn min_sum<const N: usize>(a: &[u8; N], b: &[u8; N]) -> u32 {
    a.iter().zip(b).map(|(&x, &y)| x.min(y) as u32).sum()
}

/// [`min_sum`] of two 32-bucket histograms: two `min`s and two `sad`s on x86_64.
#[inline]
pub fn min_sum_32(a: &[u8; 32], b: &[u8; 32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline, so every x86_64 CPU has it.
        unsafe { min_sum_32_sse2(a, b) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        min_sum(a, b)
    }
}

/// [`min_sum_32`] on SSE2.
///
/// # Safety
/// The CPU must support SSE2 (every x86_64 CPU does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn min_sum_32_sse2(a: &[u8; 32], b: &[u8; 32]) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: each load reads 16 bytes at offset 0 or 16 of a 32-byte array.
    let [a0, a1, b0, b1] = unsafe {
        [
            _mm_loadu_si128(a.as_ptr().cast()),
            _mm_loadu_si128(a.as_ptr().add(16).cast()),
            _mm_loadu_si128(b.as_ptr().cast()),
            _mm_loadu_si128(b.as_ptr().add(16).cast()),
        ]
    };
    let z = _mm_setzero_si128();
    let s = _mm_add_epi64(
        _mm_sad_epu8(_mm_min_epu8(a0, b0), z),
        _mm_sad_epu8(_mm_min_epu8(a1, b1), z),
    );
    _mm_cvtsi128_si32(_mm_add_epi64(s, _mm_unpackhi_epi64(s, s))) as u32
}

/// The indices `k` (ascending) of the run `(coarse[k], fine[k])` with `min_sum(x.0, coarse[k]) >=
/// need` and then `min_sum(x.1, fine[k]) >= need`, written to `hits[..n]`; returns `n`. `hits` is
/// grown to the run's length when shorter (the kernel writes every checked index before it knows
/// whether it passes). The run is the shorter of `coarse` and `fine`.
#[inline]
pub fn two_stage_filter(
    x: (&[u8; 16], &[u8; 32]),
    coarse: &[[u8; 16]],
    fine: &[[u8; 32]],
    need: usize,
    hits: &mut Vec<u32>,
) -> usize {
    let len = coarse.len().min(fine.len());
    let (coarse, fine) = (&coarse[..len], &fine[..len]);
    if hits.len() < len {
        hits.resize(len, 0);
    }
    #[cfg(target_arch = "x86_64")]
    {
        // A sum of 16 byte minima is at most 16 x 255 = 4080: a larger `need` passes nothing (and
        // would not fit the kernel's 16-bit compare).
        if need <= 4080 && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked above); `need <= 4080`, `coarse` and `fine`
            // have one length and `hits` at least that length (set above).
            return unsafe { two_stage_filter_avx2(x, coarse, fine, need, hits) };
        }
    }
    two_stage_filter_scalar(x, coarse, fine, need, hits)
}

/// [`two_stage_filter`] in plain code, on a run of one length and `hits` at least that long.
fn two_stage_filter_scalar(
    x: (&[u8; 16], &[u8; 32]),
    coarse: &[[u8; 16]],
    fine: &[[u8; 32]],
    need: usize,
    hits: &mut [u32],
) -> usize {
    let mut n = 0;
    for (k, (hy, fy)) in coarse.iter().zip(fine).enumerate() {
        if min_sum(x.0, hy) as usize >= need && min_sum_32(x.1, fy) as usize >= need {
            hits[n] = k as u32;
            n += 1;
        }
    }
    n
}

/// [`two_stage_filter`] eight labels a step: two coarse histograms per 256-bit register (one `min`,
/// one `sad` for both), the partial sums packed into 16-bit fields (each at most 16 x 255 = 4080),
/// added, and compared with `need` at once; the fine sum only for those that pass.
///
/// # Safety
/// The CPU must support AVX2. `need <= 4080`, `coarse.len() == fine.len() <= hits.len()` (checked
/// again here, answering 0 when they do not hold: they are what makes the answer right, not what
/// keeps the loads in bounds, which follows from `coarse` alone).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn two_stage_filter_avx2(
    x: (&[u8; 16], &[u8; 32]),
    coarse: &[[u8; 16]],
    fine: &[[u8; 32]],
    need: usize,
    hits: &mut [u32],
) -> usize {
    use std::arch::x86_64::*;
    if need > 4080 || coarse.len() != fine.len() || hits.len() < coarse.len() {
        return 0;
    }
    let (hx, fx) = x;
    // Hits are written without a branch: every checked index is stored at `n`, which advances
    // only when it passes (so `hits` needs room for all of them).
    let mut n = 0;
    let mut fine_check = |k: usize| {
        hits[n] = k as u32;
        n += (min_sum_32(fx, &fine[k]) as usize >= need) as usize;
    };
    // SAFETY: a coarse histogram is 16 bytes, the width of the load.
    let x = _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(hx.as_ptr().cast()) });
    let z = _mm256_setzero_si256();
    let needv = _mm256_set1_epi16(need as i16);
    let octs = coarse.len() / 8;
    for o in 0..octs {
        // SAFETY: histograms 8o..8o + 8 (16 bytes each) lie inside `coarse` (o < len / 8): four
        // loads of 32 bytes from its 8o-th cover exactly them.
        let [y0, y1, y2, y3] = unsafe {
            let p = coarse.as_ptr().add(8 * o).cast::<__m256i>();
            [
                _mm256_loadu_si256(p),
                _mm256_loadu_si256(p.add(1)),
                _mm256_loadu_si256(p.add(2)),
                _mm256_loadu_si256(p.add(3)),
            ]
        };
        // Register r holds labels 2r (low half) and 2r + 1 (high half); sad leaves each label's
        // sum in two 64-bit lanes of its half.
        let s0 = _mm256_sad_epu8(_mm256_min_epu8(x, y0), z);
        let s1 = _mm256_sad_epu8(_mm256_min_epu8(x, y1), z);
        let s2 = _mm256_sad_epu8(_mm256_min_epu8(x, y2), z);
        let s3 = _mm256_sad_epu8(_mm256_min_epu8(x, y3), z);
        let packed = _mm256_or_si256(
            _mm256_or_si256(s0, _mm256_slli_epi64(s1, 16)),
            _mm256_or_si256(_mm256_slli_epi64(s2, 32), _mm256_slli_epi64(s3, 48)),
        );
        // Low 64 bits of each half: the four sums of labels 0, 2, 4, 6 (low half) and 1, 3, 5, 7.
        let sums = _mm256_add_epi16(packed, _mm256_srli_si256(packed, 8));
        let below = _mm256_movemask_epi8(_mm256_cmpgt_epi16(needv, sums)) as u32;
        // Bit 2r marks label 2r, bit 16 + 2r label 2r + 1 (one bit per 16-bit sum).
        let pass = !below & 0x0055_0055;
        if pass != 0 {
            // The latter moved to bit 2r + 1, bit k marks label k: the hits come out ascending.
            // (Only here: most steps pass no label.)
            let mut pass = (pass & 0x55) | ((pass >> 15) & 0xAA);
            while pass != 0 {
                let b = pass.trailing_zeros() as usize;
                pass &= pass - 1;
                fine_check(8 * o + b);
            }
        }
    }
    for (k, hy) in coarse.iter().enumerate().skip(8 * octs) {
        if min_sum(hx, hy) as usize >= need {
            fine_check(k);
        }
    }
    n
}

/// Asks for every cache line of `v` to be brought into cache (a hint: no effect on results).
#[inline]
pub fn prefetch_slice<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(v);
        let base = v.as_ptr().cast::<i8>();
        let mut off = 0;
        while off < bytes {
            // SAFETY: a prefetch never faults, whatever the address; `base + off` stays inside `v`
            // (`off < bytes`), so the pointer arithmetic is in bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// A histogram of counts below `top` (at most 256: any byte).
    fn hist<const N: usize>(rng: &mut Rng, top: usize) -> [u8; N] {
        let mut h = [0u8; N];
        h.iter_mut().for_each(|x| *x = rng.below(top) as u8);
        h
    }

    #[test]
    fn the_kernels_equal_the_plain_sums() {
        let mut rng = Rng(28);
        for round in 0..400 {
            // Small counts (labels of a few dozen characters) and full bytes (the extremes).
            let top = if round % 4 == 0 { 256 } else { 12 };
            let (xc, xf) = (hist::<16>(&mut rng, top), hist::<32>(&mut rng, top));
            let len = rng.below(70);
            let coarse: Vec<[u8; 16]> = (0..len).map(|_| hist(&mut rng, top)).collect();
            let fine: Vec<[u8; 32]> = (0..len).map(|_| hist(&mut rng, top)).collect();
            for f in &fine {
                assert_eq!(min_sum_32(&xf, f), min_sum(&xf, f));
            }
            // Needs around the sums that occur, and past what any coarse sum reaches.
            let need = match round % 5 {
                0 => 4080 + rng.below(3),
                1 => rng.below(4),
                _ => rng.below(if top == 256 { 4096 } else { 200 }),
            };
            // The run is the shorter of the two lists.
            let cut = if round % 7 == 0 { len / 2 } else { len };
            let mut want = vec![0u32; len];
            let wn =
                two_stage_filter_scalar((&xc, &xf), &coarse[..cut], &fine[..cut], need, &mut want);
            let mut hits = vec![9u32; 3];
            let n = two_stage_filter((&xc, &xf), &coarse[..cut], &fine, need, &mut hits);
            assert_eq!(&hits[..n], &want[..wn], "round {round}, need {need}");
            let plain: Vec<u32> = (0..cut as u32)
                .filter(|&k| {
                    min_sum(&xc, &coarse[k as usize]) as usize >= need
                        && min_sum(&xf, &fine[k as usize]) as usize >= need
                })
                .collect();
            assert_eq!(&hits[..n], &plain[..]);
        }
    }
}
