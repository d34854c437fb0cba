// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Helpers for the executors' tests.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::ModuleImage;

/// A fat binary holding `ptx` as one uncompressed PTX entry for sm_50.
pub fn ptx_fatbin(ptx: &str) -> Arc<ModuleImage> {
    let mut payload = ptx.as_bytes().to_vec();
    payload.push(0);
    payload.resize(payload.len().next_multiple_of(8), 0);
    // The entry header as nvcc writes it (80 bytes, ending with the record of the ptxas
    // options, empty); NVIDIA's driver crashed on one without that record.
    let mut h = vec![0u8; 80];
    h[0..2].copy_from_slice(&1u16.to_le_bytes());
    // The entry version nvcc writes.
    h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    h[4..8].copy_from_slice(&80u32.to_le_bytes());
    h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[0x14..0x18].copy_from_slice(&64u32.to_le_bytes());
    h[0x18..0x1a].copy_from_slice(&0u16.to_le_bytes());
    h[0x1a..0x1c].copy_from_slice(&7u16.to_le_bytes());
    h[0x1c..0x20].copy_from_slice(&50u32.to_le_bytes());
    h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
    h[64..68].copy_from_slice(&72u32.to_le_bytes());
    h.extend(payload);
    let mut bytes = 0xBA55_ED50u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&16u16.to_le_bytes());
    bytes.extend_from_slice(&(h.len() as u64).to_le_bytes());
    bytes.extend(h);
    let hash = Sha256::digest(&bytes).into();
    Arc::new(ModuleImage { hash, bytes })
}
