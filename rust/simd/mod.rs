//! SIMD kernels behind safe wrappers, one file per concept (as memchr's `arch/` does). Each public
//! function checks what its kernel needs (CPU features, lengths) and falls back to plain code that
//! gives the same answer; each `unsafe fn` states its contract under `# Safety`, and each call
//! says under `SAFETY:` why the contract holds.
//!
//! - [`histogram`]: byte-count histograms (`Σ min` of two, the join's two-stage filter over a run)
//!   and the prefetch of a slice.
//! - [`nibble`]: packed 16-bucket histograms and the label index's filter over them.

pub mod histogram;
pub mod nibble;

pub use nibble::{nibble_filter, nibble_overlap, pack_nibbles, PACKED_BUCKETS};

/// Asks for the cache line holding `x` to be brought into cache (a hint: no effect on results).
#[inline]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch never faults, whatever the address; this one is a valid reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
