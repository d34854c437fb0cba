// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Figures about the backend's sessions, served as Prometheus text (`--metrics ADDR`).
//!
//! In the style of firecracker's metrics, counters are process-wide and cost an atomic add
//! where something happens:
//!
//! - **Session counters** ([`Block`]): sessions opened and closed, messages, per operation
//!   the requests, failures, time spent serving them and bytes carried, failures per status,
//!   and each live session's charged device memory. A process that serves sessions counts
//!   into its own block ([`process`]): the backend's heap with `--isolation thread`, a
//!   sealed memfd the backend maps read-only in a worker process (handed over as a
//!   descriptor, see [`crate::worker`]), so the backend adds up its workers' figures
//!   without any message on the data path. A worker's totals stay behind when it exits.
//! - **Backend counters** ([`refused`], [`workers`]): connections refused and why, worker
//!   processes started and how they ended; kept by the process that accepts connections.
//!
//! Labels are bounded by construction: an operation's name (one per wire operation), a
//! status code (codes above 1022 share `other`), a refusal reason, a live session's number
//! (at most [`block::SESSION_SLOTS`] per process); never a pointer, a kernel name or
//! anything else a guest chooses.

pub mod block;
pub mod http;
pub mod text;

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::{io, ops::Deref};

use vcuda_protocol::Opcode;

pub use block::{Block, Mapped};

/// Where this process's session counters live.
#[derive(Debug)]
enum Store {
    Heap(Box<Block>),
    Mapped(Mapped),
}

impl Deref for Store {
    type Target = Block;

    fn deref(&self) -> &Block {
        match self {
            Store::Heap(b) => b,
            Store::Mapped(m) => m,
        }
    }
}

static PROCESS: OnceLock<Store> = OnceLock::new();

/// This process's session counters.
pub fn process() -> &'static Block {
    PROCESS.get_or_init(|| Store::Heap(Block::boxed()))
}

/// In a worker: counts this process's sessions into the block the backend handed over as
/// `fd` (see [`Mapped::create`]). Must come before the first session.
pub fn use_worker_block(fd: &OwnedFd) -> io::Result<()> {
    let m = Mapped::open(fd)?;
    PROCESS
        .set(Store::Mapped(m))
        .map_err(|_| io::Error::other("session counters already in use"))
}

/// Why a connection or session was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The peer is not allowed (`--allow-uid`, `--socket-group`).
    Access,
    /// The backend's session bounds are full (`--max-sessions`, per peer, pending).
    Bounds,
    /// No worker process could be started (`--max-workers`, or the system refused).
    Workers,
}

impl Refusal {
    const ALL: [Refusal; 3] = [Refusal::Access, Refusal::Bounds, Refusal::Workers];

    fn label(self) -> &'static str {
        match self {
            Refusal::Access => "access",
            Refusal::Bounds => "bounds",
            Refusal::Workers => "workers",
        }
    }
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// It exited with status 0.
    Clean,
    /// It exited otherwise or was killed by a signal it did not get from the backend.
    Failed,
    /// The backend killed it (it outlived its session's grace period).
    Killed,
}

/// Backend-side counters.
#[derive(Debug, Default)]
struct BackendCounters {
    refused: [AtomicU64; 3],
    workers_started: AtomicU64,
    worker_exits: [AtomicU64; 3],
}

static BACKEND: LazyLock<BackendCounters> = LazyLock::new(BackendCounters::default);

/// Counts a refused connection or session.
pub fn refused(why: Refusal) {
    BACKEND.refused[why as usize].fetch_add(1, Relaxed);
}

/// Worker processes and their session counters, as the backend sees them.
#[derive(Debug, Default)]
pub struct Workers {
    live: Mutex<Vec<(u64, Arc<Mapped>)>>,
    retired: OnceLock<Box<Block>>,
    next: AtomicU64,
}

static WORKERS: LazyLock<Workers> = LazyLock::new(Workers::default);
static WORKER_BLOCKS: AtomicBool = AtomicBool::new(false);

/// The backend's view of its workers.
pub fn workers() -> &'static Workers {
    &WORKERS
}

/// Gives every worker started from now on a block of session counters (`--metrics`).
pub fn enable_worker_blocks() {
    WORKER_BLOCKS.store(true, Relaxed);
}

impl Workers {
    /// A new worker starts: its block and the descriptor to hand it (`None` when metrics
    /// are off), and the ticket that retires the block when dropped.
    pub fn starting(&'static self) -> io::Result<(Option<OwnedFd>, WorkerTicket)> {
        BACKEND.workers_started.fetch_add(1, Relaxed);
        if !WORKER_BLOCKS.load(Relaxed) {
            return Ok((None, WorkerTicket(None)));
        }
        let (m, fd) = Mapped::create()?;
        let id = self.next.fetch_add(1, Relaxed);
        self.lock().push((id, Arc::new(m)));
        Ok((Some(fd), WorkerTicket(Some((self, id)))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Mapped>)>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn retired(&self) -> &Block {
        self.retired.get_or_init(Block::boxed)
    }

    /// The live workers' blocks, by worker number.
    fn live(&self) -> Vec<(u64, Arc<Mapped>)> {
        self.lock().clone()
    }
}

/// A worker's place among [`Workers`]: dropped when the worker has been reaped, it adds
/// the worker's totals to those of the workers that ended before.
#[derive(Debug)]
pub struct WorkerTicket(Option<(&'static Workers, u64)>);

impl WorkerTicket {
    /// Counts how the worker ended.
    pub fn exited(&self, how: WorkerExit) {
        BACKEND.worker_exits[how as usize].fetch_add(1, Relaxed);
    }
}

impl Drop for WorkerTicket {
    fn drop(&mut self) {
        if let Some((w, id)) = self.0.take() {
            let gone = {
                let mut live = w.lock();
                live.iter()
                    .position(|(i, _)| *i == id)
                    .map(|p| live.swap_remove(p).1)
            };
            if let Some(m) = gone {
                w.retired().absorb(&m);
            }
        }
    }
}

/// A session switched to the call ring its `Hello` offered.
pub fn call_ring_started() {
    process().call_rings.fetch_add(1, Relaxed);
}

/// One session's counters: its requests count into [`process`]'s block, and its charged
/// memory shows in a slot of its own while it lives.
#[derive(Debug)]
pub struct SessionCounters {
    block: &'static Block,
    slot: Option<usize>,
    charged: u64,
}

impl SessionCounters {
    /// Counts a new session that may be charged up to `limit` bytes.
    pub fn open(limit: u64) -> Self {
        let block = process();
        block.sessions_opened.fetch_add(1, Relaxed);
        let id = block.last_session.fetch_add(1, Relaxed) + 1;
        let slot = block
            .sessions
            .iter()
            .position(|s| s.id.compare_exchange(0, id, Relaxed, Relaxed).is_ok());
        if let Some(i) = slot {
            block.sessions[i].charged.store(0, Relaxed);
            block.sessions[i].limit.store(limit, Relaxed);
        }
        Self {
            block,
            slot,
            charged: 0,
        }
    }

    /// Counts one request of `op` (`None`: not decodable) that ended with `status` after
    /// `nanos`, having carried `out` bytes to the device and `inp` back.
    pub fn request(&self, op: Option<Opcode>, status: u32, nanos: u64, out: u64, inp: u64) {
        let c = &self.block.ops[block::op_index(op)];
        c.calls.fetch_add(1, Relaxed);
        c.nanos.fetch_add(nanos, Relaxed);
        if status != 0 {
            c.errors.fetch_add(1, Relaxed);
            self.block.statuses[block::status_index(status)].fetch_add(1, Relaxed);
        } else {
            if out != 0 {
                c.bytes_out.fetch_add(out, Relaxed);
            }
            if inp != 0 {
                c.bytes_in.fetch_add(inp, Relaxed);
            }
        }
    }

    /// Counts a message (`malformed`: one that could not be decoded).
    pub fn message(&self, malformed: bool) {
        self.block.messages.fetch_add(1, Relaxed);
        if malformed {
            self.block.malformed.fetch_add(1, Relaxed);
        }
    }

    /// The session is now charged `bytes` of device memory.
    pub fn charged(&mut self, bytes: u64) {
        if bytes == self.charged {
            return;
        }
        if bytes > self.charged {
            self.block
                .memory_charged
                .fetch_add(bytes - self.charged, Relaxed);
        } else {
            self.block
                .memory_charged
                .fetch_sub(self.charged - bytes, Relaxed);
        }
        self.charged = bytes;
        if let Some(i) = self.slot {
            self.block.sessions[i].charged.store(bytes, Relaxed);
        }
    }
}

impl Drop for SessionCounters {
    fn drop(&mut self) {
        self.charged(0);
        if let Some(i) = self.slot {
            self.block.sessions[i].id.store(0, Relaxed);
        }
        self.block.sessions_closed.fetch_add(1, Relaxed);
    }
}

/// In a worker: the sessions the backend serves, as it said when it admitted this one.
static BACKEND_SESSIONS: AtomicU64 = AtomicU64::new(0);

/// In a worker: the backend admitted a session and serves `n` with it.
pub fn set_backend_sessions(n: u32) {
    BACKEND_SESSIONS.store(u64::from(n), Relaxed);
}

/// Sessions this backend serves now: the backend's count where a worker was told it, else
/// this process's live sessions.
pub fn live_sessions() -> u64 {
    match BACKEND_SESSIONS.load(Relaxed) {
        0 => {
            let b = process();
            b.sessions_opened
                .load(Relaxed)
                .saturating_sub(b.sessions_closed.load(Relaxed))
        }
        n => n,
    }
}

/// Counts a session a VM asked for beyond its bound.
pub fn vm_session_refused() {
    process().sessions_refused.fetch_add(1, Relaxed);
}
