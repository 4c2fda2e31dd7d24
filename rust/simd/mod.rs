//! SIMD kernels behind safe wrappers, one file per concept (as memchr's `arch/` does). Each public
//! function checks what its kernel needs (CPU features, lengths) and falls back to plain code that
//! gives the same answer; each `unsafe fn` states its contract under `# Safety`, and each call
//! says under `SAFETY:` why the contract holds.
//!
//! - [`histogram`]: byte-count histograms (`Σ min` of two, the join's two-stage filter over a run)
//!   and the prefetch of a slice.
//! - [`nibble`]: packed 16-bucket histograms and the label index's filter over them.
//! - [`bytes`]: which bytes of a byte string equal one byte (the matcher's row scans).
//! - [`byte_dp`]: the longest run of equal bytes in a range (the matcher's byte DP).
//! - [`ids`]: common prefixes and suffixes of id sequences (the matcher's run extension).
//! - [`ascii`]: lower-casing an already collapsed ASCII label (label normalisation).

pub mod ascii;
pub mod byte_dp;
pub mod bytes;
pub mod histogram;
pub mod ids;
pub mod nibble;

pub use nibble::{nibble_filter, nibble_overlap, pack_nibbles, PACKED_BUCKETS};

/// Asks for the cache line holding `x` to be brought into cache (a hint: no effect on results).
#[inline]
pub fn prefetch<T>(x: &T) {
    prefetch_address((x as *const T).cast());
}

/// [`prefetch`] of the cache line holding `address`, which may be any address (prefetching one
/// that is not mapped does nothing).
#[inline(always)]
pub fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch never faults and reads nothing the program sees, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Whether this CPU has AVX2 (the standard library detects it once and caches the answer). A test
/// can make it false on its own thread ([`SSE2_ONLY`]) to run the SSE2 paths on a CPU with AVX2.
#[inline]
pub fn has_avx2() -> bool {
    #[cfg(test)]
    if SSE2_ONLY.with(|only| only.get()) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
thread_local! {
    /// Set by a test to take the SSE2 paths on a CPU with AVX2 (on its own thread).
    pub static SSE2_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
