// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The counters of one process that serves sessions: a fixed-size block of atomics.
//!
//! Sessions on the backend's own threads count into a block on its heap; a worker process
//! (`--isolation process`) counts into a block in a sealed memfd the backend made and
//! mapped read-only, so the backend reads a worker's figures without a message on the data
//! path. A worker may be compromised: the backend only loads numbers from its block (the
//! seals keep it from shrinking under the reader), and every label a number becomes is
//! bounded by the block's shape, never by its contents.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use vcuda_protocol::Opcode;

/// Operation slots: one per [`Opcode`], and one for requests that name none.
pub const OPS: usize = Opcode::ALL.len() + 1;
/// Status slots: codes `0..STATUSES - 1` have one each; larger ones share the last.
pub const STATUSES: usize = 1024;
/// Sessions of one process whose memory is shown one by one (more are counted in the
/// totals only).
pub const SESSION_SLOTS: usize = 256;

/// What one operation's requests did.
#[repr(C)]
#[derive(Debug)]
pub struct OpCounters {
    /// Requests.
    pub calls: AtomicU64,
    /// Requests that failed.
    pub errors: AtomicU64,
    /// Nanoseconds spent serving them (decode, checks, the executor).
    pub nanos: AtomicU64,
    /// Bytes they carried to the device (out segments, shared-memory copies).
    pub bytes_out: AtomicU64,
    /// Bytes they carried back (in segments, shared-memory copies).
    pub bytes_in: AtomicU64,
}

/// One live session's memory.
#[repr(C)]
#[derive(Debug)]
pub struct SessionSlot {
    /// Its number in this process (0: the slot is free).
    pub id: AtomicU64,
    /// Device memory charged to it.
    pub charged: AtomicU64,
    /// The most it may be charged.
    pub limit: AtomicU64,
}

/// One process's counters. Every field is an atomic and all zeroes is the initial state,
/// so a fresh memfd is a valid block.
#[repr(C)]
#[derive(Debug)]
pub struct Block {
    /// Sessions started.
    pub sessions_opened: AtomicU64,
    /// Sessions ended.
    pub sessions_closed: AtomicU64,
    /// Sessions a VM asked for beyond `--max-sessions`.
    pub sessions_refused: AtomicU64,
    /// Messages handled.
    pub messages: AtomicU64,
    /// Messages that could not be decoded.
    pub malformed: AtomicU64,
    /// Device memory charged to this process's sessions now.
    pub memory_charged: AtomicU64,
    /// The last session number handed out.
    pub last_session: AtomicU64,
    /// Sessions whose messages went through a call ring (`vcuda-ring`).
    pub call_rings: AtomicU64,
    /// Per operation, indexed by [`op_index`].
    pub ops: [OpCounters; OPS],
    /// Failed requests per status, indexed by [`status_index`].
    pub statuses: [AtomicU64; STATUSES],
    /// Live sessions' memory.
    pub sessions: [SessionSlot; SESSION_SLOTS],
}

impl Block {
    /// A zeroed block on the heap.
    pub fn boxed() -> Box<Block> {
        Box::new(Block {
            sessions_opened: AtomicU64::new(0),
            sessions_closed: AtomicU64::new(0),
            sessions_refused: AtomicU64::new(0),
            messages: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            memory_charged: AtomicU64::new(0),
            last_session: AtomicU64::new(0),
            call_rings: AtomicU64::new(0),
            ops: [const {
                OpCounters {
                    calls: AtomicU64::new(0),
                    errors: AtomicU64::new(0),
                    nanos: AtomicU64::new(0),
                    bytes_out: AtomicU64::new(0),
                    bytes_in: AtomicU64::new(0),
                }
            }; OPS],
            statuses: [const { AtomicU64::new(0) }; STATUSES],
            sessions: [const {
                SessionSlot {
                    id: AtomicU64::new(0),
                    charged: AtomicU64::new(0),
                    limit: AtomicU64::new(0),
                }
            }; SESSION_SLOTS],
        })
    }

    /// Adds `other`'s counters (not its gauges) to this block: a worker that ended leaves
    /// its totals behind. Its sessions count as closed.
    pub fn absorb(&self, other: &Block) {
        let add = |a: &AtomicU64, b: &AtomicU64| {
            a.fetch_add(b.load(Relaxed), Relaxed);
        };
        add(&self.sessions_opened, &other.sessions_opened);
        add(&self.sessions_closed, &other.sessions_opened);
        add(&self.sessions_refused, &other.sessions_refused);
        add(&self.messages, &other.messages);
        add(&self.malformed, &other.malformed);
        add(&self.call_rings, &other.call_rings);
        for (a, b) in self.ops.iter().zip(&other.ops) {
            add(&a.calls, &b.calls);
            add(&a.errors, &b.errors);
            add(&a.nanos, &b.nanos);
            add(&a.bytes_out, &b.bytes_out);
            add(&a.bytes_in, &b.bytes_in);
        }
        for (a, b) in self.statuses.iter().zip(&other.statuses) {
            add(a, b);
        }
    }
}

/// The slot of `op` in [`Block::ops`] (the last one for `None`).
pub fn op_index(op: Option<Opcode>) -> usize {
    static BY_CODE: LazyLock<Vec<(u32, usize)>> = LazyLock::new(|| {
        let mut v: Vec<(u32, usize)> = Opcode::ALL
            .iter()
            .enumerate()
            .map(|(i, &o)| (o as u32, i))
            .collect();
        v.sort_unstable();
        v
    });
    op.and_then(|o| {
        BY_CODE
            .binary_search_by_key(&(o as u32), |&(c, _)| c)
            .ok()
            .map(|i| BY_CODE[i].1)
    })
    .unwrap_or(OPS - 1)
}

/// The operation a slot of [`Block::ops`] counts (`None` for the last).
pub fn op_of_index(i: usize) -> Option<Opcode> {
    Opcode::ALL.get(i).copied()
}

/// The slot of status `code` in [`Block::statuses`].
pub fn status_index(code: u32) -> usize {
    (code as usize).min(STATUSES - 1)
}

/// A block in a sealed memfd, mapped into this process.
#[derive(Debug)]
pub struct Mapped {
    ptr: NonNull<Block>,
}

// SAFETY: the mapping holds only atomics, which any thread may use through `&Block`; the
// pointer is owned (unmapped once, in Drop).
unsafe impl Send for Mapped {}
// SAFETY: as above: shared access is atomic loads and stores only.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Makes a zeroed block in a new memfd, sealed against resizing, mapped read-only
    /// here: the mapping and the descriptor to hand to a worker.
    pub fn create() -> io::Result<(Self, OwnedFd)> {
        use nix::fcntl::{FcntlArg, SealFlag, fcntl};
        use nix::sys::memfd::{MFdFlags, memfd_create};
        let fd = memfd_create(
            c"vcuda-metrics",
            MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
        )?;
        File::from(fd.try_clone()?).set_len(size_of::<Block>() as u64)?;
        fcntl(
            &fd,
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL,
            ),
        )?;
        let m = Self::map(&fd, libc::PROT_READ)?;
        Ok((m, fd))
    }

    /// Maps the block in `fd` (a worker's, from [`Mapped::create`]) for writing. The file
    /// must be exactly one block long.
    pub fn open(fd: &OwnedFd) -> io::Result<Self> {
        let len = File::from(fd.try_clone()?).metadata()?.len();
        if len != size_of::<Block>() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("metrics file of {len} bytes, not {}", size_of::<Block>()),
            ));
        }
        Self::map(fd, libc::PROT_READ | libc::PROT_WRITE)
    }

    fn map(fd: &OwnedFd, prot: i32) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping of `fd` (at least one block long: created so, or
        // checked) at an address the kernel picks; it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size_of::<Block>(),
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<Block>())
            .ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self { ptr })
    }
}

impl std::ops::Deref for Mapped {
    type Target = Block;

    fn deref(&self) -> &Block {
        // SAFETY: the mapping is page-aligned, one block long and lives until Drop; all
        // zeroes and any other bytes are valid atomics, and they are only accessed
        // atomically (a read-only mapping is only loaded from).
        unsafe { self.ptr.as_ref() }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; no reference into it outlives
        // `self` (Deref borrows it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), size_of::<Block>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_has_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        for &op in Opcode::ALL {
            let i = op_index(Some(op));
            assert!(i < OPS - 1);
            assert_eq!(op_of_index(i), Some(op));
            assert!(seen.insert(i));
        }
        assert_eq!(op_index(None), OPS - 1);
        assert_eq!(op_of_index(OPS - 1), None);
    }

    #[test]
    fn a_worker_block_is_shared_through_its_memfd() {
        let (parent, fd) = Mapped::create().unwrap();
        let worker = Mapped::open(&fd).unwrap();
        worker.ops[3].calls.fetch_add(5, Relaxed);
        worker.statuses[status_index(u32::MAX)].fetch_add(1, Relaxed);
        assert_eq!(parent.ops[3].calls.load(Relaxed), 5);
        assert_eq!(parent.statuses[STATUSES - 1].load(Relaxed), 1);
        // The file cannot be shrunk under the reader.
        assert!(File::from(fd.try_clone().unwrap()).set_len(0).is_err());
        let total = Block::boxed();
        total.absorb(&parent);
        assert_eq!(total.ops[3].calls.load(Relaxed), 5);
    }

    #[test]
    fn a_file_of_another_size_is_refused() {
        let fd =
            nix::sys::memfd::memfd_create(c"x", nix::sys::memfd::MFdFlags::MFD_CLOEXEC).unwrap();
        File::from(fd.try_clone().unwrap()).set_len(4096).unwrap();
        assert!(Mapped::open(&fd).is_err());
    }
}
