// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The container saved device state travels in: a fixed header, then the body.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "VCUDAST\0"
//!      8     4  version (little endian), VERSION
//!     12     4  flags, 0
//!     16     8  body length (little endian)
//!     24    32  SHA-256 of the body
//!     56     -  body: a postcard-encoded `DeviceState`
//! ```
//!
//! The checksum catches a truncated or damaged file or stream before anything is decoded;
//! it is not a signature: whoever can write the state can write a matching checksum, so
//! the loader treats the body as hostile all the same (bounded lengths, every address and
//! handle checked on load).

use sha2::{Digest, Sha256};

use super::MigrateError;
use super::state::DeviceState;

/// First bytes of a saved state.
pub const MAGIC: [u8; 8] = *b"VCUDAST\0";
/// The format version this backend writes and reads.
pub const VERSION: u32 = 2;
/// Bytes of the header.
pub const HEADER_LEN: usize = 56;
/// Largest body accepted (the state of a VM's sessions, device memory included, compressed).
pub const MAX_BODY_LEN: u64 = 1 << 40;

/// Encodes `state` into a container.
pub fn encode(state: &DeviceState) -> Result<Vec<u8>, MigrateError> {
    let hint: usize = state.sessions.iter().map(|(_, s)| s.size_hint()).sum();
    let mut head = Vec::with_capacity(HEADER_LEN + hint);
    head.resize(HEADER_LEN, 0);
    let mut out =
        postcard::to_extend(state, head).map_err(|e| MigrateError::Encode(e.to_string()))?;
    let body_len = (out.len() - HEADER_LEN) as u64;
    let sum: [u8; 32] = Sha256::digest(&out[HEADER_LEN..]).into();
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&0u32.to_le_bytes());
    out[16..24].copy_from_slice(&body_len.to_le_bytes());
    out[24..56].copy_from_slice(&sum);
    Ok(out)
}

/// Checks a container and decodes its body.
pub fn decode(bytes: &[u8]) -> Result<DeviceState, MigrateError> {
    let header = bytes
        .get(..HEADER_LEN)
        .ok_or(MigrateError::Format("shorter than its header"))?;
    if header[0..8] != MAGIC {
        return Err(MigrateError::Format("not a vcuda device state (bad magic)"));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
    if version != VERSION {
        return Err(MigrateError::Version(version, VERSION));
    }
    if header[12..16] != [0; 4] {
        return Err(MigrateError::Format("unknown flags"));
    }
    let len = u64::from_le_bytes(header[16..24].try_into().unwrap_or_default());
    let body = &bytes[HEADER_LEN..];
    if len > MAX_BODY_LEN || len != body.len() as u64 {
        return Err(MigrateError::Format(
            "body length disagrees with the header",
        ));
    }
    let sum: [u8; 32] = Sha256::digest(body).into();
    if header[24..56] != sum {
        return Err(MigrateError::Format(
            "checksum mismatch (damaged or truncated)",
        ));
    }
    let (state, rest) = postcard::take_from_bytes::<DeviceState>(body)
        .map_err(|e| MigrateError::Decode(e.to_string()))?;
    if !rest.is_empty() {
        return Err(MigrateError::Format("bytes after the body"));
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let state = DeviceState {
            sessions: Vec::new(),
            next_session: 7,
        };
        let bytes = encode(&state).unwrap();
        assert_eq!(decode(&bytes).unwrap().next_session, 7);
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(&b).is_err(), "byte {i} flipped");
        }
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "cut at {n}");
        }
        // A state of the first format (before arrays and textures) or of a later one.
        for v in [1, VERSION + 1] {
            let mut b = bytes.clone();
            b[8..12].copy_from_slice(&v.to_le_bytes());
            assert!(matches!(decode(&b), Err(MigrateError::Version(f, VERSION)) if f == v));
        }
    }
}
