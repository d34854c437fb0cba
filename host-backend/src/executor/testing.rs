// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Helpers for the executors' tests.

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
