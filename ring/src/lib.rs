// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The call ring: a program's calls and the backend's replies as two byte streams in one
//! shared memory file, so that on one host a call needs no system call while both sides
//! are awake.
//!
//! The guest library makes the file ([`Mapping::create`]: a memfd sealed against shrinking
//! and growing), passes it to the backend with its `Hello` over the Unix socket, and the
//! backend maps it after checking it, then seals it against writes ([`Mapping::attach`],
//! [`seal_mapped_file`]). From the `Hello` reply on, the
//! bytes that went over the socket (`[MessageHeader][control area][out data]` one way,
//! `[ReplyHeader][records][in data]` the other) go through the ring instead, unchanged; the
//! socket stays for descriptors, wake-ups and hang-ups.
//!
//! # Layout and who owns what
//!
//! ```text
//! 0x0000  header page: one 64-byte line per word
//!   0x40  request head   (u64)  written by the guest: request bytes published
//!   0x80  request tail   (u64)  written by the host:  request bytes consumed
//!   0xc0  reply head     (u64)  written by the host:  reply bytes published
//!  0x100  reply tail     (u64)  written by the guest: reply bytes consumed
//!  0x140  host sleeps    (u32)  1: the host is about to wait on the socket; cleared by
//!                               whoever wakes it
//!  0x180  guest sleeps   (u32)  the same for the guest
//!  0x1c0  notes sent     (u64)  written by the guest: descriptor notes sent on the socket
//! 0x1000  request data   (DATA_BYTES)
//!         reply data     (DATA_BYTES)
//! ```
//!
//! Each side keeps its own indices privately and only publishes them; it never reads its
//! own index back. The other side's index is read and checked ([`RingError::Corrupt`] when
//! it claims more bytes, or less room, than the stream can hold). Bytes are copied out of
//! the ring before anything looks at them, so the writer changing them later changes
//! nothing. A hostile guest can therefore only garble its own stream, which the backend
//! decodes as hostile input anyway; it cannot make the backend read or write outside the
//! mapping, and the file cannot shrink under it (no `SIGBUS`).
//!
//! # Sleeping and waking
//!
//! A side that finds nothing to read (or no room to write) may spin; before it sleeps on
//! the socket it sets its sleep word and looks once more ([`Ring::sleep_begin`]). A side
//! that publishes an index then checks the other's sleep word ([`Ring::peer_wants_wake`])
//! and, if it was set, sends a byte on the socket. Both sides fence between their store and
//! their load, so one of them always sees the other: no wake-up is lost.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// Bytes of the header page.
pub const HEADER_BYTES: usize = 4096;
/// Bytes of each direction's data area (a power of two).
pub const DATA_BYTES: usize = 1 << 20;
/// Bytes of the whole file.
pub const FILE_BYTES: usize = HEADER_BYTES + 2 * DATA_BYTES;

const REQ_HEAD: usize = 0x40;
const REQ_TAIL: usize = 0x80;
const REP_HEAD: usize = 0xc0;
const REP_TAIL: usize = 0x100;
const HOST_SLEEPS: usize = 0x140;
const GUEST_SLEEPS: usize = 0x180;
const NOTES_SENT: usize = 0x1c0;

/// Socket byte (guest to host) for a plain wake-up; the host sends any byte to wake the
/// guest.
pub const NOTE_WAKE: u8 = 0;
/// Socket byte (guest to host) that starts a descriptor note: it is followed by the
/// little-endian request-stream offset of the first byte of the message the descriptor
/// belongs to, and the descriptor comes with it (`SCM_RIGHTS`).
pub const NOTE_FD: u8 = 1;
/// Bytes of a descriptor note.
pub const NOTE_FD_LEN: usize = 9;

/// `HUGETLBFS_MAGIC` from `linux/magic.h`.
const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

/// What went wrong with a ring.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// The other side published an index the stream cannot have.
    #[error("The peer corrupted the call ring ({what} {value} against {mine})")]
    Corrupt {
        /// Which index.
        what: &'static str,
        /// What it said.
        value: u64,
        /// Our own index it is checked against.
        mine: u64,
    },
    /// The file offered is not one a ring may live in.
    #[error("Unsuitable call ring file: {0}")]
    Unsuitable(&'static str),
    /// A system call failed.
    #[error("Call ring: {0}")]
    Io(#[from] io::Error),
}

impl From<RingError> for io::Error {
    fn from(e: RingError) -> Self {
        match e {
            RingError::Io(e) => e,
            e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
        }
    }
}

impl From<nix::Error> for RingError {
    fn from(e: nix::Error) -> Self {
        RingError::Io(e.into())
    }
}

/// The shared file mapped into this process ([`FILE_BYTES`], read-write).
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
}

// SAFETY: the mapping is plain shared memory; every access goes through atomics or copies
// that tolerate concurrent writers (see `Ring::read`).
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only gives out atomics.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The guest's side: a new memfd of [`FILE_BYTES`], sealed against shrinking and
    /// growing, mapped here. Returns the mapping and the file to pass on (the backend adds
    /// the last seals once it has mapped it: [`seal_mapped_file`]).
    pub fn create() -> Result<(Self, OwnedFd), RingError> {
        use nix::fcntl::{FcntlArg, SealFlag, fcntl};
        use nix::sys::memfd::{MFdFlags, memfd_create};
        let fd = memfd_create(
            c"vcuda-call-ring",
            MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
        )?;
        nix::unistd::ftruncate(&fd, FILE_BYTES as i64)?;
        fcntl(
            &fd,
            FcntlArg::F_ADD_SEALS(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW),
        )?;
        let map = Self::map(&fd)?;
        Ok((map, fd))
    }

    /// The backend's side: maps a file the guest passed, after checking that it is a
    /// regular shmem file (not hugetlbfs, whose faults can raise `SIGBUS`), sealed against
    /// shrinking and at least [`FILE_BYTES`] long, then seals it against writes
    /// ([`seal_mapped_file`]).
    pub fn attach(fd: &OwnedFd) -> Result<Self, RingError> {
        check_sealed_file(fd, FILE_BYTES as u64)?;
        let m = Self::map(fd)?;
        seal_mapped_file(fd)?;
        Ok(m)
    }

    fn map(fd: &OwnedFd) -> Result<Self, RingError> {
        // SAFETY: a new shared mapping at an address the kernel chooses; it overlaps
        // nothing and is unmapped only by `Drop`. The file is at least FILE_BYTES long and
        // cannot shrink (checked or sealed by the caller).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(RingError::Io(io::Error::last_os_error()));
        }
        let ptr =
            NonNull::new(p.cast::<u8>()).ok_or(RingError::Unsuitable("mapped at address zero"))?;
        Ok(Self { ptr })
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= HEADER_BYTES);
        // SAFETY: `off` is one of the header's word offsets: inside the mapping, 8-byte
        // aligned (the mapping is page-aligned). The memory lives as long as `self`, and
        // every access to it, here and in the other process, is atomic.
        unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= HEADER_BYTES);
        // SAFETY: as in `u64_at`, for a 4-byte word.
        unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// Copies `dst.len()` bytes out of the data area starting at `area + at` (wrapping
    /// within the area).
    fn copy_out(&self, area: usize, at: u64, dst: &mut [u8]) {
        let start = (at % DATA_BYTES as u64) as usize;
        let first = dst.len().min(DATA_BYTES - start);
        let (a, b) = dst.split_at_mut(first);
        // SAFETY: `area` is one of the two data areas, so `area + start + first` and
        // `area + b.len()` (b.len() <= DATA_BYTES - first) stay inside the mapping; the
        // destinations are our own buffers. The other process may write these bytes
        // meanwhile: they are copied as plain bytes, never referenced, and checked by
        // whoever decodes them.
        unsafe {
            let base = self.ptr.as_ptr().add(area);
            std::ptr::copy_nonoverlapping(base.add(start), a.as_mut_ptr(), a.len());
            std::ptr::copy_nonoverlapping(base, b.as_mut_ptr(), b.len());
        }
    }

    /// Copies `src` into the data area at `area + at` (wrapping within the area).
    fn copy_in(&self, area: usize, at: u64, src: &[u8]) {
        let start = (at % DATA_BYTES as u64) as usize;
        let first = src.len().min(DATA_BYTES - start);
        let (a, b) = src.split_at(first);
        // SAFETY: as in `copy_out`, with the roles swapped; the area's bytes from `at` on
        // are ours to write (the reader has consumed them, or never had them).
        unsafe {
            let base = self.ptr.as_ptr().add(area);
            std::ptr::copy_nonoverlapping(a.as_ptr(), base.add(start), a.len());
            std::ptr::copy_nonoverlapping(b.as_ptr(), base, b.len());
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made, of FILE_BYTES; nothing borrows it past `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), FILE_BYTES) };
    }
}

/// Checks a file a guest passed before it is mapped `len` bytes long: a regular file on a
/// filesystem other than hugetlbfs (whose faults can raise `SIGBUS` when its pool runs dry),
/// sealed against shrinking, and at least `len` bytes long, so no access within `len` can
/// fault. The size is read after the seal, so the file cannot shrink in between. The
/// backend's shared regions (`ShareMemory`) are checked the same way.
pub fn check_sealed_file(fd: &OwnedFd, len: u64) -> Result<(), RingError> {
    let st = nix::sys::stat::fstat(fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(RingError::Unsuitable("not a regular file"));
    }
    let fs = nix::sys::statfs::fstatfs(fd)?;
    if fs.filesystem_type().0 as i64 == HUGETLBFS_MAGIC {
        return Err(RingError::Unsuitable("a hugetlbfs file"));
    }
    // SAFETY: F_GET_SEALS takes no argument and only reads the descriptor's state.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
        return Err(RingError::Unsuitable("not sealed against shrinking"));
    }
    if (nix::sys::stat::fstat(fd)?.st_size as u64) < len {
        return Err(RingError::Unsuitable("shorter than it must be"));
    }
    Ok(())
}

/// Seals a file the backend has just mapped (writable, shared) against every change the
/// guest could still make to its pages: `F_SEAL_FUTURE_WRITE` refuses hole punching
/// (`fallocate`), `MADV_REMOVE`, `write(2)` and new writable mappings, and `F_SEAL_SEAL`
/// any change of seals. Mappings made before, the guest's and the backend's, stay writable
/// (Linux 5.1 and later). Without it a guest could punch holes in pages the backend's
/// population check saw, and the backend's next access would create them again, charged to
/// the backend and held as long as its mapping (issue 38). A file that is sealed against
/// sealing already is refused: it could not be protected.
pub fn seal_mapped_file(fd: &OwnedFd) -> Result<(), RingError> {
    let want = libc::F_SEAL_FUTURE_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: F_ADD_SEALS with plain flags only changes the descriptor's file's seals.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, want) } != 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EPERM) => RingError::Unsuitable(
                "sealed against further seals (F_SEAL_SEAL): the backend could not seal it \
                 against writes",
            ),
            _ => RingError::Io(e),
        });
    }
    // SAFETY: as in `check_sealed_file`.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & want != want {
        return Err(RingError::Unsuitable("the seals did not hold"));
    }
    Ok(())
}

/// Which end of the ring this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The library: writes requests, reads replies.
    Guest,
    /// The backend: reads requests, writes replies.
    Host,
}

/// One end of a ring.
#[derive(Debug)]
pub struct Ring {
    map: Mapping,
    side: Side,
    /// Bytes written to the outgoing stream (published).
    out_head: u64,
    /// Bytes read from the incoming stream (published).
    in_tail: u64,
}

/// Where each of this side's words lives.
struct Words {
    in_head: usize,
    in_tail: usize,
    in_area: usize,
    out_head: usize,
    out_tail: usize,
    out_area: usize,
    mine_sleeps: usize,
    peer_sleeps: usize,
}

const REQ_AREA: usize = HEADER_BYTES;
const REP_AREA: usize = HEADER_BYTES + DATA_BYTES;

impl Side {
    fn words(self) -> Words {
        match self {
            Side::Guest => Words {
                in_head: REP_HEAD,
                in_tail: REP_TAIL,
                in_area: REP_AREA,
                out_head: REQ_HEAD,
                out_tail: REQ_TAIL,
                out_area: REQ_AREA,
                mine_sleeps: GUEST_SLEEPS,
                peer_sleeps: HOST_SLEEPS,
            },
            Side::Host => Words {
                in_head: REQ_HEAD,
                in_tail: REQ_TAIL,
                in_area: REQ_AREA,
                out_head: REP_HEAD,
                out_tail: REP_TAIL,
                out_area: REP_AREA,
                mine_sleeps: HOST_SLEEPS,
                peer_sleeps: GUEST_SLEEPS,
            },
        }
    }
}

impl Ring {
    /// This side's end of the ring in `map`. Both streams start at offset zero; this side
    /// publishes that for its own indices now (the guest's fresh file is zero anyway; the
    /// host does not trust that).
    pub fn new(map: Mapping, side: Side) -> Self {
        let w = side.words();
        map.u64_at(w.out_head).store(0, Ordering::Release);
        map.u64_at(w.in_tail).store(0, Ordering::Release);
        map.u32_at(w.mine_sleeps).store(0, Ordering::Release);
        Self {
            map,
            side,
            out_head: 0,
            in_tail: 0,
        }
    }

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> Result<usize, RingError> {
        let head = self
            .map
            .u64_at(self.side.words().in_head)
            .load(Ordering::Acquire);
        let avail = head.wrapping_sub(self.in_tail);
        if avail > DATA_BYTES as u64 {
            return Err(RingError::Corrupt {
                what: "head",
                value: head,
                mine: self.in_tail,
            });
        }
        Ok(avail as usize)
    }

    /// Reads up to `buf.len()` bytes (0 when there are none) and publishes that they were
    /// consumed.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, RingError> {
        let n = self.readable()?.min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        let w = self.side.words();
        self.map.copy_out(w.in_area, self.in_tail, &mut buf[..n]);
        self.in_tail = self.in_tail.wrapping_add(n as u64);
        self.map
            .u64_at(w.in_tail)
            .store(self.in_tail, Ordering::Release);
        Ok(n)
    }

    /// Room to write.
    pub fn writable(&self) -> Result<usize, RingError> {
        let tail = self
            .map
            .u64_at(self.side.words().out_tail)
            .load(Ordering::Acquire);
        let used = self.out_head.wrapping_sub(tail);
        if used > DATA_BYTES as u64 {
            return Err(RingError::Corrupt {
                what: "tail",
                value: tail,
                mine: self.out_head,
            });
        }
        Ok(DATA_BYTES - used as usize)
    }

    /// Writes as much of `buf` as there is room for and publishes it: the bytes written.
    pub fn write(&mut self, buf: &[u8]) -> Result<usize, RingError> {
        let n = self.writable()?.min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        let w = self.side.words();
        self.map.copy_in(w.out_area, self.out_head, &buf[..n]);
        self.out_head = self.out_head.wrapping_add(n as u64);
        self.map
            .u64_at(w.out_head)
            .store(self.out_head, Ordering::Release);
        Ok(n)
    }

    /// The outgoing stream's offset: bytes written so far.
    pub fn out_offset(&self) -> u64 {
        self.out_head
    }

    /// The incoming stream's offset: bytes read so far.
    pub fn in_offset(&self) -> u64 {
        self.in_tail
    }

    /// Announces that this side is about to sleep on the socket. The caller must then look
    /// at the ring once more before it sleeps, and call [`Ring::sleep_end`] when it wakes
    /// (or does not sleep after all).
    pub fn sleep_begin(&self) {
        self.map
            .u32_at(self.side.words().mine_sleeps)
            .store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// This side is awake again.
    pub fn sleep_end(&self) {
        self.map
            .u32_at(self.side.words().mine_sleeps)
            .store(0, Ordering::Relaxed);
    }

    /// After publishing: whether the other side sleeps (or is about to) and must be woken
    /// with a byte on the socket. Clears its word, so it is woken once.
    pub fn peer_wants_wake(&self) -> bool {
        fence(Ordering::SeqCst);
        let w = self.map.u32_at(self.side.words().peer_sleeps);
        w.load(Ordering::SeqCst) != 0 && w.swap(0, Ordering::SeqCst) != 0
    }

    /// After publishing: wakes the other side with a byte on the socket `fd` if it sleeps
    /// ([`Ring::peer_wants_wake`]). Never blocks and never raises `SIGPIPE`: a full socket
    /// holds wake-ups already, and a peer that is gone shows at the next read.
    pub fn wake_peer(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        if !self.peer_wants_wake() {
            return Ok(());
        }
        let b = [NOTE_WAKE];
        // SAFETY: a one-byte send from a local buffer on a descriptor the caller holds.
        let r = unsafe {
            libc::send(
                fd.as_raw_fd(),
                b.as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The guest: one more descriptor note was sent on the socket (call after the send,
    /// before writing the message it belongs to).
    pub fn note_sent(&self) {
        self.map.u64_at(NOTES_SENT).fetch_add(1, Ordering::Release);
    }

    /// The host: how many descriptor notes the guest says it sent (a hint when to look at
    /// the socket; a hostile guest's lie costs it only its own calls' speed).
    pub fn notes_sent(&self) -> u64 {
        self.map.u64_at(NOTES_SENT).load(Ordering::Acquire)
    }

    /// Test and fuzzing hook: stores `value` into the raw header word at `off` (a multiple
    /// of 8 below [`HEADER_BYTES`]), as a hostile peer could.
    #[doc(hidden)]
    pub fn scribble(&self, off: usize, value: u64) {
        if off.is_multiple_of(8) && off + 8 <= HEADER_BYTES {
            self.map.u64_at(off).store(value, Ordering::SeqCst);
        }
    }
}

/// Parses descriptor notes and wake-ups the guest sent on the socket.
#[derive(Debug, Default)]
pub struct Notes {
    partial: Vec<u8>,
}

/// One thing the guest said on the socket.
#[derive(Debug, PartialEq, Eq)]
pub enum Note {
    /// A descriptor that came with the note belongs to the message starting at this
    /// request-stream offset.
    Fd(u64),
}

impl Notes {
    /// Feeds bytes read from the socket; returns the descriptor notes completed, in order.
    /// An unknown byte is an error (the stream is not a vcuda guest's).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Note>) -> Result<(), RingError> {
        for &b in bytes {
            if self.partial.is_empty() {
                match b {
                    NOTE_WAKE => continue,
                    NOTE_FD => self.partial.push(b),
                    _ => {
                        return Err(RingError::Corrupt {
                            what: "socket note",
                            value: u64::from(b),
                            mine: 0,
                        });
                    }
                }
                continue;
            }
            self.partial.push(b);
            if self.partial.len() == NOTE_FD_LEN {
                let mut off = [0u8; 8];
                off.copy_from_slice(&self.partial[1..]);
                out.push(Note::Fd(u64::from_le_bytes(off)));
                self.partial.clear();
            }
        }
        Ok(())
    }
}

/// The bytes of a descriptor note for the message starting at `offset`.
pub fn fd_note(offset: u64) -> [u8; NOTE_FD_LEN] {
    let mut n = [0u8; NOTE_FD_LEN];
    n[0] = NOTE_FD;
    n[1..].copy_from_slice(&offset.to_le_bytes());
    n
}

#[cfg(test)]
mod tests;
