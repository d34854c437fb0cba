// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device memory copied ahead of the stop: while the VM still runs, the source backend
//! sends the blocks of its sessions' device memory straight to the destination's backend
//! over a Unix socket, and again each block that changed; once QEMU stops the VM, the
//! device state names every block the destination already holds by its checksum instead
//! of carrying it, so only what changed since crosses inside the downtime (QEMU copies RAM
//! the same way; vhost-user's device state transfer has only the stopped phase).
//!
//! ```text
//! hello   "VCUDAPC\0", version u32                                  (source, once)
//! block   1u8, session u64, address u64, index u32, length u32, the block
//! forget  3u8, session u64, address u64, index u32    (a chunk freed since it was sent)
//! gone    4u8, session u64                   (every chunk of a session that ended)
//! end     2u8                                                       (source, at the stop)
//! answer  1u8: every block kept; 0u8: some were not                 (destination)
//! ```
//!
//! All integers little endian. A block is one [`super::CHUNK`] of an allocation, packed
//! as in the state ([`super::pack`]); a block for a place (session, address, index) the
//! destination holds replaces it. The destination unpacks each block as it arrives and
//! keeps it with the checksum of its bytes ([`super::block_hash`]), so that nothing is
//! unpacked or hashed there inside the downtime. The source counts a block as held only
//! once the destination answered the end with 1; without that answer the state carries
//! every block. At the stop the source saves each chunk the destination holds unchanged
//! (the same checksum at the same place) as a reference ([`super::compress_known`]).
//!
//! The destination treats the stream as hostile, as it does the state: every length is
//! bounded, a block must unpack, the blocks together stay under a cap, and a reference in
//! the state is replaced only by the block held for its place whose checksum it names
//! ([`Received::resolve`]).

use std::collections::HashMap;
use std::io::{self, Read, Write};

use serde_bytes::ByteBuf;

use super::state::DeviceState;
use super::{BLOCK_REF, MigrateError, max_packed, unpack_to_raw};

/// First bytes of a pre-copy stream.
pub const MAGIC: [u8; 8] = *b"VCUDAPC\0";
/// Its version.
pub const VERSION: u32 = 1;
/// Tag of a block.
const TAG_BLOCK: u8 = 1;
/// Tag of the end.
const TAG_END: u8 = 2;
/// Tag of a chunk to forget.
const TAG_FORGET: u8 = 3;
/// Tag of a session to forget.
const TAG_GONE: u8 = 4;
/// What each block held costs beyond its bytes (the map's entry, allocator overhead), as
/// charged against the destination's cap.
const ENTRY_COST: u64 = 256;
/// The destination's answer to the end: every block kept.
pub const KEPT: u8 = 1;
/// The destination's answer to the end: some blocks were dropped (over its cap).
pub const DROPPED: u8 = 0;

/// Where a block belongs: session, allocation address, block index.
pub type Place = (u64, u64, u32);

/// A block to send: where it belongs and its packed bytes.
pub struct Block {
    /// Where it belongs.
    pub place: Place,
    /// The packed block.
    pub bytes: ByteBuf,
}

/// A chunk of a session's device memory read for the pre-copy
/// ([`crate::executor::StateOps::precopy_block`]).
#[derive(Debug)]
pub struct ChunkRead {
    /// The allocation's address.
    pub addr: u64,
    /// The chunk's index in it.
    pub index: u32,
    /// The checksum of its bytes.
    pub sum: [u8; 16],
    /// The chunk packed, unless the caller said the destination holds it already.
    pub packed: Option<ByteBuf>,
}

/// Writes the stream's hello.
pub fn write_hello(out: &mut impl Write) -> io::Result<()> {
    out.write_all(&MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())
}

/// Writes one block.
pub fn write_block(out: &mut impl Write, b: &Block) -> io::Result<()> {
    let (session, addr, index) = b.place;
    let len = u32::try_from(b.bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block too long"))?;
    let mut head = [0u8; 25];
    head[0] = TAG_BLOCK;
    head[1..9].copy_from_slice(&session.to_le_bytes());
    head[9..17].copy_from_slice(&addr.to_le_bytes());
    head[17..21].copy_from_slice(&index.to_le_bytes());
    head[21..25].copy_from_slice(&len.to_le_bytes());
    out.write_all(&head)?;
    out.write_all(&b.bytes)
}

/// Writes that the destination is to forget the chunk at `place`.
pub fn write_forget(out: &mut impl Write, place: Place) -> io::Result<()> {
    let (session, addr, index) = place;
    let mut m = [0u8; 21];
    m[0] = TAG_FORGET;
    m[1..9].copy_from_slice(&session.to_le_bytes());
    m[9..17].copy_from_slice(&addr.to_le_bytes());
    m[17..21].copy_from_slice(&index.to_le_bytes());
    out.write_all(&m)
}

/// Writes that the destination is to forget every chunk of `session`.
pub fn write_gone(out: &mut impl Write, session: u64) -> io::Result<()> {
    let mut m = [0u8; 9];
    m[0] = TAG_GONE;
    m[1..9].copy_from_slice(&session.to_le_bytes());
    out.write_all(&m)
}

/// Writes the end and reads the destination's answer: whether it kept every block.
pub fn finish<S: Read + Write>(stream: &mut S) -> io::Result<bool> {
    stream.write_all(&[TAG_END])?;
    stream.flush()?;
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer)?;
    Ok(answer[0] == KEPT)
}

/// The chunks sent to the destination, by place: the checksum of each; and which session
/// (the device's token for it) each session id's chunks came from, since guests reuse ids.
#[derive(Debug, Default)]
pub struct Sent {
    /// The checksum of each chunk sent, by place.
    pub places: HashMap<Place, [u8; 16]>,
    /// The token of the session each session id's places belong to.
    pub tokens: HashMap<u64, u64>,
}

impl Sent {
    /// Whether the destination holds the chunk at `(addr, index)` of session `session`
    /// (with token `token`) with checksum `sum`.
    pub fn holds(&self, session: u64, token: u64, addr: u64, index: u32, sum: &[u8; 16]) -> bool {
        self.tokens.get(&session) == Some(&token)
            && self.places.get(&(session, addr, index)) == Some(sum)
    }
}

/// Bytes of device memory `state` names by checksum instead of carrying.
pub fn referenced_bytes(state: &DeviceState) -> u64 {
    let mut n = 0;
    for (_, s) in &state.sessions {
        for a in s.exec.allocs() {
            for (i, block) in a.data.iter().enumerate() {
                if block.first() == Some(&BLOCK_REF) {
                    let start = (i as u64).saturating_mul(super::CHUNK as u64);
                    n += a.len.saturating_sub(start).min(super::CHUNK as u64);
                }
            }
        }
    }
    n
}

/// What the destination received ahead of the stop.
#[derive(Debug, Default)]
pub struct Received {
    /// Unpacked blocks and the checksums of their bytes, by place.
    blocks: HashMap<Place, ([u8; 16], ByteBuf)>,
    bytes: u64,
    /// The source ended the stream and was told every block was kept.
    pub complete: bool,
    /// A block was dropped (over the cap): the source was told so.
    pub dropped: bool,
}

impl Received {
    /// Blocks held.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Bytes charged for the blocks held (their bytes and 256 more each, for their entries).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Forgets every block.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Keeps the unpacked block `raw`, whose bytes have checksum `sum`, for `place`
    /// (replacing what it held there) unless that would take the blocks past `cap` bytes;
    /// whether it kept it.
    fn keep(&mut self, place: Place, sum: [u8; 16], raw: ByteBuf, cap: u64) -> bool {
        let old = self
            .blocks
            .get(&place)
            .map_or(0, |(_, b)| b.len() as u64 + ENTRY_COST);
        let new = self.bytes - old + raw.len() as u64 + ENTRY_COST;
        if new > cap {
            return false;
        }
        self.bytes = new;
        self.blocks.insert(place, (sum, raw));
        true
    }

    /// Forgets the block held for `place`, if any.
    fn forget(&mut self, place: &Place) {
        if let Some((_, b)) = self.blocks.remove(place) {
            self.bytes -= b.len() as u64 + ENTRY_COST;
        }
    }

    /// Forgets every block of `session`.
    fn gone(&mut self, session: u64) {
        let mut freed = 0;
        self.blocks.retain(|p, (_, b)| {
            let keep = p.0 != session;
            if !keep {
                freed += b.len() as u64 + ENTRY_COST;
            }
            keep
        });
        self.bytes -= freed;
    }

    /// Puts back, in `state`, every block named by checksum: the block held for its place,
    /// if it is the one named. Fails, naming the first, if a named block is not here.
    pub fn resolve(&mut self, state: &mut DeviceState) -> Result<u64, MigrateError> {
        let mut used = 0;
        for (id, s) in &mut state.sessions {
            for a in s.exec.allocs_mut() {
                for (i, block) in a.data.iter_mut().enumerate() {
                    if block.first() != Some(&BLOCK_REF) {
                        continue;
                    }
                    let missing = || {
                        MigrateError::invalid(format_args!(
                            "block {i} of device memory at {:#x} (session {id:#x}) was \
                             copied ahead but is not held here",
                            a.addr
                        ))
                    };
                    let index = u32::try_from(i).map_err(|_| missing())?;
                    let place = (*id, a.addr, index);
                    let (sum, _) = self.blocks.get(&place).ok_or_else(missing)?;
                    if block.len() != 17 || sum[..] != block[1..] {
                        return Err(missing());
                    }
                    let (_, held) = self.blocks.remove(&place).unwrap_or_default();
                    self.bytes -= held.len() as u64 + ENTRY_COST;
                    used += held.len() as u64;
                    *block = held;
                }
            }
        }
        Ok(used)
    }
}

/// Why reading a pre-copy stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// Reading or writing failed (the source went away, say).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The stream is not a pre-copy stream of this version, or is malformed.
    #[error("malformed pre-copy stream: {0}")]
    Malformed(&'static str),
}

/// Reads a pre-copy stream from `stream` into `into` (locked for each block), keeping at
/// most `cap` bytes of blocks, until the source ends it (answered, `complete` set) or it
/// breaks.
pub fn receive<S: Read + Write>(
    stream: &mut S,
    into: &std::sync::Mutex<Received>,
    cap: u64,
) -> Result<(), StreamError> {
    let lock = || into.lock().unwrap_or_else(|e| e.into_inner());
    let mut hello = [0u8; 12];
    stream.read_exact(&mut hello)?;
    if hello[..8] != MAGIC {
        return Err(StreamError::Malformed("bad magic"));
    }
    if hello[8..] != VERSION.to_le_bytes() {
        return Err(StreamError::Malformed("unknown version"));
    }
    loop {
        let mut tag = [0u8; 1];
        stream.read_exact(&mut tag)?;
        match tag[0] {
            TAG_BLOCK => {
                let mut head = [0u8; 24];
                stream.read_exact(&mut head)?;
                let u64_at =
                    |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap_or_default());
                let u32_at =
                    |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().unwrap_or_default());
                let place = (u64_at(0), u64_at(8), u32_at(16));
                let len = u32_at(20) as usize;
                if len == 0 || len > max_packed() {
                    return Err(StreamError::Malformed("block length"));
                }
                let mut bytes = vec![0u8; len];
                stream.read_exact(&mut bytes)?;
                // Unpacked here, while the guest still runs, not inside the downtime.
                let (raw, sum) = unpack_to_raw(&bytes)
                    .ok_or(StreamError::Malformed("a block that does not unpack"))?;
                let mut r = lock();
                if !r.keep(place, sum, raw, cap) {
                    r.dropped = true;
                }
            }
            TAG_FORGET => {
                let mut m = [0u8; 20];
                stream.read_exact(&mut m)?;
                let u64_at =
                    |i: usize| u64::from_le_bytes(m[i..i + 8].try_into().unwrap_or_default());
                let index = u32::from_le_bytes(m[16..20].try_into().unwrap_or_default());
                lock().forget(&(u64_at(0), u64_at(8), index));
            }
            TAG_GONE => {
                let mut m = [0u8; 8];
                stream.read_exact(&mut m)?;
                lock().gone(u64::from_le_bytes(m));
            }
            TAG_END => {
                let kept = {
                    let mut r = lock();
                    r.complete = !r.dropped;
                    r.complete
                };
                stream.write_all(&[if kept { KEPT } else { DROPPED }])?;
                stream.flush()?;
                return Ok(());
            }
            _ => return Err(StreamError::Malformed("unknown tag")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::state::{AllocState, CpuState, ExecState, SessionState};
    use crate::migrate::testing::{Duplex, noise};
    use crate::migrate::{CHUNK, block_hash, compress, compress_known, decompress_into};
    use std::sync::Mutex;

    fn session(addr: u64, mem: &[u8]) -> SessionState {
        SessionState {
            executor: 0,
            hello: true,
            sticky: None,
            stdout: Vec::new(),
            held: Vec::new(),
            images: Vec::new(),
            graphs: Default::default(),
            shared: Vec::new(),
            shared_next: 0,
            mapped: Vec::new(),
            exec: ExecState::Cpu(CpuState {
                allocs: vec![AllocState {
                    addr,
                    len: mem.len() as u64,
                    kind: crate::migrate::state::ALLOC_USER,
                    data: compress(mem),
                }],
                ..CpuState::default()
            }),
        }
    }

    /// The state of session `id` with one allocation at `addr` holding `mem`, naming by
    /// checksum the chunks `sent` says the destination holds.
    fn saved(id: u64, addr: u64, mem: &[u8], sent: &Sent) -> DeviceState {
        let known = |a: u64, i: u32, sum: &[u8; 16]| sent.holds(id, 0, a, i, sum);
        let mut s = session(addr, mem);
        let ExecState::Cpu(c) = &mut s.exec else {
            unreachable!()
        };
        c.allocs[0].data = compress_known(mem, addr, Some(&known));
        DeviceState {
            sessions: vec![(id, s)],
            next_session: 0,
        }
    }

    #[test]
    fn blocks_sent_ahead_stay_out_of_the_state() {
        let mem = noise(2 * CHUNK + 100, 7);
        let addr = 0x7000_0000;
        // The source sends its blocks, then one changes before the stop.
        let mut stream = Vec::new();
        write_hello(&mut stream).unwrap();
        let mut sent = Sent::default();
        sent.tokens.insert(5, 0);
        for (i, chunk) in mem.chunks(CHUNK).enumerate() {
            let place = (5, addr, i as u32);
            let bytes = crate::migrate::pack(chunk);
            write_block(&mut stream, &Block { place, bytes }).unwrap();
            sent.places.insert(place, block_hash(chunk));
        }
        stream.push(TAG_END);
        let mut dest = Duplex::new(stream);
        let received = Mutex::new(Received::default());
        receive(&mut dest, &received, u64::MAX).unwrap();
        assert_eq!(dest.out, [KEPT]);
        let mut received = received.into_inner().unwrap();
        assert!(received.complete);
        assert_eq!(received.len(), 3);

        let mut now = mem.clone();
        now[CHUNK + 5] ^= 1;
        let mut state = saved(5, addr, &now, &sent);
        let ExecState::Cpu(c) = &state.sessions[0].1.exec else {
            unreachable!()
        };
        let lens: Vec<usize> = c.allocs[0].data.iter().map(|b| b.len()).collect();
        assert_eq!(lens, [17, CHUNK + 1, 17]);

        // The destination puts the blocks back and the memory unpacks as it is now.
        assert_eq!(
            received.resolve(&mut state).unwrap(),
            (CHUNK + 101) as u64 + 1
        );
        assert_eq!(received.len(), 1, "the block that changed stays unused");
        let ExecState::Cpu(c) = &state.sessions[0].1.exec else {
            unreachable!()
        };
        let mut back = vec![0u8; now.len()];
        decompress_into(&c.allocs[0].data, &mut back).unwrap();
        assert!(back == now);
    }

    #[test]
    fn a_reference_to_what_is_not_held_fails_the_load() {
        let mem = noise(1000, 3);
        let sent = Sent {
            places: [((1, 0x1000, 0), block_hash(&mem))].into_iter().collect(),
            tokens: [(1, 0)].into_iter().collect(),
        };
        let mut state = saved(1, 0x1000, &mem, &sent);
        // Nothing received; then a block held for the place, but another one.
        assert!(Received::default().resolve(&mut state).is_err());
        let mut other = Received::default();
        let (raw, sum) = unpack_to_raw(&crate::migrate::pack(&noise(1000, 4))).unwrap();
        assert!(other.keep((1, 0x1000, 0), sum, raw, u64::MAX));
        assert!(other.resolve(&mut state).is_err());
        // Left as a reference, the block fails to unpack, naming why.
        let ExecState::Cpu(c) = &state.sessions[0].1.exec else {
            unreachable!()
        };
        assert!(decompress_into(&c.allocs[0].data, &mut vec![0u8; 1000]).is_err());
    }

    #[test]
    fn hostile_streams_are_refused_and_bounded() {
        let received = Mutex::new(Received::default());
        let run = |bytes: Vec<u8>, cap| {
            let mut d = Duplex::new(bytes);
            (receive(&mut d, &received, cap), d.out)
        };
        let mut hello = Vec::new();
        write_hello(&mut hello).unwrap();
        assert!(run(b"VCUDAPC\0\x02\0\0\0".to_vec(), 1).0.is_err());
        assert!(run([hello.clone(), vec![9]].concat(), 1).0.is_err());
        // A block claiming more than any block.
        let mut big = hello.clone();
        big.push(TAG_BLOCK);
        big.extend_from_slice(&[0; 20]);
        big.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(run(big, 1).0, Err(StreamError::Malformed(_))));
        // A block that does not unpack, and a reference sent as a block.
        for bad in [vec![0u8, 0xff, 0xff], vec![2u8; 17], vec![9u8; 4]] {
            let mut b = hello.clone();
            write_block(
                &mut b,
                &Block {
                    place: (1, 2, 3),
                    bytes: ByteBuf::from(bad),
                },
            )
            .unwrap();
            assert!(matches!(run(b, 1000).0, Err(StreamError::Malformed(_))));
        }
        // Truncated in a block.
        let mut cut = hello.clone();
        write_block(
            &mut cut,
            &Block {
                place: (1, 2, 3),
                bytes: ByteBuf::from(vec![1u8; 100]),
            },
        )
        .unwrap();
        cut.truncate(cut.len() - 1);
        assert!(matches!(run(cut, 1000).0, Err(StreamError::Io(_))));
        // Over the cap: the answer says so, and nothing counts as complete.
        let mut over = hello.clone();
        for i in 0..3 {
            write_block(
                &mut over,
                &Block {
                    place: (1, 2, i),
                    bytes: ByteBuf::from(vec![1u8; 100]),
                },
            )
            .unwrap();
        }
        over.push(TAG_END);
        *received.lock().unwrap() = Received::default();
        let (r, answer) = run(over, 2 * (100 + ENTRY_COST) + 50);
        r.unwrap();
        assert_eq!(answer, [DROPPED]);
        let r = received.lock().unwrap();
        assert!(!r.complete && r.dropped);
        assert_eq!((r.len(), r.bytes()), (2, 200 + 2 * ENTRY_COST));
    }

    #[test]
    fn freed_chunks_and_ended_sessions_are_forgotten() {
        let mut s = Vec::new();
        write_hello(&mut s).unwrap();
        for place in [(1, 0x10, 0), (1, 0x10, 1), (2, 0x10, 0)] {
            let bytes = crate::migrate::pack(&[7u8; 100]);
            write_block(&mut s, &Block { place, bytes }).unwrap();
        }
        write_forget(&mut s, (1, 0x10, 1)).unwrap();
        write_forget(&mut s, (9, 9, 9)).unwrap();
        write_gone(&mut s, 2).unwrap();
        s.push(TAG_END);
        let received = Mutex::new(Received::default());
        let mut d = Duplex::new(s);
        receive(&mut d, &received, u64::MAX).unwrap();
        let r = received.into_inner().unwrap();
        assert_eq!((r.len(), r.bytes()), (1, 101 + ENTRY_COST));
        assert!(r.blocks.contains_key(&(1, 0x10, 0)));
    }
}
