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
//! `handles::HandleTable`s, never host pointers. Device pointers are the driver's own
//! addresses and pass through unchanged, but every one is checked against the session's
//! allocations (`allocs::Allocations`) before a copy, memset or free touches it: in one
//! process all contexts share a unified address space, so the driver alone would copy from
//! another session's memory. Pointers inside kernel parameters cannot be checked; the
//! per-session context is what keeps a kernel from reaching other sessions' memory.
//! `set_address_range` is ignored: the driver picks device addresses, and placing them at a
//! guest-chosen address would need the virtual memory management API with 2 MiB
//! granularity and a sub-allocator, for a guarantee (device pointers never alias guest
//! pointers) the guest library does not depend on for correctness.
//!
//! # Copies
//!
//! Host data arrives as [`DataSegs`]: one piece (the socket transport's buffer) or the
//! guest-physical pieces of a vhost-user descriptor chain, mapped straight from guest RAM.
//! Per request, after validating the device side:
//!
//! - every piece in guest RAM pinned by [`ExecutorFactory::guest_memory_changed`]: one DMA
//!   per piece, straight from/into guest memory, then wait for it (the reply releases the
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
//! cuBLAS and cuRAND (cudarc's `cublas`/`curand` features, libraries loaded at run time and
//! checked once before first use).

mod allocs;
mod blas;
mod device_info;
mod driver;
mod error;
mod guest_mem;
mod handles;
mod image;
mod plan;
mod printf;
mod rand;
mod staging;
mod transfer;

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use cudarc::driver::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUevent, CUfunction, CUfunction_attribute, CUlimit,
    CUmodule, CUresult, CUstream,
};
use log::{debug, info, warn};
use vcuda_protocol::{
    DeviceInfo, EventElapsedResp, ExecutorKind, FuncAttrs, LaunchReq, MAX_PARAM_LEN, MemcpyDtoDReq,
    MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq, ParamInfo, STREAM_LEGACY,
};

use self::allocs::{Allocations, Owner};
use self::error::to_status;
pub use self::error::{InitError, MIN_DRIVER_VERSION};
use self::guest_mem::PinnedRanges;
use self::handles::{HandleTable, Kind};
use super::{ExecResult, Executor, ExecutorFactory, FunctionInfo, ModuleImage, Status};
use crate::data::DataSegs;

/// Copies of at most this many bytes from or to pageable memory use the driver's own
/// staging (it inlines small copies into its command stream) instead of ours.
pub const SMALL_COPY: u64 = 64 << 10;

/// Flags for pinning guest RAM: `CU_MEMHOSTREGISTER_PORTABLE`, so the pinning counts in
/// every session's context. Not `DEVICEMAP`: our copies only need the DMA engine to reach
/// guest RAM, and mapping it into the device address space would let any session's
/// kernels read and write all guest RAM at its host address.
pub const GUEST_REGISTER_FLAGS: u32 = cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE;

/// Settings of the CUDA executor.
#[derive(Debug, Clone)]
pub struct CudaConfig {
    /// Device ordinal to serve (guests see it as device 0).
    pub device: u32,
    /// Bytes per pinned staging buffer.
    pub staging_chunk: usize,
    /// Staging buffers per session.
    pub staging_depth: usize,
    /// Capture device `printf` (the backend's stdout) and return it to the guest.
    pub capture_printf: bool,
}

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            device: 0,
            staging_chunk: 4 << 20,
            staging_depth: 4,
            capture_printf: false,
        }
    }
}

/// The primary context, retained while guest RAM is pinned in it.
#[derive(Debug, Default)]
struct Registrar {
    ctx: Option<CUcontext>,
}

// SAFETY: a CUDA context handle may be used from any thread (the driver serializes what it
// must); it is only touched under the `Mutex` that holds this struct.
unsafe impl Send for Registrar {}

/// What every session of one factory shares.
#[derive(Debug)]
struct Shared {
    config: CudaConfig,
    device: CUdevice,
    driver: driver::Loaded,
    info: DeviceInfo,
    /// Pinned guest RAM. Copies that DMA straight from or to it hold the read lock until
    /// their DMA has finished; re-pinning takes the write lock.
    pinned: RwLock<PinnedRanges>,
    registrar: Mutex<Registrar>,
    /// Module images that passed [`image::check`], by hash.
    checked: Mutex<HashMap<[u8; 32], image::ImageInfo>>,
    /// Device printf capture, when on.
    printf: Option<&'static printf::Capture>,
    /// Live sessions.
    sessions: AtomicUsize,
}

impl Shared {
    /// Pins the new regions and unpins those gone; regions present before and after (same
    /// address and length: memory hot-plug adds regions) stay pinned.
    fn set_guest_memory(&self, regions: &[(usize, usize)]) {
        let mut pinned = self.pinned.write().unwrap_or_else(|e| e.into_inner());
        let mut reg = self.registrar.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = PinnedRanges::new(regions.to_vec());
        if wanted.ranges() == pinned.ranges() {
            return;
        }
        let ctx = match reg.ctx {
            Some(c) => c,
            None => match driver::primary_ctx_retain(self.device) {
                Ok(c) => *reg.ctx.insert(c),
                Err(e) => {
                    warn!(
                        "cannot pin guest memory ({}); copies will be staged",
                        driver::error_name(e)
                    );
                    return;
                }
            },
        };
        // SAFETY: `ctx` is the retained primary context, live until `Shared` drops.
        if let Err(e) = unsafe { driver::ctx_set_current(ctx) } {
            warn!("cannot pin guest memory ({})", driver::error_name(e));
            return;
        }
        let mut kept = Vec::new();
        for &(addr, len) in pinned.ranges() {
            if wanted.ranges().contains(&(addr, len)) {
                kept.push((addr, len));
                continue;
            }
            // SAFETY: `addr` starts a range we registered; the write lock guarantees no
            // copy is using it; the transport keeps it mapped until this call returns.
            if let Err(e) = unsafe { driver::mem_host_unregister(addr as *mut u8) } {
                warn!(
                    "unpinning guest memory at {addr:#x}: {}",
                    driver::error_name(e)
                );
            }
        }
        for &(addr, len) in wanted.ranges() {
            if kept.contains(&(addr, len)) {
                continue;
            }
            // SAFETY: the transport guarantees the region is mapped in this process until
            // the next call, which unpins it first if it is gone by then.
            match unsafe { driver::mem_host_register(addr as *mut u8, len, GUEST_REGISTER_FLAGS) } {
                Ok(()) => kept.push((addr, len)),
                Err(e) => warn!(
                    "cannot pin guest memory {addr:#x}+{len:#x} ({}); copies through it will be staged",
                    driver::error_name(e)
                ),
            }
        }
        debug!(
            "pinned {} of {} guest memory regions",
            kept.len(),
            wanted.ranges().len()
        );
        *pinned = PinnedRanges::new(kept);
        // SAFETY: unbinding (null) is always allowed; sessions bind their own context.
        let _ = unsafe { driver::ctx_set_current(std::ptr::null_mut()) };
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let reg = self.registrar.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(ctx) = reg.ctx.take() {
            let pinned = self.pinned.get_mut().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the context is our retained primary context; no session is left (they
            // hold `Arc<Shared>`), so no copy uses the pinned ranges; each was registered
            // by us and is unregistered once; the retain is released once.
            unsafe {
                let _ = driver::ctx_set_current(ctx);
                for &(addr, _) in pinned.ranges() {
                    let _ = driver::mem_host_unregister(addr as *mut u8);
                }
                let _ = driver::ctx_set_current(std::ptr::null_mut());
                let _ = driver::primary_ctx_release(self.device);
            }
        }
    }
}

/// The device as an [`device_info::AttrSource`].
struct DriverAttrs(CUdevice);

impl device_info::AttrSource for DriverAttrs {
    fn name(&self) -> Vec<u8> {
        driver::device_name(self.0).unwrap_or_default()
    }
    fn uuid(&self) -> [u8; 16] {
        driver::device_uuid(self.0).unwrap_or_default()
    }
    fn total_mem(&self) -> u64 {
        driver::device_total_mem(self.0).unwrap_or_default()
    }
    fn attribute(&self, a: CUdevice_attribute) -> Option<i32> {
        driver::device_attribute(self.0, a).ok()
    }
}

/// Makes [`CudaExecutor`]s on one GPU.
#[derive(Debug)]
pub struct CudaFactory {
    shared: Arc<Shared>,
}

impl CudaFactory {
    /// Loads the driver and opens the device, or says what is missing.
    pub fn new(config: CudaConfig) -> Result<Self, InitError> {
        let loaded = driver::load()?;
        let count = loaded.device_count as u32;
        if config.device >= count {
            return Err(InitError::BadOrdinal {
                ordinal: config.device,
                count,
            });
        }
        let drv = |call| {
            move |e| InitError::Driver {
                call,
                name: driver::error_name(e),
            }
        };
        let device = driver::device_get(config.device as i32).map_err(drv("cuDeviceGet"))?;
        // A device that cannot host a context (prohibited compute mode, fallen off the bus)
        // fails here rather than in the first session.
        let ctx = driver::ctx_create(device).map_err(drv("cuCtxCreate"))?;
        // SAFETY: created just above, used by nothing else.
        let _ = unsafe { driver::ctx_destroy(ctx) };
        let info = device_info::fill(&DriverAttrs(device));
        let name_len = info.name.iter().position(|&c| c == 0).unwrap_or(0);
        info!(
            "CUDA executor: device {} ({}), {} MiB, compute capability {}.{}, driver {}.{}",
            config.device,
            String::from_utf8_lossy(&info.name[..name_len]),
            info.total_global_mem >> 20,
            info.attr(vcuda_protocol::attr::COMPUTE_CAPABILITY_MAJOR)
                .unwrap_or(0),
            info.attr(vcuda_protocol::attr::COMPUTE_CAPABILITY_MINOR)
                .unwrap_or(0),
            loaded.version / 1000,
            loaded.version % 1000 / 10,
        );
        if !loaded.param_info {
            info!("driver lacks cuFuncGetParamInfo: kernel layouts come from the guest");
        }
        let printf = if config.capture_printf {
            match printf::Capture::global() {
                Ok(c) => Some(c),
                Err(e) => {
                    warn!("cannot capture device printf ({e}); it goes to stdout");
                    None
                }
            }
        } else {
            None
        };
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                device,
                driver: loaded,
                info,
                pinned: RwLock::default(),
                registrar: Mutex::default(),
                checked: Mutex::default(),
                printf,
                sessions: AtomicUsize::new(0),
            }),
        })
    }

    /// What guests see of the device.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// A new session's executor, as its concrete type.
    pub fn new_executor(&self) -> ExecResult<CudaExecutor> {
        CudaExecutor::new(self.shared.clone())
    }
}

impl ExecutorFactory for CudaFactory {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Cuda
    }

    fn new_session(&self) -> ExecResult<Box<dyn Executor>> {
        Ok(Box::new(self.new_executor()?))
    }

    fn guest_memory_changed(&self, regions: &[(usize, usize)]) {
        self.shared.set_guest_memory(regions);
    }
}

/// `cudaStreamNonBlocking`.
const STREAM_NON_BLOCKING: u32 = 1;
/// `cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess`.
const EVENT_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaEventDisableTiming`.
const EVENT_DISABLE_TIMING: u32 = 0x2;
/// `cudaEventInterprocess`: accepted, but IPC handles are not forwarded, so the driver is
/// asked for an ordinary event.
const EVENT_INTERPROCESS: u32 = 0x4;
/// `cudaEventRecordExternal` / `cudaEventWaitExternal`.
const EVENT_EXTERNAL: u32 = 0x1;

/// The parameter buffer handed to the driver: aligned, and as long as any kernel's
/// parameters may be, so the driver never reads past it.
#[repr(C, align(16))]
struct ParamBuf([u8; PARAM_BUF_LEN]);

/// [`MAX_PARAM_LEN`] rounded up to 16.
const PARAM_BUF_LEN: usize = (MAX_PARAM_LEN as usize).next_multiple_of(16);

/// A kernel the session looked up.
#[derive(Debug)]
struct Function {
    raw: CUfunction,
    module: u64,
    info: FunctionInfo,
}

/// A module image loaded in the session's context.
#[derive(Debug)]
struct LoadedModule {
    raw: CUmodule,
    /// Module handles referring to it.
    refs: usize,
}

/// One session on the GPU. See the [module documentation](self).
pub struct CudaExecutor {
    shared: Arc<Shared>,
    /// The session's context (`None` only if re-creating it after a reset failed).
    ctx: Option<CUcontext>,
    allocs: Allocations,
    streams: HandleTable<CUstream>,
    events: HandleTable<(CUevent, u32)>,
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
    /// A call since the last [`Executor::take_stdout`] may have flushed device printf.
    may_print: bool,
    /// A module the session loaded calls `printf` (collecting output costs a round trip
    /// through the capture thread, so sessions without one skip it).
    uses_printf: bool,
    /// cuBLAS handles (`blas.rs`).
    blas: blas::Handles,
    /// cuRAND generators (`rand.rs`).
    rand: rand::Generators,
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

// SAFETY: the raw driver handles the executor holds (context, streams, events, modules,
// functions, pinned buffers) may be used from any thread once their context is current,
// which every method ensures first; the executor owns them exclusively (`&mut self` for
// every use), so moving it between threads is sound.
unsafe impl Send for CudaExecutor {}

impl Drop for CudaExecutor {
    fn drop(&mut self) {
        self.blas_release();
        self.rand_release();
        if let Some(ctx) = self.ctx.take() {
            // SAFETY: our context, live until destroyed here; the staging buffers are
            // freed while it is current; destroying the context frees everything else it
            // holds (memory, streams, events, modules), whose handles die with `self`.
            unsafe {
                if driver::ctx_set_current(ctx).is_ok() {
                    self.pool.release();
                }
                if let Err(e) = driver::ctx_destroy(ctx) {
                    warn!("destroying a session's context: {}", driver::error_name(e));
                }
            }
        }
        // Destroying the context flushed its printf output: keep it from the next session.
        if self.shared.printf.is_some() && self.uses_printf {
            self.may_print = true;
            let out = self.take_stdout();
            stderr_dump(&out);
        }
        self.shared.sessions.fetch_sub(1, Ordering::Relaxed);
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
        let ctx = driver::ctx_create(shared.device).map_err(|e| {
            warn!("cannot create a CUDA context: {}", driver::error_name(e));
            to_status(e)
        })?;
        let pool = staging::Pool::new(shared.config.staging_chunk, shared.config.staging_depth);
        shared.sessions.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            shared,
            ctx: Some(ctx),
            allocs: Allocations::default(),
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
            blas: blas::Handles::default(),
            rand: rand::Generators::default(),
        })
    }

    /// The session's context, current on the calling thread afterwards. For library calls
    /// (cuBLAS, cuRAND) that run in the session's context.
    pub fn cu_context(&self) -> ExecResult<CUcontext> {
        self.bind()?;
        self.ctx
            .ok_or(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
    }

    /// The driver stream behind a guest stream handle (null: the legacy default stream).
    pub fn cu_stream(&self, handle: u64) -> ExecResult<CUstream> {
        if handle == STREAM_LEGACY {
            return Ok(std::ptr::null_mut());
        }
        self.streams.get(handle).copied()
    }

    /// Checks that `[ptr, ptr + len)` is device memory this session owns.
    pub fn check_device_range(&self, ptr: u64, len: u64) -> ExecResult<()> {
        self.allocs.check(ptr, len)
    }

    /// Makes the session's context current on this thread.
    fn bind(&self) -> ExecResult<()> {
        let ctx = self
            .ctx
            .ok_or(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))?;
        // SAFETY: our context, live while `self.ctx` holds it.
        unsafe { driver::ctx_set_current(ctx) }.map_err(to_status)
    }

    fn check_device(&self, device: u32) -> ExecResult<()> {
        if device == 0 {
            Ok(())
        } else {
            Err(Status::INVALID_DEVICE)
        }
    }

    /// Destroys the context and everything in it, then makes a fresh one.
    fn reset_context(&mut self) -> ExecResult<()> {
        // Library handles hold resources in the context: release them while it lives.
        self.blas_release();
        self.rand_release();
        if let Some(ctx) = self.ctx.take() {
            // SAFETY: our context; the staging buffers are freed while it is current (best
            // effort: a broken context frees them when destroyed); every other object dies
            // with the context and its handle is dropped below.
            unsafe {
                if driver::ctx_set_current(ctx).is_ok() {
                    self.pool.release();
                }
                let _ = driver::ctx_destroy(ctx);
            }
        }
        self.pool.forget();
        self.allocs.clear();
        self.streams.clear();
        self.events.clear();
        self.modules.clear();
        self.loaded.clear();
        self.functions.clear();
        self.function_names.clear();
        self.params_dirty = PARAM_BUF_LEN;
        let ctx = driver::ctx_create(self.shared.device).map_err(to_status)?;
        self.ctx = Some(ctx);
        Ok(())
    }

    fn event(&self, handle: u64) -> ExecResult<(CUevent, u32)> {
        self.events.get(handle).copied()
    }

    fn function_attrs(raw: CUfunction) -> FuncAttrs {
        use CUfunction_attribute::*;
        let get = |a| {
            // SAFETY: `raw` is a live function of the current context.
            unsafe { driver::func_get_attribute(raw, a) }.unwrap_or(0)
        };
        FuncAttrs {
            shared_size_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) as u64,
            const_size_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) as u64,
            local_size_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) as u64,
            max_threads_per_block: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            num_regs: get(CU_FUNC_ATTRIBUTE_NUM_REGS),
            ptx_version: get(CU_FUNC_ATTRIBUTE_PTX_VERSION),
            binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION),
            cache_mode_ca: get(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA),
            max_dynamic_shared_size_bytes: get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
            preferred_shmem_carveout: get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT),
            reserved: [0; 3],
        }
    }

    /// The parameter layout the driver reports, or `None`.
    fn param_layout(&self, raw: CUfunction) -> Option<(Vec<ParamInfo>, u32)> {
        if !self.shared.driver.param_info {
            return None;
        }
        let mut params = Vec::new();
        let mut total = 0u32;
        for index in 0..=MAX_PARAM_LEN as usize {
            // SAFETY: `raw` is a live function of the current context; the entry point
            // exists (`param_info`).
            match unsafe { driver::func_param_info(raw, index) } {
                Ok((offset, size)) => {
                    let offset = u32::try_from(offset).ok()?;
                    let size = u32::try_from(size).ok()?;
                    let end = offset.checked_add(size)?;
                    if end > MAX_PARAM_LEN {
                        return None;
                    }
                    total = total.max(end);
                    params.push(ParamInfo { offset, size });
                }
                Err(CUresult::CUDA_ERROR_INVALID_VALUE) => return Some((params, total)),
                Err(e) => {
                    debug!("cuFuncGetParamInfo: {}", driver::error_name(e));
                    return None;
                }
            }
        }
        None
    }

    /// Grid and block within the device's limits, as the runtime checks before launching
    /// (`cudaErrorInvalidConfiguration`; the driver would say `CUDA_ERROR_INVALID_VALUE`).
    fn check_launch_config(&self, req: &LaunchReq) -> ExecResult<()> {
        use vcuda_protocol::attr::*;
        let a = |n| self.shared.info.attr(n).unwrap_or(0).max(0) as u64;
        let block_max = [a(MAX_BLOCK_DIM_X), a(MAX_BLOCK_DIM_Y), a(MAX_BLOCK_DIM_Z)];
        let grid_max = [a(MAX_GRID_DIM_X), a(MAX_GRID_DIM_Y), a(MAX_GRID_DIM_Z)];
        let threads: u64 = req.block.iter().map(|&b| u64::from(b)).product();
        let over = |dims: &[u32; 3], max: &[u64; 3]| {
            dims.iter()
                .zip(max)
                .any(|(&d, &m)| d == 0 || u64::from(d) > m)
        };
        if over(&req.block, &block_max)
            || over(&req.grid, &grid_max)
            || threads > a(MAX_THREADS_PER_BLOCK)
        {
            return Err(Status::INVALID_CONFIGURATION);
        }
        Ok(())
    }

    fn drop_module_functions(&mut self, module: u64) {
        self.functions.retain(|_, f| f.module != module);
        self.function_names.retain(|(m, _), _| *m != module);
    }
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

/// Settable `cudaFuncAttribute`s (8..=15) as the driver's `CUfunction_attribute` (same
/// numbers).
fn cu_func_attr(attr: u32) -> ExecResult<CUfunction_attribute> {
    use CUfunction_attribute::*;
    Ok(match attr {
        8 => CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        9 => CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        10 => CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
        11 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        12 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        13 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
        14 => CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
        15 => CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        _ => return Err(Status::INVALID_VALUE),
    })
}

impl Executor for CudaExecutor {
    fn device_count(&self) -> u32 {
        1
    }

    fn driver_version(&self) -> u32 {
        self.shared.driver.version as u32
    }

    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo> {
        self.check_device(device)?;
        Ok(self.shared.info)
    }

    fn device_synchronize(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.bind()?;
        self.may_print = true;
        driver::ctx_synchronize().map_err(to_status)
    }

    fn device_reset(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.may_print = true;
        self.reset_context()
    }

    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)> {
        self.check_device(device)?;
        self.bind()?;
        driver::mem_get_info().map_err(to_status)
    }

    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()> {
        self.check_device(device)?;
        let limit = cu_limit(limit)?;
        let value = usize::try_from(value).map_err(|_| Status::INVALID_VALUE)?;
        self.bind()?;
        driver::ctx_set_limit(limit, value).map_err(to_status)
    }

    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        let limit = cu_limit(limit)?;
        self.bind()?;
        driver::ctx_get_limit(limit)
            .map(|v| v as u64)
            .map_err(to_status)
    }

    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        if size == 0 {
            return Ok(0);
        }
        let n = usize::try_from(size).map_err(|_| Status::MEMORY_ALLOCATION)?;
        self.bind()?;
        let ptr = driver::mem_alloc(n).map_err(to_status)?;
        if let Err(e) = self.allocs.insert(ptr, size, Owner::User) {
            // The driver never hands out overlapping ranges; if it did, refuse the memory.
            // SAFETY: allocated just above in the current context, not given out.
            let _ = unsafe { driver::mem_free(ptr) };
            return Err(e);
        }
        Ok(ptr)
    }

    fn free(&mut self, ptr: u64) -> ExecResult<()> {
        if ptr == 0 {
            return Ok(());
        }
        if !self.allocs.is_user_base(ptr) {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // cudaFree waits for the device first, reporting earlier failures.
        self.may_print = true;
        driver::ctx_synchronize().map_err(to_status)?;
        // SAFETY: `ptr` is a live user allocation of this session's context (checked
        // above); it leaves the table right after, so it is freed once.
        unsafe { driver::mem_free(ptr) }.map_err(to_status)?;
        self.allocs.remove_user(ptr).map(drop)
    }

    fn memcpy_htod(&mut self, req: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        self.may_print = true;
        self.htod(req, src)
    }

    fn memcpy_dtoh(&mut self, req: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        self.may_print = true;
        self.dtoh(req, dst)
    }

    fn memcpy_dtod(&mut self, req: &MemcpyDtoDReq) -> ExecResult<()> {
        self.dtod(req)
    }

    fn memset(&mut self, req: &MemsetReq) -> ExecResult<()> {
        self.memset_impl(req)
    }

    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !STREAM_NON_BLOCKING != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        let s = driver::stream_create(flags, priority).map_err(to_status)?;
        self.streams.insert(s).inspect_err(|_| {
            // SAFETY: created just above, not given out.
            let _ = unsafe { driver::stream_destroy(s) };
        })
    }

    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()> {
        let s = self.streams.remove(stream)?;
        self.bind()?;
        // SAFETY: a live stream of our context, removed from the table: destroyed once.
        unsafe { driver::stream_destroy(s) }.map_err(to_status)
    }

    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()> {
        let s = self.cu_stream(stream)?;
        self.bind()?;
        self.may_print = true;
        // SAFETY: a live stream of our context (or the null stream).
        unsafe { driver::stream_synchronize(s) }.map_err(to_status)
    }

    fn stream_query(&mut self, stream: u64) -> ExecResult<()> {
        let s = self.cu_stream(stream)?;
        self.bind()?;
        // SAFETY: as above.
        unsafe { driver::stream_query(s) }.map_err(to_status)
    }

    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()> {
        let s = self.cu_stream(stream)?;
        let (e, _) = self.event(event)?;
        if flags & !EVENT_EXTERNAL != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // SAFETY: live stream and event of our context.
        unsafe { driver::stream_wait_event(s, e, flags) }.map_err(to_status)
    }

    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        let e = driver::event_create(flags & !EVENT_INTERPROCESS).map_err(to_status)?;
        self.events.insert((e, flags)).inspect_err(|_| {
            // SAFETY: created just above, not given out.
            let _ = unsafe { driver::event_destroy(e) };
        })
    }

    fn event_destroy(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.events.remove(event)?;
        self.bind()?;
        // SAFETY: a live event of our context, removed from the table: destroyed once.
        unsafe { driver::event_destroy(e) }.map_err(to_status)
    }

    fn event_record(&mut self, event: u64, stream: u64, flags: u32) -> ExecResult<()> {
        let (e, _) = self.event(event)?;
        let s = self.cu_stream(stream)?;
        if flags & !EVENT_EXTERNAL != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // SAFETY: live event and stream of our context.
        unsafe { driver::event_record(e, s, flags) }.map_err(to_status)
    }

    fn event_synchronize(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.event(event)?;
        self.bind()?;
        self.may_print = true;
        // SAFETY: a live event of our context.
        unsafe { driver::event_synchronize(e) }.map_err(to_status)
    }

    fn event_query(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.event(event)?;
        self.bind()?;
        // SAFETY: a live event of our context.
        unsafe { driver::event_query(e) }.map_err(to_status)
    }

    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp> {
        let (s, _) = self.event(start)?;
        let (e, _) = self.event(end)?;
        self.bind()?;
        // SAFETY: live events of our context.
        let ms = unsafe { driver::event_elapsed(s, e) }.map_err(to_status)?;
        Ok(EventElapsedResp { ms, reserved: 0 })
    }

    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        let hash = image.hash;
        if let Some(m) = self.loaded.get_mut(&hash) {
            let h = self.modules.insert(hash)?;
            m.refs += 1;
            return Ok(h);
        }
        let known = self
            .shared
            .checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&hash)
            .copied();
        let info = match known {
            Some(i) => i,
            None => {
                let i = image::check(&image.bytes).map_err(|e| {
                    warn!("module image refused: {e}");
                    Status::INVALID_KERNEL_IMAGE
                })?;
                self.shared
                    .checked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(hash, i);
                i
            }
        };
        // The loader wants the image 8-byte aligned; copy it if the allocator did not.
        let aligned: Vec<u64>;
        let ptr = if image.bytes.as_ptr().align_offset(8) == 0 {
            image.bytes.as_ptr()
        } else {
            let mut v = vec![0u64; image.bytes.len().div_ceil(8)];
            // SAFETY: `v` holds at least `len` bytes; the ranges are distinct allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    image.bytes.as_ptr(),
                    v.as_mut_ptr().cast::<u8>(),
                    image.bytes.len(),
                );
            }
            aligned = v;
            aligned.as_ptr().cast::<u8>()
        };
        self.bind()?;
        self.may_print = true;
        // SAFETY: the image passed `image::check` (its declared sizes lie inside the bytes);
        // it is 8-byte aligned and outlives the call (`image` or `aligned` is held).
        let raw = unsafe { driver::module_load_data(ptr) }.map_err(to_status)?;
        let h = match self.modules.insert(hash) {
            Ok(h) => h,
            Err(e) => {
                // SAFETY: loaded just above, not given out.
                let _ = unsafe { driver::module_unload(raw) };
                return Err(e);
            }
        };
        self.loaded.insert(hash, LoadedModule { raw, refs: 1 });
        self.uses_printf |= info.uses_printf;
        Ok(h)
    }

    fn module_unload(&mut self, module: u64) -> ExecResult<()> {
        let hash = self.modules.remove(module)?;
        self.drop_module_functions(module);
        let Some(m) = self.loaded.get_mut(&hash) else {
            return Ok(());
        };
        m.refs -= 1;
        if m.refs > 0 {
            return Ok(());
        }
        let raw = m.raw;
        self.loaded.remove(&hash);
        self.allocs.remove_module(&hash);
        self.bind()?;
        self.may_print = true;
        // SAFETY: the last handle to this module is gone and its functions and variables
        // left the tables above, so nothing uses it afterwards.
        unsafe { driver::module_unload(raw) }.map_err(to_status)
    }

    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo> {
        let hash = *self.modules.get(module)?;
        if let Some(&h) = self.function_names.get(&(module, name.to_owned())) {
            return Ok(self.functions.get(h)?.info.clone());
        }
        let m = self.loaded.get(&hash).ok_or(Status::INVALID_HANDLE)?.raw;
        let cname = CString::new(name).map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        self.bind()?;
        // SAFETY: a live module of our context.
        let raw = unsafe { driver::module_get_function(m, &cname) }.map_err(|e| match e {
            CUresult::CUDA_ERROR_NOT_FOUND => Status::INVALID_DEVICE_FUNCTION,
            e => to_status(e),
        })?;
        let attrs = Self::function_attrs(raw);
        let layout = self.param_layout(raw);
        let mut info = FunctionInfo {
            handle: 0,
            attrs,
            param_size: layout.as_ref().map_or(0, |l| l.1),
            params: layout.map(|l| l.0),
        };
        let h = self.functions.insert(Function {
            raw,
            module,
            info: info.clone(),
        })?;
        info.handle = h;
        if let Ok(f) = self.functions.get_mut(h) {
            f.info.handle = h;
        }
        self.function_names.insert((module, name.to_owned()), h);
        Ok(info)
    }

    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        let hash = *self.modules.get(module)?;
        let m = self.loaded.get(&hash).ok_or(Status::INVALID_HANDLE)?.raw;
        let cname = CString::new(name).map_err(|_| Status::INVALID_SYMBOL)?;
        self.bind()?;
        // SAFETY: a live module of our context.
        let (ptr, size) = unsafe { driver::module_get_global(m, &cname) }.map_err(|e| match e {
            CUresult::CUDA_ERROR_NOT_FOUND => Status::INVALID_SYMBOL,
            e => to_status(e),
        })?;
        if size > 0 {
            self.allocs.insert(ptr, size as u64, Owner::Module(hash))?;
        }
        Ok((ptr, size as u64))
    }

    fn launch(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        let stream = self.cu_stream(req.stream)?;
        self.check_launch_config(req)?;
        if params.len() > PARAM_BUF_LEN || params.len() != req.param_len as usize {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        self.may_print = true;
        let f = self
            .functions
            .get(req.function)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        let buf = &mut self.params.0;
        buf[..params.len()].copy_from_slice(params);
        let base = buf.as_mut_ptr();
        let mut size = params.len();
        let mut extra: [*mut c_void; 5] = [
            driver::LAUNCH_PARAM_BUFFER_POINTER,
            base.cast(),
            driver::LAUNCH_PARAM_BUFFER_SIZE,
            (&raw mut size).cast(),
            driver::LAUNCH_PARAM_END,
        ];
        let args = &mut self.arg_ptrs;
        args.clear();
        let (kernel_params, extra_ptr) = match &f.info.params {
            Some(layout) => {
                for p in layout {
                    if p.offset as usize + p.size as usize > params.len() {
                        return Err(Status::INVALID_VALUE);
                    }
                    // In bounds: offset + size <= params.len() <= PARAM_BUF_LEN.
                    args.push(base.wrapping_add(p.offset as usize).cast());
                }
                self.params_dirty = self.params_dirty.max(params.len());
                let kp = if args.is_empty() {
                    std::ptr::null_mut()
                } else {
                    args.as_mut_ptr()
                };
                (kp, std::ptr::null_mut())
            }
            None => {
                // The driver reads as many bytes as the kernel's parameters need; zero
                // whatever an earlier launch left past this one's bytes.
                buf[params.len()..self.params_dirty.max(params.len())].fill(0);
                self.params_dirty = params.len();
                (std::ptr::null_mut(), extra.as_mut_ptr())
            }
        };
        // SAFETY: `f.raw` and `stream` are live in our context, which is current. With a
        // layout, every `args[i]` points inside the parameter buffer with its parameter's
        // bytes in bounds (checked above). Without one, the extra list names the buffer,
        // which is PARAM_BUF_LEN (the largest parameter size CUDA allows) long, so the
        // driver cannot read past it whatever size the kernel wants. Buffer, `args`,
        // `extra` and `size` outlive the call; the driver copies parameters before
        // returning.
        unsafe {
            driver::launch_kernel(
                f.raw,
                req.grid,
                req.block,
                req.shared_mem,
                stream,
                kernel_params,
                extra_ptr,
            )
        }
        .map_err(to_status)
    }

    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        let raw = self
            .functions
            .get(function)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?
            .raw;
        let a = cu_func_attr(attr)?;
        self.bind()?;
        // SAFETY: a live function of our context.
        unsafe { driver::func_set_attribute(raw, a, value) }.map_err(to_status)?;
        let attrs = Self::function_attrs(raw);
        if let Ok(f) = self.functions.get_mut(function) {
            f.info.attrs = attrs;
        }
        Ok(())
    }

    fn take_stdout(&mut self) -> Vec<u8> {
        // See "Device printf" in the module documentation.
        let Some(capture) = self.shared.printf else {
            return Vec::new();
        };
        if !std::mem::take(&mut self.may_print) || !self.uses_printf {
            return Vec::new();
        }
        let out = capture.collect();
        if self.shared.sessions.load(Ordering::Relaxed) == 1 {
            out
        } else {
            stderr_dump(&out);
            Vec::new()
        }
    }

    fn blas_create(&mut self, device: u32) -> ExecResult<u64> {
        self.check_device(device)
            .map_err(|_| Status(vcuda_protocol::lib::BLAS_INVALID_VALUE))?;
        self.blas_create_impl()
    }

    fn blas_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.blas_destroy_impl(handle)
    }

    fn blas_call(&mut self, req: &vcuda_protocol::BlasCallReq) -> ExecResult<[u8; 16]> {
        self.blas_call_impl(req)
    }

    fn rand_create(&mut self, rng_type: u32, flags: u32) -> ExecResult<u64> {
        self.rand_create_impl(rng_type, flags & vcuda_protocol::lib::RAND_HOST != 0)
    }

    fn rand_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.rand_destroy_impl(handle)
    }

    fn rand_set(&mut self, req: &vcuda_protocol::RandSetReq) -> ExecResult<()> {
        self.rand_set_impl(req)
    }

    fn rand_generate(
        &mut self,
        req: &vcuda_protocol::RandGenerateReq,
        out: &DataSegs<'_>,
    ) -> ExecResult<u64> {
        self.rand_generate_impl(req, out)
    }
}

#[cfg(test)]
mod tests;
