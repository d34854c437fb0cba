// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The container saved device state travels in: a fixed header, the body, a checksum.
//!
//! ```text
//! offset    size  field
//!      0       8  magic "VCUDAST\0"
//!      8       4  version (little endian), VERSION
//!     12       4  flags, 0
//!     16       8  body length L (little endian)
//!     24       L  body: a postcard-encoded `DeviceState`
//!   24+L      16  XXH3-128 of the body (little endian)
//! ```
//!
//! The checksum comes last so that the state streams: the source writes the body into
//! QEMU's pipe as it encodes it ([`encode_to`]), hashing as it goes, while QEMU sends what
//! came already, instead of encoding all of it into memory first. It catches a truncated or
//! damaged stream before anything is decoded; it is not a signature: whoever can write the
//! state can write a matching checksum, so the loader treats the body as hostile all the
//! same (bounded lengths, every address and handle checked on load). A fast hash (XXH3,
//! tens of GB/s) rather than a cryptographic one (SHA-256 took about 0.15 s per 256 MiB on
//! each side, inside the VM's downtime) is enough for that.

use std::io::{self, BufWriter, Read, Write};

use twox_hash::XxHash3_128;

use super::MigrateError;
use super::state::DeviceState;

/// First bytes of a saved state.
pub const MAGIC: [u8; 8] = *b"VCUDAST\0";
/// The format version this backend writes and reads (3: the checksum after the body, XXH3;
/// device memory in tagged blocks, stored as it is where it does not compress; 4: a
/// session's held reply records; 5: the CPU executor's objects of the virtual memory
/// management API, and device memory shared through IPC handles; 6: blocks of device
/// memory named by checksum, received ahead of the stop, `super::precopy`; 7: sessions of
/// the CUDA executor; 8: their cuRAND generators; 9: their arrays and texture objects, the
/// CPU executor's texture objects numbered as the driver's; 10: their objects of the
/// virtual memory management API; 11: the order their arrays and modules were made in).
pub const VERSION: u32 = 11;
/// Bytes of the header.
pub const HEADER_LEN: usize = 24;
/// Bytes of the checksum after the body.
pub const TRAILER_LEN: usize = 16;
/// Largest body accepted (the state of a VM's sessions, device memory included, compressed).
pub const MAX_BODY_LEN: u64 = 1 << 40;
/// Bytes written to the stream at a time.
const WRITE_BUFFER: usize = 1 << 20;

/// The header of a body of `body_len` bytes.
fn header(body_len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&body_len.to_le_bytes());
    h
}

/// The checksum of a body.
fn checksum(body: &[u8]) -> [u8; TRAILER_LEN] {
    XxHash3_128::oneshot(body).to_le_bytes()
}

/// Bytes of `state`'s encoded body. Runs the encoder without output, so an encoding error
/// shows here, before anything is written.
pub fn body_len(state: &DeviceState) -> Result<u64, MigrateError> {
    let n = postcard::serialize_with_flavor(state, postcard::ser_flavors::Size::default())
        .map_err(|e| MigrateError::Encode(e.to_string()))?;
    Ok(n as u64)
}

/// Passes writes on to `inner`, hashing them.
struct Hashing<W> {
    inner: W,
    hash: XxHash3_128,
    written: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.write(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `state` as a container into `out`, encoding as it writes; returns the bytes
/// written.
pub fn encode_to<W: Write>(state: &DeviceState, out: W) -> Result<u64, MigrateError> {
    let len = body_len(state)?;
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, out);
    out.write_all(&header(len)).map_err(MigrateError::Io)?;
    // The buffer sits in front of the hash: large byte runs (device memory) go straight
    // through, small fields are hashed a buffer at a time.
    let body = BufWriter::with_capacity(
        WRITE_BUFFER,
        Hashing {
            inner: out,
            hash: XxHash3_128::new(),
            written: 0,
        },
    );
    let body = postcard::to_io(state, body).map_err(|e| MigrateError::Encode(e.to_string()))?;
    let body = body
        .into_inner()
        .map_err(|e| MigrateError::Io(e.into_error()))?;
    if body.written != len {
        return Err(MigrateError::Encode(format!(
            "the body came to {} bytes, {len} expected",
            body.written
        )));
    }
    let mut out = body.inner;
    out.write_all(&body.hash.finish_128().to_le_bytes())
        .map_err(MigrateError::Io)?;
    out.flush().map_err(MigrateError::Io)?;
    Ok(HEADER_LEN as u64 + len + TRAILER_LEN as u64)
}

/// Encodes `state` into a container in memory.
pub fn encode(state: &DeviceState) -> Result<Vec<u8>, MigrateError> {
    let len = usize::try_from(body_len(state)?).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    out.try_reserve_exact(len.saturating_add(HEADER_LEN + TRAILER_LEN))
        .map_err(|_| MigrateError::NoRoom(format!("{len} bytes of state")))?;
    encode_to(state, &mut out)?;
    Ok(out)
}

/// A container around an already encoded body (for tests and fuzzing).
pub fn wrap(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len() + TRAILER_LEN);
    out.extend_from_slice(&header(body.len() as u64));
    out.extend_from_slice(body);
    out.extend_from_slice(&checksum(body));
    out
}

/// Reads a container from `input` to its end, checks it and decodes its body. The body is
/// read into memory of exactly its announced length (refused if that much cannot be
/// reserved) and checked whole before it is decoded.
pub fn decode_from<R: Read>(mut input: R) -> Result<DeviceState, MigrateError> {
    let short = |e: io::Error| match e.kind() {
        io::ErrorKind::UnexpectedEof => MigrateError::Format("truncated"),
        _ => MigrateError::Io(e),
    };
    let mut header = [0u8; HEADER_LEN];
    input.read_exact(&mut header).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => MigrateError::Format("shorter than its header"),
        _ => MigrateError::Io(e),
    })?;
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
    if len > MAX_BODY_LEN {
        return Err(MigrateError::Format("body longer than any state"));
    }
    let mut body = Vec::new();
    let want = usize::try_from(len).map_err(|_| MigrateError::Format("body too long"))?;
    body.try_reserve_exact(want)
        .map_err(|_| MigrateError::NoRoom(format!("{len} bytes of state")))?;
    (&mut input)
        .take(len)
        .read_to_end(&mut body)
        .map_err(MigrateError::Io)?;
    if body.len() != want {
        return Err(MigrateError::Format("truncated"));
    }
    let mut sum = [0u8; TRAILER_LEN];
    input.read_exact(&mut sum).map_err(short)?;
    let mut more = [0u8; 1];
    if input.read(&mut more).map_err(MigrateError::Io)? != 0 {
        return Err(MigrateError::Format("bytes after the checksum"));
    }
    if checksum(&body) != sum {
        return Err(MigrateError::Format(
            "checksum mismatch (damaged or truncated)",
        ));
    }
    let (state, rest) = postcard::take_from_bytes::<DeviceState>(&body)
        .map_err(|e| MigrateError::Decode(e.to_string()))?;
    if !rest.is_empty() {
        return Err(MigrateError::Format("bytes after the body"));
    }
    Ok(state)
}

/// Checks a container in memory and decodes its body.
pub fn decode(bytes: &[u8]) -> Result<DeviceState, MigrateError> {
    decode_from(bytes)
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
        assert_eq!(bytes.len(), HEADER_LEN + 1 + 1 + TRAILER_LEN);
        assert_eq!(decode(&bytes).unwrap().next_session, 7);
        assert_eq!(bytes, wrap(&bytes[HEADER_LEN..bytes.len() - TRAILER_LEN]));
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(&b).is_err(), "byte {i} flipped");
        }
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "cut at {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(decode(&longer), Err(MigrateError::Format(_))));
        // A state of an earlier format (2: SHA-256 in the header) or of a later one.
        for v in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, VERSION + 1] {
            let mut b = bytes.clone();
            b[8..12].copy_from_slice(&v.to_le_bytes());
            assert!(matches!(decode(&b), Err(MigrateError::Version(f, VERSION)) if f == v));
        }
    }

    #[test]
    fn a_huge_announced_body_is_refused_without_reading_it() {
        let mut b = header(MAX_BODY_LEN + 1).to_vec();
        b.extend_from_slice(&[0; 64]);
        assert!(matches!(decode(&b), Err(MigrateError::Format(_))));
        // Announced but not sent: truncated (the reservation is virtual memory only).
        let mut b = header(1 << 20).to_vec();
        b.extend_from_slice(&[0; 64]);
        assert!(matches!(decode(&b), Err(MigrateError::Format("truncated"))));
    }

    #[test]
    fn streams_through_a_pipe() {
        let state = DeviceState {
            sessions: Vec::new(),
            next_session: 3,
        };
        let (r, w) = std::io::pipe().unwrap();
        let writer = std::thread::spawn(move || encode_to(&state, w).unwrap());
        let back = decode_from(r).unwrap();
        assert_eq!(back.next_session, 3);
        assert_eq!(
            writer.join().unwrap(),
            (HEADER_LEN + 2 + TRAILER_LEN) as u64
        );
    }
}
