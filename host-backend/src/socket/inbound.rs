// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Reading messages off a stream with few system calls.
//!
//! A session reads into a read-ahead buffer ([`Inbound`]), so that a message's header and
//! control area (and small out data) usually arrive in one `recvmsg`, and a read may carry
//! the start of the next message too. Large out data is read straight into its buffer.
//!
//! # File descriptors
//!
//! Descriptors passed with `SCM_RIGHTS` arrive with the read that takes the first bytes the
//! sender attached them to, and the kernel ends that read after those bytes. The library
//! attaches descriptors only to the single write that carries a whole `ShareMemory` message,
//! which is a call: nothing follows it until the reply. So the descriptors of a read belong
//! to the message holding the read's last byte, and that is the rule here, whatever the peer
//! does: [`Inbound::claim`] gives a message the descriptors of the reads that ended inside
//! it. Descriptors are then offered to the session, which takes what the message's requests
//! name and closes the rest. At most [`MAX_QUEUED_FDS`] wait; the rest are closed at once.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::os::fd::OwnedFd;

/// Bytes of the read-ahead buffer.
pub const AHEAD_LEN: usize = 64 << 10;
/// Out data up to this size is read through the read-ahead buffer (so the read may take the
/// next message's header too); larger data is read straight into its buffer.
pub const THROUGH_AHEAD: usize = 16 << 10;
/// Most descriptors waiting for their message.
pub const MAX_QUEUED_FDS: usize = 16;

/// What [`Inbound::spin_fill`] found.
#[derive(Debug)]
pub enum Spin {
    /// Bytes came (0: the end of the stream), or an error.
    Read(io::Result<usize>),
    /// Nothing within the budget.
    Nothing,
    /// The stream cannot be read without waiting (TLS).
    Unsupported,
}

/// A stream that can pass file descriptors along with its bytes.
pub trait FdRead: Read {
    /// Reads like `read`, adding the descriptors that came with the bytes to `fds`.
    fn read_with_fds(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize>;

    /// Like `read_with_fds` without waiting (`WouldBlock` when nothing is there); `None`
    /// where the stream cannot.
    fn try_read_with_fds(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Option<io::Result<usize>> {
        let _ = (buf, fds);
        None
    }
}

/// The read-ahead state of one connection.
pub struct Inbound {
    buf: Box<[u8]>,
    /// Unconsumed bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// Stream offset of `buf[pos]` (bytes consumed so far).
    offset: u64,
    /// Descriptors that came with reads: the stream offset just past each read, and what
    /// came with it.
    fds: VecDeque<(u64, Vec<OwnedFd>)>,
    queued_fds: usize,
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbound")
            .field("buffered", &self.buffered())
            .field("offset", &self.offset)
            .field("queued_fds", &self.queued_fds)
            .finish()
    }
}

impl Default for Inbound {
    fn default() -> Self {
        Self::new()
    }
}

impl Inbound {
    /// An empty read-ahead buffer.
    pub fn new() -> Self {
        Self {
            buf: vec![0u8; AHEAD_LEN].into_boxed_slice(),
            pos: 0,
            end: 0,
            offset: 0,
            fds: VecDeque::new(),
            queued_fds: 0,
        }
    }

    /// Bytes read and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.end - self.pos
    }

    /// The stream offset of the next unconsumed byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads once into the buffer. Returns the bytes read (0 at end of stream).
    pub fn fill<R: FdRead>(&mut self, r: &mut R) -> io::Result<usize> {
        self.compact();
        let mut fds = Vec::new();
        let n = r.read_with_fds(&mut self.buf[self.end..], &mut fds)?;
        self.filled(n, fds);
        Ok(n)
    }

    /// Polls the stream for up to `budget` without sleeping, reading whatever comes into
    /// the buffer.
    pub fn spin_fill<R: FdRead>(&mut self, r: &mut R, budget: std::time::Duration) -> Spin {
        let start = std::time::Instant::now();
        self.compact();
        loop {
            let mut fds = Vec::new();
            let Some(got) = r.try_read_with_fds(&mut self.buf[self.end..], &mut fds) else {
                return Spin::Unsupported;
            };
            match got {
                Ok(n) => {
                    self.filled(n, fds);
                    return Spin::Read(Ok(n));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    if start.elapsed() >= budget {
                        return Spin::Nothing;
                    }
                    std::hint::spin_loop();
                }
                Err(e) => return Spin::Read(Err(e)),
            }
        }
    }

    /// Moves the unconsumed bytes to the buffer's start.
    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
    }

    /// Accounts for `n` bytes just read into the buffer's free space, with `fds`.
    fn filled(&mut self, n: usize, fds: Vec<OwnedFd>) {
        self.end += n;
        if !fds.is_empty() {
            let at = self.offset + self.buffered() as u64;
            self.queue_fds(at, fds);
        }
    }

    fn queue_fds(&mut self, at: u64, mut fds: Vec<OwnedFd>) {
        let room = MAX_QUEUED_FDS - self.queued_fds;
        if fds.len() > room {
            log::debug!(
                "too many file descriptors waiting: {} closed",
                fds.len() - room
            );
            fds.truncate(room);
        }
        if !fds.is_empty() {
            self.queued_fds += fds.len();
            self.fds.push_back((at, fds));
        }
    }

    /// Takes `n` buffered bytes (at most what is buffered).
    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.buffered());
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        self.offset += n as u64;
        if self.pos == self.end {
            // Keep the next read at the buffer's start.
            self.pos = 0;
            self.end = 0;
        }
        s
    }

    /// Reads exactly `dst.len()` bytes into `dst`, from the buffer first.
    pub fn read_exact<R: FdRead>(&mut self, r: &mut R, dst: &mut [u8]) -> io::Result<()> {
        let mut got = 0;
        while got < dst.len() {
            if self.buffered() == 0 && self.fill(r)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let s = self.take(dst.len() - got);
            dst[got..got + s.len()].copy_from_slice(s);
            got += s.len();
        }
        Ok(())
    }

    /// Reads exactly `len` bytes into `dst` (replacing its contents): from the buffer first,
    /// then small remainders through the buffer, large ones straight into `dst`, which grows
    /// only as bytes arrive (never by what a header announces), so a peer that promises
    /// much and sends little holds little memory.
    pub fn read_vec<R: FdRead>(
        &mut self,
        r: &mut R,
        dst: &mut Vec<u8>,
        len: usize,
    ) -> io::Result<()> {
        dst.clear();
        dst.extend_from_slice(self.take(len));
        let rest = len - dst.len();
        if rest == 0 {
            return Ok(());
        }
        if rest <= THROUGH_AHEAD {
            while dst.len() < len {
                if self.fill(r)? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                let s = self.take(len - dst.len());
                dst.extend_from_slice(s);
            }
            return Ok(());
        }
        // The buffer is empty now. A plain read drops any descriptors sent along with these
        // bytes (the kernel closes them): the library never sends any with data.
        let got = r.by_ref().take(rest as u64).read_to_end(dst)?;
        self.offset += got as u64;
        if dst.len() == len {
            Ok(())
        } else {
            Err(io::ErrorKind::UnexpectedEof.into())
        }
    }

    /// The descriptors of the message occupying stream offsets `start..end`: those of the
    /// reads that ended inside it. Descriptors of reads that ended before it (sent along
    /// with an earlier message's bytes but after its end was parsed) are closed.
    pub fn claim(&mut self, start: u64, end: u64) -> Vec<OwnedFd> {
        let mut mine = Vec::new();
        while let Some((at, _)) = self.fds.front() {
            let at = *at;
            if at > end {
                break;
            }
            let Some((_, fds)) = self.fds.pop_front() else {
                break;
            };
            self.queued_fds -= fds.len();
            if at > start {
                mine.extend(fds);
            }
        }
        mine
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    /// Plays a stream: each `read_with_fds` returns the next chunk (at most the buffer's
    /// room), with its descriptors; counts the reads.
    struct Chunks {
        chunks: VecDeque<(Vec<u8>, usize)>,
        reads: usize,
    }

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.read_with_fds(buf, &mut Vec::new())
        }
    }

    impl FdRead for Chunks {
        fn read_with_fds(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
            self.reads += 1;
            let Some((mut c, n_fds)) = self.chunks.pop_front() else {
                return Ok(0);
            };
            let n = c.len().min(buf.len());
            buf[..n].copy_from_slice(&c[..n]);
            for _ in 0..n_fds {
                fds.push(std::fs::File::open("/dev/null").unwrap().into());
            }
            if n < c.len() {
                self.chunks.push_front((c.split_off(n), 0));
            }
            Ok(n)
        }
    }

    fn chunks(v: Vec<(Vec<u8>, usize)>) -> Chunks {
        Chunks {
            chunks: v.into(),
            reads: 0,
        }
    }

    #[test]
    fn header_and_control_come_in_one_read() {
        // Two small messages of 40 bytes (8 + 32) in one write, then a third.
        let mut s = chunks(vec![((0..80).collect(), 0), ((80..120).collect(), 0)]);
        let mut ib = Inbound::new();
        let mut hdr = [0u8; 8];
        let mut ctrl = Vec::new();
        ib.read_exact(&mut s, &mut hdr).unwrap();
        ib.read_vec(&mut s, &mut ctrl, 32).unwrap();
        assert_eq!(s.reads, 1);
        assert_eq!(hdr[0], 0);
        assert_eq!(ctrl[31], 39);
        ib.read_exact(&mut s, &mut hdr).unwrap();
        ib.read_vec(&mut s, &mut ctrl, 32).unwrap();
        assert_eq!(s.reads, 1, "the second message was already buffered");
        assert_eq!(ctrl[31], 79);
        ib.read_exact(&mut s, &mut hdr).unwrap();
        ib.read_vec(&mut s, &mut ctrl, 32).unwrap();
        assert_eq!(s.reads, 2);
        assert_eq!(ctrl[31], 119);
        assert_eq!(ib.offset(), 120);
        assert!(ib.read_exact(&mut s, &mut hdr).is_err());
    }

    #[test]
    fn large_data_goes_straight_to_its_buffer() {
        let big = vec![7u8; 3 * AHEAD_LEN];
        let mut msg = vec![1u8; 16];
        msg.extend_from_slice(&big);
        let mut s = chunks(vec![(msg, 0)]);
        let mut ib = Inbound::new();
        let mut hdr = [0u8; 16];
        let mut out = Vec::new();
        ib.read_exact(&mut s, &mut hdr).unwrap();
        ib.read_vec(&mut s, &mut out, big.len()).unwrap();
        assert_eq!(out, big);
        assert_eq!(ib.offset(), 16 + big.len() as u64);
        // A short stream is an error, not a hang or a huge allocation.
        let mut s = chunks(vec![(vec![0u8; 100], 0)]);
        let mut ib = Inbound::new();
        assert!(ib.read_vec(&mut s, &mut out, 1 << 30).is_err());
        assert!(out.capacity() < 1 << 20);
    }

    #[test]
    fn descriptors_belong_to_the_message_holding_the_reads_last_byte() {
        // A posted message (40 bytes) and then a message with a descriptor, read together;
        // then a message whose read brings a descriptor for nobody (it ends in a later
        // message, which gets it).
        let mut s = chunks(vec![
            ((0..40).collect(), 0),
            ((40..80).collect(), 1),
            ((80..100).collect(), 0),
            ((100..130).collect(), 2),
        ]);
        let mut ib = Inbound::new();
        ib.fill(&mut s).unwrap();
        ib.fill(&mut s).unwrap();
        let mut m = vec![0u8; 40];
        ib.read_exact(&mut s, &mut m).unwrap();
        assert!(ib.claim(0, 40).is_empty());
        ib.read_exact(&mut s, &mut m).unwrap();
        let fds = ib.claim(40, 80);
        assert_eq!(fds.len(), 1);
        assert!(fds[0].as_raw_fd() >= 0);
        // Bytes 80..130 come in two reads, the second bringing two descriptors at 130:
        // the message 80..120 does not hold byte 129, the next one does.
        ib.read_exact(&mut s, &mut m).unwrap();
        assert!(ib.claim(80, 120).is_empty());
        assert_eq!(ib.claim(120, 160).len(), 2);
    }

    #[test]
    fn waiting_descriptors_are_bounded_and_stale_ones_closed() {
        let mut s = chunks((0..10).map(|i| (vec![i as u8; 4], 4)).collect());
        let mut ib = Inbound::new();
        for _ in 0..10 {
            ib.fill(&mut s).unwrap();
        }
        assert_eq!(ib.queued_fds, MAX_QUEUED_FDS);
        // A message starting at 40 gets none of the reads that ended at or before 40.
        assert!(ib.claim(40, 41).is_empty());
        assert_eq!(ib.queued_fds, 0);
    }

    proptest::proptest! {
        /// Messages (an 8-byte length, then that many bytes) cut into reads anywhere, some
        /// reads with a descriptor: every message comes out whole, and each descriptor goes
        /// to the message holding its read's last byte.
        #[test]
        fn any_cut_gives_the_same_messages(
            lens in proptest::collection::vec(0usize..40_000, 1..12),
            cuts in proptest::collection::vec((1usize..50_000, proptest::bool::ANY), 1..40),
        ) {
            let mut stream = Vec::new();
            let mut bounds = Vec::new();
            for (i, len) in lens.iter().enumerate() {
                let start = stream.len() as u64;
                stream.extend_from_slice(&(*len as u64).to_le_bytes());
                stream.extend((0..*len).map(|j| (i + j) as u8));
                bounds.push((start, stream.len() as u64));
            }
            let mut chunks_v = Vec::new();
            let (mut at, mut k) = (0usize, 0usize);
            let mut fd_ends = Vec::new();
            while at < stream.len() {
                let (n, fd) = cuts[k % cuts.len()];
                k += 1;
                let n = n.min(stream.len() - at);
                chunks_v.push((stream[at..at + n].to_vec(), usize::from(fd)));
                at += n;
                if fd {
                    fd_ends.push(at as u64);
                }
            }
            // Chunks longer than the buffer's room are split by the reader: the descriptor
            // then ends its first part. Only the attribution of whole chunks is checked.
            let whole = chunks_v.iter().all(|(c, _)| c.len() <= AHEAD_LEN / 2);
            // Where every byte goes through the buffer and no descriptor is dropped, each
            // message gets exactly the descriptors of the reads that ended inside it.
            let exact = whole
                && lens.iter().all(|l| *l <= THROUGH_AHEAD)
                && fd_ends.len() <= MAX_QUEUED_FDS;
            let mut s = chunks(chunks_v);
            let mut ib = Inbound::new();
            for (i, (start, end)) in bounds.iter().enumerate() {
                proptest::prop_assert_eq!(ib.offset(), *start);
                let mut hdr = [0u8; 8];
                ib.read_exact(&mut s, &mut hdr).unwrap();
                let len = u64::from_le_bytes(hdr) as usize;
                let mut body = Vec::new();
                ib.read_vec(&mut s, &mut body, len).unwrap();
                proptest::prop_assert_eq!(body.len(), lens[i]);
                proptest::prop_assert!(body.iter().enumerate().all(|(j, b)| *b == (i + j) as u8));
                let got = ib.claim(*start, ib.offset()).len();
                proptest::prop_assert_eq!(ib.offset(), *end);
                if whole {
                    // Reads of large data bypass the buffer and drop descriptors, and at most
                    // MAX_QUEUED_FDS wait: at most the descriptors that ended inside.
                    let want = fd_ends.iter().filter(|e| **e > *start && **e <= *end).count();
                    proptest::prop_assert!(got <= want, "{} > {}", got, want);
                    if exact {
                        proptest::prop_assert_eq!(got, want);
                    }
                }
            }
        }
    }
}
