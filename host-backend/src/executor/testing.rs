// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Helpers for the executors' tests (and the session's and shared memory's).

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::ModuleImage;

/// A fat binary holding `ptx` as one uncompressed PTX entry for sm_50, with the entry
/// header nvcc writes.
pub fn ptx_fatbin(ptx: &str) -> Arc<ModuleImage> {
    let bytes = vcuda_fatbin::ptx_fatbin(&[ptx.as_bytes()], 50);
    let hash = Sha256::digest(&bytes).into();
    Arc::new(ModuleImage { hash, bytes })
}

/// An address of this process where `len` bytes are free now (reserved, then given back).
pub fn free_address(len: usize) -> u64 {
    // SAFETY: a reservation at an address the kernel chooses, unmapped at once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        libc::munmap(p, len);
        p as u64
    }
}
