// SPDX-License-Identifier: Apache-2.0 OR MIT
//! One launch as both engines see it: its configuration and options ([`LaunchConfig`],
//! [`LaunchOptions`], [`Cancel`]), what it reports ([`LaunchStats`], [`PrintfSink`]), and
//! [`Launch`], the state its workers share: the checked configuration, symbol addresses and
//! register windows, the next block to claim, the first failure, and the stop conditions.
//! Below the interpreter and the compiler; `launch` builds it and picks the engine.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{
    error::KernelError,
    memory::DeviceMemory,
    module::{KernelInfo, Module},
};

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic (`extern __shared__`) shared memory per block.
    pub dynamic_shared: u32,
    /// A cooperative launch's grid workspace (0: not cooperative): device memory of at
    /// least [`GRID_WORKSPACE_SIZE`] zeroed bytes that `%envreg1`/`%envreg2` point to and
    /// cooperative groups' grid barrier counts in. Every block of a cooperative launch runs
    /// at once, on a thread of its own, so blocks can wait for each other; such a grid may
    /// have at most [`MAX_COOPERATIVE_BLOCKS`] blocks.
    pub grid_workspace: u64,
    /// Blocks per cluster in each dimension (sm_90's thread-block clusters); `[0, 0, 0]`:
    /// the kernel's own (`.reqnctapercluster`), else none (every block a cluster of one).
    /// A cluster's blocks run at once, each on a thread of its own, and share the cluster
    /// barrier and each other's shared memory (at most [`crate::MAX_CLUSTER_SIZE`] blocks).
    pub cluster: [u32; 3],
}

/// Bytes of a cooperative launch's grid workspace (`{u32 size; u32 barrier;}`).
pub const GRID_WORKSPACE_SIZE: u64 = 8;

/// Most blocks of a cooperative launch (each runs on a thread of its own).
pub const MAX_COOPERATIVE_BLOCKS: u64 = 1024;

/// Tuning and limits for a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchOptions {
    /// OS threads to run blocks on; 0 means all available cores.
    pub threads: usize,
    /// Fail with [`KernelError::InstructionLimit`] after this many thread-instructions.
    pub instruction_limit: Option<u64>,
    /// Local memory (stack) per thread, including call frames.
    pub max_local_bytes: u32,
    /// Nested calls per thread.
    pub max_call_depth: u32,
    /// Register file of one block (8 bytes per register per thread).
    pub max_register_bytes: u64,
    /// Static plus dynamic shared memory per block (227 KiB on sm_90).
    pub max_shared_bytes: u32,
    /// Value of `%nsmid` (132 on an H100 SXM).
    pub num_sms: u32,
    /// Fail with [`KernelError::Timeout`] once this much wall time has passed (a GPU
    /// watchdog; none by default, as on a GPU without one).
    pub time_limit: Option<Duration>,
    /// Fail with [`KernelError::Cancelled`] once this is cancelled (the session ended).
    pub cancel: Option<Cancel>,
    /// Run kernels compiled to native code where the compiler handles them (the default);
    /// `false` interprets every kernel.
    pub jit: bool,
    /// Charges the host memory a kernel's compile may take while it runs (none: not
    /// charged).
    pub compile_memory: Option<CompileMemory>,
}

/// Charges what compiling a kernel may take of the host's memory, for as long as the compile
/// runs: called with an estimate in bytes (from the kernel's size and compile cost, an upper
/// bound of what was measured), it returns a token that gives the charge back when dropped,
/// or `None` to refuse. A refused kernel runs interpreted for that launch, and a later launch
/// tries to compile it again.
#[derive(Clone)]
pub struct CompileMemory(Arc<ChargeFn>);

/// What [`CompileMemory`] calls.
type ChargeFn = dyn Fn(u64) -> Option<Box<dyn Send>> + Send + Sync;

impl CompileMemory {
    /// Charges through `f`.
    pub fn new(f: impl Fn(u64) -> Option<Box<dyn Send>> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Charges `bytes`: the token to drop when done, or `None` if refused.
    pub(crate) fn charge(&self, bytes: u64) -> Option<Box<dyn Send>> {
        (self.0)(bytes)
    }
}

impl std::fmt::Debug for CompileMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompileMemory")
    }
}

impl PartialEq for CompileMemory {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for CompileMemory {}

/// Stops running launches from another thread: a launch given a clone of it fails with
/// [`KernelError::Cancelled`] soon after [`Cancel::cancel`] (at its next block or scheduling
/// round).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Cancels every launch that holds a clone of this, now and later.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            threads: 0,
            instruction_limit: None,
            max_local_bytes: 1 << 20,
            max_call_depth: 4096,
            max_register_bytes: 256 << 20,
            max_shared_bytes: 227 * 1024,
            num_sms: 132,
            time_limit: None,
            cancel: None,
            jit: true,
            compile_memory: None,
        }
    }
}

/// What a launch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions times the lanes that executed them.
    pub thread_instructions: u64,
    /// Instructions issued per warp.
    pub warp_instructions: u64,
    pub blocks: u64,
    pub elapsed: Duration,
    /// Whether the kernel ran compiled to native code (else interpreted).
    pub compiled: bool,
}

/// Receives device `printf` output, one call per `printf` per thread.
pub trait PrintfSink: Sync {
    fn print(&self, text: &[u8]);
}

impl PrintfSink for Mutex<Vec<u8>> {
    fn print(&self, text: &[u8]) {
        if let Ok(mut v) = self.lock() {
            v.extend_from_slice(text);
        }
    }
}

/// Writes device `printf` output to the process's stdout.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdoutSink;

impl PrintfSink for StdoutSink {
    fn print(&self, text: &[u8]) {
        use std::io::Write;
        let _ = std::io::stdout().lock().write_all(text);
    }
}

/// One launch's state, shared by its workers (whichever engine runs the blocks).
pub(crate) struct Launch<'a> {
    pub(crate) module: &'a Module,
    pub(crate) kernel: &'a KernelInfo,
    pub(crate) cfg: LaunchConfig,
    pub(crate) params: &'a [u8],
    pub(crate) syms: Vec<u64>,
    /// Register window base per function (u32::MAX if unreachable).
    pub(crate) reg_base: Vec<u32>,
    pub(crate) total_regs: u32,
    pub(crate) nthreads: u32,
    pub(crate) nblocks: u64,
    /// Blocks per cluster in each dimension (`[1, 1, 1]`: no clusters).
    pub(crate) cluster: [u32; 3],
    /// `%is_explicit_cluster`: launched with a cluster shape.
    pub(crate) explicit_cluster: bool,
    pub(crate) shared_size: u32,
    pub(crate) mem: &'a dyn DeviceMemory,
    pub(crate) out: &'a dyn PrintfSink,
    pub(crate) opts: &'a LaunchOptions,
    pub(crate) next_block: AtomicU64,
    pub(crate) abort: AtomicBool,
    pub(crate) error: Mutex<Option<(u64, KernelError)>>,
    pub(crate) insts: AtomicU64,
    pub(crate) winsts: AtomicU64,
    pub(crate) start: Instant,
    pub(crate) timer0: u64,
}

/// Shared memory is given to a block in units of this many bytes, as a GPU allocates it
/// (CUDA's occupancy data: 128 bytes on sm_80 and sm_90). A block may touch the padding of
/// its last unit without a fault, as on a GPU: NVVM widens loads into it (a 16-byte
/// `ld.shared.v4` of which `.pragma "used_bytes_mask"` says 12 bytes are used, where 12
/// bytes of dynamic shared memory remain: Numba's `test_dynshared_slice_gaps`).
pub(crate) const SHARED_UNIT: u32 = 128;

impl Launch<'_> {
    /// Bytes of shared memory a block gets: its size rounded up to [`SHARED_UNIT`] (the
    /// padding reads as zeros).
    pub(crate) fn shared_alloc(&self) -> usize {
        self.shared_size.next_multiple_of(SHARED_UNIT) as usize
    }

    /// Blocks per cluster.
    pub(crate) fn cluster_size(&self) -> u32 {
        self.cluster.iter().product()
    }

    /// A cooperative launch: each worker runs one block (the blocks wait for each other).
    pub(crate) fn cooperative(&self) -> bool {
        self.cfg.grid_workspace != 0
    }

    /// The next block for a worker to run; `None` once the grid is done or the launch
    /// must stop (another block failed, cancelled, past its time limit).
    pub(crate) fn claim_block(&self) -> Option<u64> {
        if self.abort.load(Ordering::Relaxed) {
            return None;
        }
        if let Err(e) = self.check_stop() {
            self.fail(u64::MAX, e);
            return None;
        }
        let id = self.next_block.fetch_add(1, Ordering::Relaxed);
        (id < self.nblocks).then_some(id)
    }

    /// The next cluster for a worker to run (in a launch with clusters; as
    /// [`Launch::claim_block`]).
    pub(crate) fn claim_cluster(&self) -> Option<u64> {
        let n = self.nblocks / u64::from(self.cluster_size().max(1));
        self.claim_block().filter(|&c| c < n)
    }

    /// The block (linear id) of rank `rank` in cluster `c` (clusters in the grid's order,
    /// ranks x-major within a cluster, as `%cluster_ctarank` counts them).
    pub(crate) fn cluster_block_id(&self, c: u64, rank: u32) -> u64 {
        let [cx, cy, _] = self.cluster.map(u64::from);
        let [gx, gy, _] = self.cfg.grid.map(u64::from);
        let (nx, ny) = (gx / cx.max(1), gy / cy.max(1));
        let r = u64::from(rank);
        let x = (c % nx) * cx + r % cx;
        let y = (c / nx % ny) * cy + r / cx % cy;
        let z = c / (nx * ny) * self.cluster[2] as u64 + r / (cx * cy);
        x + y * gx + z * gx * gy
    }

    /// Counts what block `id` executed and records its failure; `false` if it failed (the
    /// worker stops).
    pub(crate) fn block_done(
        &self,
        id: u64,
        r: Result<(), KernelError>,
        insts: u64,
        winsts: u64,
    ) -> bool {
        self.add_insts(insts, winsts);
        match r {
            Ok(()) => true,
            Err(e) => {
                self.fail(id, e);
                false
            }
        }
    }

    /// Adds a worker's instruction counts (thread, warp) to the launch's.
    pub(crate) fn add_insts(&self, insts: u64, winsts: u64) {
        if insts != 0 {
            self.insts.fetch_add(insts, Ordering::Relaxed);
            self.winsts.fetch_add(winsts, Ordering::Relaxed);
        }
    }

    /// Records the failure of block `id` (the lowest block's error wins) and stops the
    /// other workers.
    pub(crate) fn fail(&self, id: u64, e: KernelError) {
        self.abort.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = self.error.lock()
            && slot.as_ref().is_none_or(|(b, _)| id < *b)
        {
            *slot = Some((id, e));
        }
    }

    /// Whether the launch must stop: cancelled, or past its time limit.
    pub(crate) fn check_stop(&self) -> Result<(), KernelError> {
        if self.opts.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            return Err(KernelError::Cancelled);
        }
        if let Some(limit) = self.opts.time_limit
            && self.start.elapsed() > limit
        {
            return Err(KernelError::Timeout {
                limit_ms: limit.as_millis() as u64,
            });
        }
        Ok(())
    }
}
