// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor: replays a session's calls on a real GPU through the CUDA driver API.
//!
//! Built on cudarc's result/`sys` layer with the driver loaded at run time
//! (`driver::load`), so the backend builds and starts on machines without a GPU:
//! [`CudaFactory::new`] then fails with one message naming what is missing (no
//! `libcuda.so.1`, no device, a driver too old), and `--executor auto` falls back to the CPU
//! executor.
//!
//! # Sessions and contexts
//!
//! Every session gets its own CUDA context on the device (`cuCtxCreate`), so guests sharing
//! a GPU are isolated the way separate processes are: their kernels run in separate GPU
//! address spaces, and a fault (a sticky error such as `cudaErrorIllegalAddress`) ruins only
//! the faulting session's context. `cudaDeviceReset` destroys the context and creates a new
//! one. A context costs device memory (a few hundred MiB on large GPUs) and ~0.1 s to
//! create; size `--max-sessions` accordingly. A session may be served by any thread: every
//! executor call first makes the session's context current on the calling thread
//! (`cuCtxSetCurrent`, a thread-local store).
//!
//! # Handles and pointers
//!
//! Streams, events, modules and functions are opaque handles from per-session
//! `handles::HandleTable`s, never host pointers. Behind them are the owned driver objects of
//! `owned` (context, stream, event, module, kernel, pinned buffer), which free themselves on
//! drop and die quietly with their context, so a session tears down with one
//! `cuCtxDestroy`. Device pointers are the driver's own
//! addresses and pass through unchanged, but every one is checked against the session's
//! allocations (`allocs::Allocations`) before a copy, memset or free touches it: in one
//! process all contexts share a unified address space, so the driver alone would copy from
//! another session's memory. Pointers inside kernel parameters cannot be checked; the
//! per-session context is what keeps a kernel from reaching other sessions' memory.
//! `set_address_range` is ignored: the driver picks device addresses (or, with
//! `--cuda-migratable`, the session does, in a range it reserves: `fixed`, so a migrated
//! session gets them back), for a guarantee (device pointers never alias guest pointers)
//! the guest library does not depend on for correctness.
//!
//! # Mapped host memory
//!
//! Page-locked memory a guest process shares (a memfd over the Unix socket, or its own pages
//! of guest RAM in a VM) reaches kernels at the program's own address, as with CUDA's
//! unified addressing: the session maps the region's pages a second time at that address
//! of this process (`SharedRegions::alias`, which never replaces a mapping: where the
//! address is taken the call fails and the library keeps that memory coherent instead),
//! and `map_host` registers the alias with `CU_MEMHOSTREGISTER_DEVICEMAP` in the session's
//! context, checking that the device address is the host address
//! (`CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM`). Kernels then read and write the guest's
//! pages across the bus while the program runs (true zero-copy; a kernel and a host thread
//! can hand a flag back and forth), device-side copies and memsets take the range as
//! device memory (`Owner::Mapped`), and a reset registers it again in the new context.
//! Managed memory stays in device memory (`prefers_managed_on_device`): CUDA migrates it to
//! the GPU, where kernels run at the device memory's speed, not the bus's. In a VM the
//! mapped memory is the guest's own pages, which its kernel gives to other processes once
//! the device lets go of them, and nothing stops a running kernel from writing them
//! (unregistering them waits for the kernel: H100, driver 580, measured). So a session that
//! maps guest pages never leaves its context while work runs (`holds_guest_pages`): a
//! cancelled or timed-out wait fails but the context stays, and unsharing the pages, a
//! reset or the session's end waits for the work (forever, behind an endless kernel), so
//! the guest keeps those pages pinned meanwhile. In a live migration the pages travel as
//! guest RAM; the destination's session holds their addresses from the load and maps them
//! again once QEMU hands it the guest's memory (`session/pending.rs`).
//!
//! # Copies
//!
//! Host data arrives as [`DataSegs`](crate::data::DataSegs): one piece (the socket transport's
//! buffer) or the guest-physical pieces of a vhost-user descriptor chain, mapped straight from
//! guest RAM. Per request, after validating the device side:
//!
//! - every piece in guest RAM pinned by
//!   [`super::ExecutorFactory::guest_memory_changed`]: one DMA per piece, straight
//!   from/into guest memory, then wait for it (the reply releases the
//!   guest's pages, so nothing may still be reading or writing them). An asynchronous
//!   host-to-device copy onto a busy stream is staged instead, so it does not wait for the
//!   stream's earlier work;
//! - pageable pieces and at most [`SMALL_COPY`] bytes: the driver's own pageable path
//!   (`cuMemcpyHtoDAsync` consumes pageable memory before returning; device to host waits);
//! - otherwise through the session's pinned staging buffers (`staging`), pipelined;
//!   host-to-device copies then stay asynchronous.
//!
//! Synchronous host-to-device copies (`cudaMemcpy`) wait for their stream before replying,
//! which also reports errors of earlier asynchronous work, as CUDA does. Device-to-host
//! copies always complete before the reply. 2-D copies become `cuMemcpy2DAsync` calls
//! (`plan`); memsets `cuMemsetD{8,16,32}[2D]Async`.
//!
//! # Modules and launches
//!
//! The guest sends its fat binary (keyed by SHA-256). It is checked (`image::check`) and
//! loaded whole with `cuModuleLoadData`; a session loads each image once, however many
//! module handles refer to it. Kernels come from `cuModuleGetFunction`, their attributes
//! from `cuFuncGetAttribute` and their parameter layout from `cuFuncGetParamInfo` (driver
//! 12.4+). A launch passes the guest's marshaled parameter buffer as `kernelParams` built
//! from that layout, or, if the driver cannot tell it, as a `CU_LAUNCH_PARAM_BUFFER_POINTER`
//! extra padded to the largest parameter size so the driver never reads past it.
//!
//! # Waiting, and sessions that end
//!
//! The executor never blocks in `cuStreamSynchronize`, `cuEventSynchronize` or
//! `cuCtxSynchronize` while work may still run: it polls (`wait`), checking the session's
//! cancellation token ([`DeviceOps::set_cancel`]). When a session ends while its work runs
//! (its connection closed, the guest released it, the device was reset), the wait stops and
//! the session lets go of its context at once (`CudaExecutor::abandon`) and answers; dropping
//! a cancelled session waits for nothing either. The context is not destroyed:
//! `cuCtxDestroy` waits for the context's kernels to end, and for an endless kernel it
//! waits forever (H100, driver 580, measured), while no driver call stops a running kernel
//! in a process that goes on. So the context, its memory and its GPU time stay taken until
//! the process exits. That is why the CUDA executor runs each session in a worker process of
//! its own by default (`--isolation process`): the worker ends with its session (killed if
//! need be), and its kernels with it. Work queued behind a kernel in an abandoned context
//! may still run; what it touches stays valid: the staging buffers are never freed
//! (`pool.forget`), and guest RAM registered with the driver stays pinned. cuBLAS and cuRAND
//! calls block inside those libraries and are not interrupted. `--kernel-timeout` works the
//! same way: a wait for the session's GPU work that lasts longer fails with
//! `cudaErrorLaunchTimeout` (sticky) and the context is abandoned; the driver does not say
//! when a kernel started, so what is timed is the wait, which includes the work queued
//! before the kernel. Once a context was abandoned with work running, the driver makes
//! destroying any other context of the process (an idle one too) and releasing the primary
//! context wait for that work (H100, driver 580, measured), while new contexts still run:
//! from then on the process destroys no context (`owned::work_abandoned`), and a backend
//! serving sessions on threads keeps every later session's device memory until it
//! restarts, which it says in its log. Small copies into pageable memory, which the driver
//! makes wait for the stream inside the call, wait for the work ahead first, polling, so
//! they stay cancellable too.
//!
//! # Errors
//!
//! Driver results map to runtime statuses one to one (`error::cuda_status`). Sticky
//! errors (700 and friends) are remembered by the session, which fails later calls until
//! `cudaDeviceReset`; the broken context keeps failing on its own too.
//!
//! # Device printf
//!
//! On a GPU, `printf` in a kernel is written by the driver to the backend process's stdout
//! when the context synchronizes; the driver offers no per-context sink. By default it stays
//! there (`vcuda run` discards its private backend's stdout, so it is lost).
//! With [`CudaConfig::capture_printf`] (`--cuda-capture-printf`, or
//! `VCUDA_CUDA_CAPTURE_PRINTF=1` in the environment of `vcuda run`) the backend's stdout is
//! captured (`printf`) and returned to the guest in the reply of the request that
//! flushed it, while exactly one session is live; with several, it goes to the backend's
//! stderr instead of to a guest that may not have produced it.
//!
//! # Extending (cuBLAS, cuRAND)
//!
//! Library calls belong in this module too (they need the session's context and streams):
//! [`CudaExecutor::cu_context`], [`CudaExecutor::cu_stream`] and
//! [`CudaExecutor::check_device_range`] are the seam. `blas.rs` and `rand.rs` use it for
//! cuBLAS and cuRAND (cudarc's `cublas`/`curand` types; the libraries are loaded at run time
//! and called through the result layers `cublas_result` and `curand_result`, thin wrappers
//! returning typed errors over `lib_ffi`'s `u32`-returning entry points, as the driver is
//! through `driver` over `ffi`).
//!
//! # Layout
//!
//! `config` holds the settings, `device` opens the GPU and holds what sessions share (the
//! factory, pinned guest RAM), `factory` makes sessions; this file holds the session
//! ([`CudaExecutor`]): its context, what it owns (per domain, the types of `state`), and how
//! it waits, resets and ends. `ops/` implements the executor's domain traits, one file per
//! trait, handing streams and events to `streams`, modules and launches to `modules`,
//! arrays and textures to `texture`, graphs to `graphs`, the VMM API to `vmm`, the libraries
//! to `blas` and `rand`, and copies to `transfer` (with `plan`, `staging` and
//! `guest_mem`); `fixed` (its book in `pages`) places a migratable session's memory.
//! `driver` wraps every driver call; `owned` gives the handle-bearing ones safe, owning
//! types.

mod allocs;
mod blas;
mod blas_lu;
mod config;
mod cublas_result;
mod curand_result;
mod device;
mod device_info;
mod driver;
mod error;
mod factory;
mod ffi;
mod fixed;
mod graphs;
mod guest_mem;
mod handles;
mod image;
mod lib_ffi;
mod modules;
mod ops;
mod owned;
mod pages;
mod plan;
mod printf;
mod rand;
mod rand_log;
mod staging;
mod state;
mod streams;
mod texture;
mod transfer;
mod vmm;
mod wait;
mod warm;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use self::allocs::{Allocations, Owner};
pub use self::config::{
    CudaConfig, GUEST_REGISTER_FLAGS, LARGE_PAGE, SMALL_COPY, SMALL_UNIT, WarmMode, charge,
};
pub use self::device::CudaFactory;
use self::device::Shared;
use self::error::to_status;
pub use self::error::{InitError, MIN_DRIVER_VERSION};
use self::handles::{HandleTable, Kind};
use self::owned::{Context, Event, Stream};
use self::state::{Function, LoadedModule, PARAM_BUF_LEN, ParamBuf};
use super::{DeviceOps, ExecResult, Status};
use cudarc::driver::sys::{CUcontext, CUlimit, CUstream};
use log::warn;

/// One session on the GPU. See the [module documentation](self).
pub struct CudaExecutor {
    shared: Arc<Shared>,
    /// The session's context (`None` only if re-creating it after a reset failed).
    ctx: Option<Context>,
    allocs: Allocations,
    /// Opens of each range mapped through an IPC handle (the driver counts them too).
    ipc_opens: std::collections::HashMap<u64, u32>,
    streams: HandleTable<Stream>,
    /// Events and the flags the guest created them with.
    events: HandleTable<(Event, u32)>,
    /// Module handle -> image hash.
    modules: HandleTable<[u8; 32]>,
    loaded: HashMap<[u8; 32], LoadedModule>,
    functions: HandleTable<Function>,
    function_names: HashMap<(u64, String), u64>,
    pool: staging::Pool,
    params: Box<ParamBuf>,
    /// Bytes of `params` possibly non-zero.
    params_dirty: usize,
    /// Reused `kernelParams` array.
    arg_ptrs: Vec<*mut c_void>,
    /// A call since the last [`DeviceOps::take_stdout`] may have flushed device printf.
    may_print: bool,
    /// A module the session loaded calls `printf` (collecting output costs a round trip
    /// through the capture thread, so sessions without one skip it).
    uses_printf: bool,
    /// cuBLAS handles (`blas.rs`).
    blas: state::Handles,
    /// cuRAND generators (`rand.rs`).
    rand: state::Generators,
    /// How the session waits for the GPU: polling, and stopping when cancelled (`wait`).
    wait: wait::Wait,
    /// Bytes of device memory charged to the session ([`charge`] of each allocation).
    charged: u64,
    /// The VMM API's objects (`vmm.rs`).
    vmm: crate::executor::vmm::VmmBook<state::Phys>,
    /// Memory the guest shares with the session (`ShareMemory`): `(address, length)`.
    host_shared: Vec<(usize, usize)>,
    /// Shared memory mapped for kernels at the guest's address (`MapHostMemory`): address
    /// to length, registered in the current context (`map_host`).
    host_mapped: std::collections::BTreeMap<u64, usize>,
    /// That memory is the guest's own pages (a VM), which its kernel gives to others once
    /// the device lets go of them: the context is never left while it maps them
    /// (`holds_guest_pages`).
    mapped_guest_pages: bool,
    /// Those ranges pinned in the current context: copies DMA straight to and from them.
    host_pinned: guest_mem::PinnedRanges,
    /// CUDA arrays, texture and surface objects (`texture.rs`).
    textures: state::Textures,
    /// Streams created with `cudaStreamNonBlocking` (they do not wait for the legacy
    /// stream, nor it for them).
    non_blocking: std::collections::HashSet<u64>,
    /// CUDA graphs (`graphs.rs`).
    graphs: HandleTable<state::NativeGraph>,
    /// A migratable session's device memory (`fixed.rs`), once it allocated some.
    fixed: Option<pages::FixedBook>,
    /// Priorities of streams created with one other than 0 (a migrated session makes
    /// them again).
    stream_priorities: HashMap<u64, i32>,
}

impl std::fmt::Debug for CudaExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaExecutor")
            .field("ctx", &self.ctx)
            .field("allocations", &self.allocs.count())
            .field("streams", &self.streams.count())
            .field("events", &self.events.count())
            .field("modules", &self.modules.count())
            .finish()
    }
}

// SAFETY: the driver handles the executor holds (context, streams, events, modules,
// kernels, pinned buffers) may be used from any thread once their context is current,
// which every method ensures first. The executor owns them exclusively (`&mut self` for
// every use): the `Rc<Module>`s shared by `loaded` and `functions` and the pointers into
// its own parameter buffer in `arg_ptrs` all live inside it and move with it, and the
// liveness tokens its objects share are atomic. So moving it between threads is sound.
unsafe impl Send for CudaExecutor {}

impl Drop for CudaExecutor {
    fn drop(&mut self) {
        if self.wait.is_cancelled() && !self.idle() {
            if self.holds_guest_pages() {
                // The guest's pages go back to its kernel once the session's close is
                // answered: first wait for the work that may write them (forever, for an
                // endless kernel; the guest keeps them pinned meanwhile).
                warn!("a session ended while its kernels may write guest memory: waiting for them");
                while !self.idle() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            } else {
                // The session ended (its program is gone) with work still running, which
                // may never end: wait for none of it.
                self.abandon(false);
            }
        }
        self.blas_release();
        self.rand_release();
        if let Some(ctx) = self.ctx.take() {
            // The staging buffers are freed while the context is current; destroying the
            // context frees everything else it holds (memory, streams, events, modules),
            // whose owned handles then drop with `self` without driver calls.
            if ctx.bind().is_ok() {
                self.pool.release(&self.wait);
                self.unpin_host();
                // The VMM objects are the process's: the context does not take them.
                self.vmm_teardown();
                if self.idle() {
                    self.textures_release();
                    self.fixed_teardown();
                } else {
                    self.fixed_forget();
                }
            }
            if let Err(e) = ctx.destroy() {
                warn!("destroying a session's context: {}", driver::error_name(e));
            }
            self.pool.forget();
        }
        // Destroying the context flushed its printf output: keep it from the next session.
        if self.shared.printf.is_some() && self.uses_printf {
            self.may_print = true;
            let out = self.take_stdout();
            stderr_dump(&out);
        }
        self.shared.sessions.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Device output no guest may see, to the backend's stderr.
fn stderr_dump(out: &[u8]) {
    use std::io::Write;
    if !out.is_empty() {
        let _ = std::io::stderr().write_all(out);
    }
}

impl CudaExecutor {
    fn new(shared: Arc<Shared>) -> ExecResult<Self> {
        // The slot is taken first, so two sessions cannot both see an idle exclusive GPU.
        if shared.exclusive {
            if shared
                .sessions
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                warn!(
                    "refusing a second session: kernels on this GPU can reach the backend's \
                     pageable memory (see --allow-pageable-access)"
                );
                return Err(Status(vcuda_protocol::status::DEVICES_UNAVAILABLE));
            }
        } else {
            shared.sessions.fetch_add(1, Ordering::AcqRel);
        }
        let ctx = shared.warm.take(shared.device).map_err(|e| {
            warn!("cannot create a CUDA context: {}", driver::error_name(e));
            shared.sessions.fetch_sub(1, Ordering::AcqRel);
            to_status(e)
        })?;
        let pool = staging::Pool::new(shared.config.staging_chunk, shared.config.staging_depth);
        let wait = wait::Wait::new(shared.config.kernel_timeout);
        Ok(Self {
            shared,
            ctx: Some(ctx),
            allocs: Allocations::default(),
            ipc_opens: Default::default(),
            streams: HandleTable::new(Kind::Stream),
            events: HandleTable::new(Kind::Event),
            modules: HandleTable::new(Kind::Module),
            loaded: HashMap::new(),
            functions: HandleTable::new(Kind::Function),
            function_names: HashMap::new(),
            pool,
            params: Box::new(ParamBuf([0; PARAM_BUF_LEN])),
            params_dirty: 0,
            arg_ptrs: Vec::new(),
            may_print: false,
            uses_printf: false,
            blas: state::Handles::default(),
            rand: state::Generators::default(),
            wait,
            charged: 0,
            vmm: Default::default(),
            host_shared: Vec::new(),
            host_mapped: std::collections::BTreeMap::new(),
            mapped_guest_pages: false,
            host_pinned: guest_mem::PinnedRanges::default(),
            textures: state::Textures::default(),
            non_blocking: std::collections::HashSet::new(),
            graphs: HandleTable::new(Kind::Graph),
            fixed: None,
            stream_priorities: HashMap::new(),
        })
    }

    /// The session's context, without binding it.
    fn context(&self) -> ExecResult<&Context> {
        context_of(&self.ctx)
    }

    /// The session's context, current on the calling thread afterwards. For library calls
    /// (cuBLAS, cuRAND) that run in the session's context.
    pub fn cu_context(&self) -> ExecResult<CUcontext> {
        self.bind()?;
        self.context().map(Context::raw)
    }

    /// The driver stream behind a guest stream handle (null: the legacy default stream).
    pub fn cu_stream(&self, handle: u64) -> ExecResult<CUstream> {
        state::stream_ref(&self.streams, handle).map(owned::StreamRef::raw)
    }

    /// Checks that `[ptr, ptr + len)` is device memory this session owns.
    pub fn check_device_range(&self, ptr: u64, len: u64) -> ExecResult<()> {
        self.allocs.check(ptr, len)
    }

    /// Makes the session's context current on this thread.
    /// IPC handles pass only with `--cuda-ipc` (see [`CudaConfig::ipc`]).
    fn ipc_allowed(&self) -> ExecResult<()> {
        if self.shared.config.ipc {
            Ok(())
        } else {
            Err(Status::NOT_SUPPORTED)
        }
    }

    fn bind(&self) -> ExecResult<()> {
        self.context()?.bind().map_err(to_status)
    }

    fn check_device(&self, device: u32) -> ExecResult<()> {
        if device == 0 {
            Ok(())
        } else {
            Err(Status::INVALID_DEVICE)
        }
    }

    /// Waits until the session's work on every stream is done (polling, see `wait`), then
    /// synchronizes the context to collect errors of work outside those streams.
    fn wait_device(&self) -> ExecResult<()> {
        let legacy = std::iter::once(owned::StreamRef::Legacy);
        let created = self.streams.values().map(owned::StreamRef::Created);
        for s in legacy.chain(created) {
            s.synchronize(&self.wait)?;
        }
        driver::ctx_synchronize().map_err(to_status)
    }

    /// Passes `r` on; first, if the session was cancelled, abandons the context (see
    /// [`CudaExecutor::abandon`]). Every call that waits for the GPU ends with this, while
    /// what a still-pending DMA may touch is still valid.
    fn settle<T>(&mut self, r: ExecResult<T>) -> ExecResult<T> {
        let timed_out = self.wait.take_timed_out();
        if (timed_out || self.wait.is_cancelled()) && self.ctx.is_some() {
            self.abandon(true);
        }
        r
    }

    /// Whether the context maps pages of the guest's RAM for kernels (see
    /// `mapped_guest_pages`), so it must not be left while work runs.
    fn holds_guest_pages(&self) -> bool {
        self.mapped_guest_pages && !self.host_mapped.is_empty() && self.ctx.is_some()
    }

    /// Lets go of the session's context at once, without waiting for its work (see
    /// "Waiting, and sessions that end"): the session ended (its connection closed, the
    /// guest released it) while a kernel or copy may still run, or a wait outlasted
    /// `--kernel-timeout` (the session then answers the sticky `cudaErrorLaunchTimeout`
    /// until `cudaDeviceReset` gives it a new context). cuBLAS handles and cuRAND
    /// generators, whose destruction would synchronize, are dropped without it. The session
    /// has no context afterwards; its later calls fail. `mid_call`: a call was waiting
    /// (logged), rather than the session simply ending.
    /// Whether none of the session's streams has work pending (no query answers
    /// `CUDA_ERROR_NOT_READY`; a broken context counts as idle: destroying it waits for
    /// nothing). A cancelled session whose context is idle is destroyed as usual, so a
    /// program that simply ended (every closed VM session is cancelled first) gives its
    /// context back.
    fn idle(&self) -> bool {
        let Some(ctx) = &self.ctx else {
            return true;
        };
        if ctx.bind().is_err() {
            return true;
        }
        let legacy = std::iter::once(owned::StreamRef::Legacy);
        let created = self.streams.values().map(owned::StreamRef::Created);
        legacy
            .chain(created)
            .all(|s| s.query() != Err(cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY))
    }

    fn abandon(&mut self, mid_call: bool) {
        if self.holds_guest_pages() {
            // Its kernels may write the guest's pages while they run, and nothing stops
            // them (unregistering the memory waits for them too: H100, driver 580,
            // measured): the context stays, and what unmaps the pages (unsharing them,
            // a reset, the session's end) waits for that work, so the guest keeps them
            // pinned meanwhile. The caller still fails.
            warn!(
                "a session's GPU work was cancelled or timed out while guest memory is mapped \
                 for its kernels: its context stays until that work ends"
            );
            return;
        }
        if let Some(ctx) = self.ctx.take() {
            if mid_call {
                warn!("a session's GPU work was cancelled or timed out: leaving its context");
            }
            if !owned::work_abandoned() {
                warn!(
                    "a CUDA context was left with work that may never end: from now on this \
                     process destroys no context (the driver would wait for that work), so the \
                     device memory of every later session stays taken until the backend \
                     restarts (the default --isolation process ends such work with its worker)"
                );
            }
            // Not destroyed: the driver would wait for its kernels first (forever, for an
            // endless one), and the session must answer now.
            ctx.abandon();
            // Nor is the memory its work may still use.
            self.fixed_forget();
        }
        self.pool.forget();
        // With no context, these forget their handles instead of destroying them.
        self.blas_release();
        self.rand_release();
    }

    /// Destroys the context and everything in it, then makes a fresh one.
    fn reset_context(&mut self) -> ExecResult<()> {
        // A migratable session's pages outlive the context: unmapped only once no work
        // uses them (what cannot be waited for keeps them).
        if self.fixed.is_some() && !self.idle() && (self.wait_device().is_err() && !self.idle()) {
            self.fixed_forget();
        }
        // Library handles hold resources in the context: release them while it lives.
        self.blas_release();
        self.rand_release();
        if let Some(ctx) = self.ctx.take() {
            // The staging buffers are freed while the context is current (best effort: a
            // broken context frees them when destroyed); every other object dies with the
            // context, and its owned handle is dropped below without a driver call.
            if ctx.bind().is_ok() {
                self.pool.release(&self.wait);
                self.unpin_host();
                if self.idle() {
                    self.textures_release();
                }
            }
            // The VMM objects outlive contexts: freed here, with their charges.
            self.vmm_teardown();
            self.fixed_teardown();
            let _ = ctx.destroy();
        }
        self.pool.forget();
        self.allocs.clear();
        self.ipc_opens.clear();
        self.charged = 0;
        self.streams.clear();
        self.events.clear();
        self.modules.clear();
        self.loaded.clear();
        self.functions.clear();
        self.function_names.clear();
        self.textures.clear();
        self.non_blocking.clear();
        self.graphs.clear();
        self.stream_priorities.clear();
        self.params_dirty = PARAM_BUF_LEN;
        let ctx = Context::create(self.shared.device).map_err(to_status)?;
        self.ctx = Some(ctx);
        // The old context's pinning went with it: pin the shared memory in the new one,
        // and map what was mapped for kernels again.
        self.host_pinned = guest_mem::PinnedRanges::default();
        for (addr, len) in self.host_shared.clone() {
            self.pin_host(addr, len);
        }
        for (addr, len) in std::mem::take(&mut self.host_mapped) {
            match self.map_host(addr, len) {
                Ok(()) => {
                    self.host_mapped.insert(addr, len);
                }
                Err(e) => warn!("host memory at {addr:#x} is no longer mapped for kernels: {e:?}"),
            }
        }
        Ok(())
    }

    /// Unpins all shared memory pinned in the current context (which must be bound); no
    /// copy may be running (this holds `&mut self`).
    fn unpin_host(&mut self) {
        for &(addr, _) in self.host_pinned.ranges() {
            // SAFETY: `addr` starts a range `pin_host` pinned in this context, which the
            // caller bound; no copy is running.
            let _ = unsafe { driver::mem_host_unregister(addr as *mut u8) };
        }
        self.host_pinned = guest_mem::PinnedRanges::default();
    }

    /// Registers `[addr, addr + len)`, shared memory mapped in this process at the guest's
    /// own address of it, for the device in the session's context, where kernels then reach
    /// it at that same address (true zero-copy: the GPU reads and writes the guest's pages
    /// across the bus). Not portable: only this session's context maps it.
    fn map_host(&mut self, addr: u64, len: usize) -> ExecResult<()> {
        self.bind()?;
        let p = addr as *mut u8;
        // SAFETY: the session keeps `[addr, addr + len)` mapped (its alias of the shared
        // region) until `host_memory_unmap` has unregistered it, or until after this
        // executor and its context (whose destruction drops the registration) are gone.
        unsafe {
            driver::mem_host_register(p, len, cudarc::driver::sys::CU_MEMHOSTREGISTER_DEVICEMAP)
        }
        .map_err(|e| {
            log::debug!(
                "host memory {addr:#x}+{len:#x} not mapped for kernels: {}",
                driver::error_name(e)
            );
            Status::NOT_SUPPORTED
        })?;
        let undo = || {
            // SAFETY: registered just above in the current context; nothing uses it yet.
            let _ = unsafe { driver::mem_host_unregister(p) };
        };
        match driver::mem_host_get_device_pointer(p) {
            Ok(d) if d == addr => {}
            r => {
                log::debug!("host memory {addr:#x} is at {r:?} for the device, not in place");
                undo();
                return Err(Status::NOT_SUPPORTED);
            }
        }
        if let Err(e) = self.allocs.insert(addr, len as u64, Owner::Mapped) {
            undo();
            return Err(e);
        }
        Ok(())
    }

    /// Pins shared memory `[addr, addr + len)` in the session's context (not portable: no
    /// other context's copies may use it); on failure, copies through it are staged.
    ///
    /// Pinning is only a speed-up, and the driver faults in and locks every page it pins: a
    /// region is pinned only if every page of it is populated already (a client's sparse
    /// file would otherwise make the backend allocate and lock it), and a session pins at
    /// most [`config::MAX_PINNED_BYTES`] (each session is a worker process of its own).
    fn pin_host(&mut self, addr: usize, len: usize) {
        let pinned: usize = self.host_pinned.ranges().iter().map(|&(_, l)| l).sum();
        if pinned.saturating_add(len) > config::MAX_PINNED_BYTES {
            log::debug!("shared memory {addr:#x}+{len:#x} not pinned: over the session's bound");
            return;
        }
        // SAFETY: the session maps `[addr, addr + len)` (a region it shared) while this runs.
        if !unsafe { crate::resident::all_resident(addr as *const u8, len) } {
            log::debug!("shared memory {addr:#x}+{len:#x} not pinned: not all populated");
            return;
        }
        if self.bind().is_err() {
            return;
        }
        // SAFETY: the session keeps the range mapped until `host_memory_unshared`, which
        // unpins it first, or until after this executor and its context (whose destruction
        // drops the pinning) are gone.
        match unsafe { driver::mem_host_register(addr as *mut u8, len, 0) } {
            Ok(()) => {
                let mut r = self.host_pinned.ranges().to_vec();
                r.push((addr, len));
                self.host_pinned = guest_mem::PinnedRanges::new(r);
            }
            Err(e) => log::debug!(
                "shared memory {addr:#x}+{len:#x} not pinned ({}); copies through it are staged",
                driver::error_name(e)
            ),
        }
    }
}

/// The session's context in `ctx` (the executor's field), without binding it. A function
/// of the field, so the borrow leaves the executor's other fields free.
fn context_of(ctx: &Option<Context>) -> ExecResult<&Context> {
    ctx.as_ref()
        .ok_or(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
}

/// `cudaLimit` (0..=6) as the driver's `CUlimit` (same numbers).
fn cu_limit(limit: u32) -> ExecResult<CUlimit> {
    use CUlimit::*;
    Ok(match limit {
        0 => CU_LIMIT_STACK_SIZE,
        1 => CU_LIMIT_PRINTF_FIFO_SIZE,
        2 => CU_LIMIT_MALLOC_HEAP_SIZE,
        3 => CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH,
        4 => CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
        5 => CU_LIMIT_MAX_L2_FETCH_GRANULARITY,
        6 => CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
        _ => return Err(Status::UNSUPPORTED_LIMIT),
    })
}

#[cfg(test)]
mod tests;
