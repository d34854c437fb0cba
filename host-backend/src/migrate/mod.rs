// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Live migration: saving every session of a VM with its device state, and loading it into
//! a fresh backend, so that a guest moves to another host with its CUDA work.
//!
//! What moves is what the guest built through its calls: device memory (every allocation,
//! with its contents, at the same device address), modules and function handles, module
//! variables, streams, events, graphs, CUDA arrays and texture objects, the VMM API's
//! objects, device memory and events shared between the VM's sessions through IPC handles
//! (imports linked again once every session is loaded), cuBLAS handles and cuRAND generators, limits, the
//! sticky error and unsent `printf` output. Handles and device addresses the guest holds
//! stay valid: the loading executor re-creates each object under the handle and at the
//! address the guest knows.
//!
//! A session is saved when it is quiet (no call of it runs: the transport stops taking its
//! messages first). What cannot move yet makes the save fail with
//! [`MigrateError::Unsupported`], naming it: memory opened through an IPC handle whose
//! exporter freed it, a texture whose memory was freed
//! before it, memory shared over a Unix socket, and on the CUDA executor what its
//! `StateOps` names (cuRAND Mersenne Twisters that took too many calls, IPC, and device
//! memory of a backend without `--cuda-migratable`, whose addresses the driver chose).
//!
//! Device memory may travel ahead of the stop: [`precopy`] sends it from the source's
//! backend to the destination's while the guest runs, and the state then names the blocks
//! the destination holds by checksum.
//!
//! The saved bytes ([`mod@format`]) are hostile input to the loader, like a guest's messages:
//! every length is bounded, every allocation is charged to the session's limit, and every
//! address and handle is checked for overlap and duplicates before use. A state that fails a
//! check loads nothing.

pub mod format;
pub mod precopy;
pub mod state;

use serde_bytes::ByteBuf;
use thiserror::Error;

/// Why a save or a load failed.
#[derive(Debug, Error)]
pub enum MigrateError {
    /// The session holds something that cannot be migrated yet.
    #[error("cannot migrate {0}: not supported yet")]
    Unsupported(String),
    /// The state is not a container this backend reads.
    #[error("malformed device state: {0}")]
    Format(&'static str),
    /// The container's version (the first) is not this backend's (the second).
    #[error("device state of format version {0}, this backend reads version {1}")]
    Version(u32, u32),
    /// The body does not decode.
    #[error("malformed device state: {0}")]
    Decode(String),
    /// Encoding failed.
    #[error("cannot encode device state: {0}")]
    Encode(String),
    /// Reading or writing the state's stream failed.
    #[error("device state transfer: {0}")]
    Io(std::io::Error),
    /// The state decodes but does not describe a consistent session.
    #[error("inconsistent device state: {0}")]
    Invalid(String),
    /// Loading needs more than the new session may have.
    #[error("device state does not fit: {0}")]
    NoRoom(String),
}

impl MigrateError {
    /// An [`MigrateError::Invalid`] with this message.
    pub fn invalid(what: impl std::fmt::Display) -> Self {
        Self::Invalid(what.to_string())
    }
}

/// Bytes of device memory packed as one block: blocks compress (and decompress) in
/// parallel, on cores the stopped guest leaves idle.
pub const CHUNK: usize = 4 << 20;

/// First byte of a block of device memory: an LZ4 block follows.
const BLOCK_LZ4: u8 = 0;
/// First byte of a block of device memory: the bytes follow as they are.
const BLOCK_RAW: u8 = 1;
/// First byte of a block of device memory the destination received ahead of the stop
/// ([`precopy`]): the block's checksum ([`block_hash`]) follows.
const BLOCK_REF: u8 = 2;
/// Samples of a chunk compressed to decide whether compressing it is worth the time.
const SAMPLES: usize = 4;
/// Bytes of each sample.
const SAMPLE: usize = 16 << 10;

/// Whether LZ4 shrinks `p` by at least an eighth, judged by compressing [`SAMPLES`] pieces
/// of it spread over it. Float tensors and random numbers do not compress, and LZ4 spends
/// as long on them as on anything else (256 MiB of them: a third of a second of downtime).
fn worth_compressing(p: &[u8]) -> bool {
    if p.len() <= SAMPLES * SAMPLE {
        return true;
    }
    let step = p.len() / SAMPLES;
    let (mut raw, mut packed) = (0, 0);
    for k in 0..SAMPLES {
        let s = &p[k * step..k * step + SAMPLE];
        raw += s.len();
        packed += lz4_flex::block::compress(s).len();
    }
    packed < raw - raw / 8
}

/// The checksum a chunk of device memory is named by when the destination holds it
/// ([`precopy`]): XXH3-128 of its bytes (not of its packed block).
pub fn block_hash(chunk: &[u8]) -> [u8; 16] {
    twox_hash::XxHash3_128::oneshot(chunk).to_le_bytes()
}

/// Which chunks of device memory the destination already holds ([`precopy`]): called with
/// an allocation's address, a chunk's index and the chunk's checksum ([`block_hash`]).
pub type Known<'a> = &'a (dyn Fn(u64, u32, &[u8; 16]) -> bool + Sync);

/// A block naming a chunk the destination holds, by its checksum.
pub fn ref_block(sum: &[u8; 16]) -> ByteBuf {
    let mut b = Vec::with_capacity(17);
    b.push(BLOCK_REF);
    b.extend_from_slice(sum);
    ByteBuf::from(b)
}

/// A packed block unpacked into a block holding the chunk as it is, and the chunk's
/// checksum; `None` if it does not unpack (or is no packed block).
pub fn unpack_to_raw(block: &[u8]) -> Option<(ByteBuf, [u8; 16])> {
    match block.split_first()? {
        (&BLOCK_LZ4, c) => {
            let mut out = vec![0u8; 1 + CHUNK];
            out[0] = BLOCK_RAW;
            let n = lz4_flex::block::decompress_into(c, &mut out[1..]).ok()?;
            out.truncate(1 + n);
            // Held until the migration: no more memory than the bytes.
            out.shrink_to_fit();
            let sum = block_hash(&out[1..]);
            Some((ByteBuf::from(out), sum))
        }
        (&BLOCK_RAW, c) if c.len() <= CHUNK => Some((ByteBuf::from(block.to_vec()), block_hash(c))),
        _ => None,
    }
}

/// The most bytes a packed block of [`CHUNK`] bytes takes.
pub fn max_packed() -> usize {
    1 + lz4_flex::block::get_maximum_output_size(CHUNK).max(CHUNK)
}

/// One chunk of device memory as a block: a tag byte, then an LZ4 block or the bytes.
pub fn pack(p: &[u8]) -> ByteBuf {
    if worth_compressing(p) {
        let mut out = vec![0u8; 1 + lz4_flex::block::get_maximum_output_size(p.len())];
        if let Ok(n) = lz4_flex::block::compress_into(p, &mut out[1..])
            && n < p.len()
        {
            out[0] = BLOCK_LZ4;
            out.truncate(1 + n);
            return ByteBuf::from(out);
        }
    }
    let mut out = Vec::with_capacity(1 + p.len());
    out.push(BLOCK_RAW);
    out.extend_from_slice(p);
    ByteBuf::from(out)
}

/// Device memory for the state: one block per [`CHUNK`] bytes, LZ4-compressed where that
/// pays, several at once.
pub fn compress(bytes: &[u8]) -> Vec<ByteBuf> {
    compress_known(bytes, 0, None)
}

/// [`compress`] for the allocation at `addr`, naming by checksum ([`ref_block`]) the
/// chunks `known` says the destination holds.
pub fn compress_known(bytes: &[u8], addr: u64, known: Option<Known<'_>>) -> Vec<ByteBuf> {
    let pieces: Vec<(usize, &[u8])> = bytes.chunks(CHUNK).enumerate().collect();
    let mut out: Vec<ByteBuf> = (0..pieces.len()).map(|_| ByteBuf::new()).collect();
    in_parallel(out.iter_mut().zip(pieces), |(o, (i, p))| {
        if let (Some(known), Ok(i)) = (known, u32::try_from(i)) {
            let sum = block_hash(p);
            if known(addr, i, &sum) {
                *o = ref_block(&sum);
                return Ok(());
            }
        }
        *o = pack(p);
        Ok(())
    })
    .unwrap_or_default();
    out
}

/// Unpacks one block into `d`, which it must fill exactly.
fn unpack(c: &[u8], d: &mut [u8]) -> Result<(), MigrateError> {
    match c.split_first() {
        Some((&BLOCK_LZ4, c)) => match lz4_flex::block::decompress_into(c, d) {
            Ok(n) if n == d.len() => Ok(()),
            Ok(_) => Err(MigrateError::invalid(
                "device memory shorter than its allocation",
            )),
            Err(e) => Err(MigrateError::invalid(format_args!("device memory: {e}"))),
        },
        Some((&BLOCK_RAW, c)) if c.len() == d.len() => {
            d.copy_from_slice(c);
            Ok(())
        }
        Some((&BLOCK_RAW, _)) => Err(MigrateError::invalid(
            "device memory block of the wrong length",
        )),
        Some((&BLOCK_REF, _)) => Err(MigrateError::invalid(
            "device memory block copied ahead but not received",
        )),
        _ => Err(MigrateError::invalid(
            "device memory block of no known kind",
        )),
    }
}

/// Unpacks `chunks` (from [`compress`]) into `dst`, which they must fill exactly.
pub fn decompress_into(chunks: &[ByteBuf], dst: &mut [u8]) -> Result<(), MigrateError> {
    if chunks.len() != dst.len().div_ceil(CHUNK) {
        return Err(MigrateError::invalid(
            "device memory in the wrong number of blocks",
        ));
    }
    in_parallel(dst.chunks_mut(CHUNK).zip(chunks), |(d, c)| unpack(c, d))
}

/// Runs `f` on every item, on up to as many threads as the machine has cores; the first
/// error, if any.
fn in_parallel<T: Send>(
    items: impl Iterator<Item = T>,
    f: impl Fn(T) -> Result<(), MigrateError> + Sync,
) -> Result<(), MigrateError> {
    let items: Vec<T> = items.collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().try_for_each(f);
    }
    let queue = std::sync::Mutex::new(items.into_iter());
    let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).next();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    while let Some(item) = next() {
                        f(item)?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|_| Err(MigrateError::invalid("a worker failed")))
        })
    })
}

/// What the migration tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::io::{self, Cursor, Read, Write};

    /// `n` bytes that do not compress, from `seed`.
    pub fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// A stream that reads `input` and collects what is written into `out`.
    pub struct Duplex {
        /// What reads return.
        pub input: Cursor<Vec<u8>>,
        /// What was written.
        pub out: Vec<u8>,
    }

    impl Duplex {
        /// A stream reading `input`.
        pub fn new(input: Vec<u8>) -> Self {
            Self {
                input: Cursor::new(input),
                out: Vec::new(),
            }
        }
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.out.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize) -> Vec<u8> {
        testing::noise(n, 0x9e37_79b9_7f4a_7c15)
    }

    #[test]
    fn blocks_compress_only_where_it_pays() {
        let mut mem = vec![0u8; 2 * CHUNK + 1000];
        mem[CHUNK..2 * CHUNK].copy_from_slice(&noise(CHUNK));
        let blocks = compress(&mem);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0][0], BLOCK_LZ4);
        assert!(blocks[0].len() < CHUNK / 100);
        assert_eq!(blocks[1][0], BLOCK_RAW);
        assert_eq!(blocks[1].len(), CHUNK + 1);
        let mut back = vec![1u8; mem.len()];
        decompress_into(&blocks, &mut back).unwrap();
        assert!(back == mem);
    }

    #[test]
    fn damaged_blocks_are_refused() {
        let mem = noise(100_000);
        let good = compress(&mem);
        let mut dst = vec![0u8; mem.len()];
        for bad in [
            vec![ByteBuf::from(vec![2u8, 0, 0])],
            vec![ByteBuf::from(Vec::new())],
            vec![ByteBuf::from([&[BLOCK_RAW][..], &mem[1..]].concat())],
            vec![ByteBuf::from(vec![BLOCK_LZ4, 0xff, 0xff])],
            vec![good[0].clone(), good[0].clone()],
        ] {
            assert!(decompress_into(&bad, &mut dst).is_err());
        }
        decompress_into(&good, &mut dst).unwrap();
        assert!(dst == mem);
    }
}
