//! The hasher of the matcher's id maps: keys are code points or dense ids, already well spread.

use std::hash::{BuildHasherDefault, Hasher};

use super::*;

/// A multiplicative hasher for `u32` keys: the map only ever holds code points of one string.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) type IdMap = HashMap<u32, u32, BuildHasherDefault<IdHasher>>;
