// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU reference executor: device memory in host memory, kernels interpreted from PTX.
//!
//! Everything a session issues runs in issue order on the session's thread. That order
//! satisfies every ordering CUDA guarantees (stream order, the legacy default stream's
//! implicit synchronization, events), so streams need no threads of their own; a kernel's
//! blocks still run in parallel on the host's cores. Events are stamped when reached, which,
//! with in-order execution, is when all work before them has completed.

mod blas;
mod malloc;
pub mod memory;
mod module;
mod rand;
mod texture;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use vcuda_protocol::{
    BlasCallReq, DeviceInfo, EventElapsedResp, ExecutorKind, LaunchReq, MemcpyDtoDReq,
    MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq, RandGenerateReq, RandSetReq, STREAM_LEGACY, attr, lib,
};

pub use self::memory::{AllocKind, DeviceHeap, IpcEvents, MemoryBudget};
use self::module::Modules;
use vcuda_protocol::region::{self, Region};

use super::{ExecResult, Executor, ExecutorFactory, FunctionInfo, ModuleImage, Status};
use crate::data::DataSegs;

/// Settings of the CPU executor.
#[derive(Debug, Clone)]
pub struct CpuConfig {
    /// Simulated device memory, shared by all sessions (charged at each allocation's
    /// footprint, see `memory::charge`).
    pub memory: u64,
    /// Most of it one session may hold.
    pub session_limit: u64,
    /// Threads that run a kernel's blocks (0: one per host core).
    pub threads: usize,
    /// Wall time after which a launch fails with `cudaErrorLaunchTimeout` (a GPU watchdog;
    /// none by default, like a GPU without a display).
    pub kernel_timeout: Option<std::time::Duration>,
    /// The memory checker: a kernel's access outside its allocations faults, even in the
    /// padding a GPU would let it read (see `DeviceHeap::padding`), and the fault is logged
    /// with the nearest allocation.
    pub memcheck: bool,
}

impl Default for CpuConfig {
    fn default() -> Self {
        Self {
            memory: 16 << 30,
            session_limit: u64::MAX,
            threads: 0,
            kernel_timeout: None,
            memcheck: false,
        }
    }
}

/// Makes [`CpuExecutor`]s.
#[derive(Debug)]
pub struct CpuFactory {
    config: CpuConfig,
    /// Threads that run a launch's blocks: `config.threads`, or the host's cores, read
    /// once (the standard library reads the cgroup CPU quota on every query).
    threads: usize,
    budget: Arc<MemoryBudget>,
    ptx_cache: Arc<module::PtxCache>,
}

impl CpuFactory {
    /// A factory with `config`.
    pub fn new(config: CpuConfig) -> Self {
        let budget = MemoryBudget::new(config.memory);
        let threads = match config.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        Self {
            config,
            threads,
            budget,
            ptx_cache: Arc::default(),
        }
    }
}

impl ExecutorFactory for CpuFactory {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Cpu
    }

    fn new_session(&self) -> ExecResult<Box<dyn Executor>> {
        let threads = self.threads;
        Ok(Box::new(CpuExecutor {
            heap: DeviceHeap::new(self.budget.clone(), self.config.session_limit),
            streams: HashMap::new(),
            events: HashMap::new(),
            ipc_events: IpcEvents::default(),
            modules: Modules::new(
                self.ptx_cache.clone(),
                threads,
                self.config.kernel_timeout,
                self.config.memcheck,
            ),
            next_handle: 0x5ca1_0000,
            limits: Limits::default(),
            threads,
            blas: blas::Blas::default(),
            rand: rand::Rand::default(),
            textures: texture::Textures::default(),
        }))
    }
}

/// `cudaStreamNonBlocking`.
const STREAM_NON_BLOCKING: u32 = 1;
/// `cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess`.
const EVENT_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaEventDisableTiming`.
const EVENT_DISABLE_TIMING: u32 = 0x2;
/// `cudaEventInterprocess`.
const EVENT_INTERPROCESS: u32 = 0x4;

#[derive(Debug)]
struct Stream {
    _flags: u32,
    _priority: i32,
}

#[derive(Debug)]
struct Event {
    flags: u32,
    recorded: Option<Instant>,
}

/// `cudaLimit` values.
#[derive(Debug)]
struct Limits {
    stack_size: u64,
    printf_fifo: u64,
    malloc_heap: u64,
    sync_depth: u64,
    pending_launches: u64,
    l2_fetch: u64,
    l2_persisting: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            stack_size: 1024,
            printf_fifo: 1 << 20,
            malloc_heap: 8 << 20,
            sync_depth: 2,
            pending_launches: 2048,
            l2_fetch: 64,
            l2_persisting: 0,
        }
    }
}

impl Limits {
    fn slot(&mut self, limit: u32) -> ExecResult<&mut u64> {
        Ok(match limit {
            0 => &mut self.stack_size,
            1 => &mut self.printf_fifo,
            2 => &mut self.malloc_heap,
            3 => &mut self.sync_depth,
            4 => &mut self.pending_launches,
            5 => &mut self.l2_fetch,
            6 => &mut self.l2_persisting,
            _ => return Err(Status::UNSUPPORTED_LIMIT),
        })
    }
}

/// One session on the CPU executor.
#[derive(Debug)]
pub struct CpuExecutor {
    heap: DeviceHeap,
    streams: HashMap<u64, Stream>,
    events: HashMap<u64, Event>,
    /// Events exported through IPC handles.
    ipc_events: IpcEvents,
    modules: Modules,
    next_handle: u64,
    limits: Limits,
    threads: usize,
    blas: blas::Blas,
    rand: rand::Rand,
    textures: texture::Textures,
}

/// Most live streams, and most live events, of one session (a client creating them without
/// end gets `cudaErrorMemoryAllocation`, not the backend's memory).
const MAX_STREAMS_OR_EVENTS: usize = 1 << 16;

/// Name the CPU device reports.
pub const DEVICE_NAME: &str = "vcuda CPU reference device";
/// Compute capability the CPU device reports (the PTX it runs targets sm_90).
pub const COMPUTE_CAPABILITY: (i32, i32) = (9, 0);
/// What the CPU executor reports as the driver version.
pub const DRIVER_VERSION: u32 = 13000;

impl CpuExecutor {
    /// Makes the device heap of device-side `malloc` (`cudaLimitMallocHeapSize` bytes of
    /// the session's device memory, kept until a reset) before the first launch of a kernel
    /// of a module that may call it.
    fn ensure_malloc_heap(&mut self, function: u64) -> ExecResult<()> {
        if !self.modules.needs_malloc_heap(function) {
            return Ok(());
        }
        let size = self.limits.malloc_heap.max(16);
        let base = self.heap.alloc(size, memory::AllocKind::Symbol)?;
        self.modules.set_malloc_heap(base, size);
        Ok(())
    }

    fn new_handle(&mut self) -> u64 {
        self.next_handle += 0x10;
        self.next_handle
    }

    fn check_device(&self, device: u32) -> ExecResult<()> {
        if device == 0 {
            Ok(())
        } else {
            Err(Status::INVALID_DEVICE)
        }
    }

    fn check_stream(&self, stream: u64) -> ExecResult<()> {
        if stream == STREAM_LEGACY || self.streams.contains_key(&stream) {
            Ok(())
        } else {
            Err(Status::INVALID_HANDLE)
        }
    }

    fn device_info(&self) -> DeviceInfo {
        let mut info = DeviceInfo::default();
        let name = DEVICE_NAME.as_bytes();
        info.name[..name.len()].copy_from_slice(name);
        info.uuid = *b"vcuda-cpu-device";
        info.total_global_mem = self.heap.info().1;
        let sms = self.threads.clamp(1, 1024) as i32;
        let mut set = |a: u32, v: i32| {
            if let Some(slot) = info.attrs.get_mut(a as usize) {
                *slot = v;
            }
        };
        use attr::*;
        set(MAX_THREADS_PER_BLOCK, 1024);
        set(MAX_BLOCK_DIM_X, 1024);
        set(MAX_BLOCK_DIM_Y, 1024);
        set(MAX_BLOCK_DIM_Z, 64);
        set(MAX_GRID_DIM_X, i32::MAX);
        set(MAX_GRID_DIM_Y, 65535);
        set(MAX_GRID_DIM_Z, 65535);
        set(MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024);
        set(TOTAL_CONSTANT_MEMORY, 64 * 1024);
        set(WARP_SIZE, 32);
        set(MAX_PITCH, i32::MAX);
        set(MAX_REGISTERS_PER_BLOCK, 65536);
        set(CLOCK_RATE, 1_000_000);
        set(TEXTURE_ALIGNMENT, 512);
        set(GPU_OVERLAP, 1);
        set(MULTI_PROCESSOR_COUNT, sms);
        set(KERNEL_EXEC_TIMEOUT, 0);
        set(INTEGRATED, 0);
        set(CAN_MAP_HOST_MEMORY, 0);
        set(COMPUTE_MODE, 0);
        set(SURFACE_ALIGNMENT, 512);
        set(CONCURRENT_KERNELS, 1);
        set(ECC_ENABLED, 0);
        set(PCI_BUS_ID, 0);
        set(PCI_DEVICE_ID, 0);
        set(TCC_DRIVER, 0);
        set(MEMORY_CLOCK_RATE, 1_000_000);
        set(GLOBAL_MEMORY_BUS_WIDTH, 64);
        set(L2_CACHE_SIZE, 4 << 20);
        set(MAX_THREADS_PER_MULTI_PROCESSOR, 2048);
        set(ASYNC_ENGINE_COUNT, 1);
        set(UNIFIED_ADDRESSING, 1);
        set(PCI_DOMAIN_ID, 0);
        set(TEXTURE_PITCH_ALIGNMENT, 32);
        {
            use crate::executor::array::{
                MAX_1D_MIPMAPPED, MAX_1D_WIDTH, MAX_2D, MAX_2D_MIPMAPPED, MAX_3D, MAX_LINEAR_TEXELS,
            };
            let (w1, (w2, h2), e3) = (
                MAX_1D_WIDTH as i32,
                (MAX_2D.0 as i32, MAX_2D.1 as i32),
                MAX_3D as i32,
            );
            for a in [
                MAX_TEXTURE1_DWIDTH,
                MAX_SURFACE1_DWIDTH,
                MAX_TEXTURE2_DWIDTH,
                MAX_SURFACE2_DWIDTH,
            ] {
                set(
                    a,
                    if a == MAX_TEXTURE1_DWIDTH || a == MAX_SURFACE1_DWIDTH {
                        w1
                    } else {
                        w2
                    },
                );
            }
            set(MAX_TEXTURE2_DHEIGHT, h2);
            set(MAX_SURFACE2_DHEIGHT, h2);
            for a in [
                MAX_TEXTURE3_DWIDTH,
                MAX_TEXTURE3_DHEIGHT,
                MAX_TEXTURE3_DDEPTH,
                MAX_SURFACE3_DWIDTH,
                MAX_SURFACE3_DHEIGHT,
                MAX_SURFACE3_DDEPTH,
            ] {
                set(a, e3);
            }
            set(MAX_TEXTURE1_DLINEAR_WIDTH, MAX_LINEAR_TEXELS as i32);
            set(MAX_TEXTURE2_DLINEAR_WIDTH, w2);
            set(MAX_TEXTURE2_DLINEAR_HEIGHT, 65_000);
            set(MAX_TEXTURE2_DLINEAR_PITCH, 2_097_120);
            set(MAX_TEXTURE2_DGATHER_WIDTH, 32768);
            set(MAX_TEXTURE1_DMIPMAPPED_WIDTH, MAX_1D_MIPMAPPED as i32);
            set(MAX_TEXTURE2_DMIPMAPPED_WIDTH, MAX_2D_MIPMAPPED as i32);
            set(MAX_TEXTURE2_DMIPMAPPED_HEIGHT, MAX_2D_MIPMAPPED as i32);
            set(MAX_TEXTURE2_DGATHER_HEIGHT, 32768);
        }
        set(COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY.0);
        set(COMPUTE_CAPABILITY_MINOR, COMPUTE_CAPABILITY.1);
        set(STREAM_PRIORITIES_SUPPORTED, 1);
        set(GLOBAL_L1_CACHE_SUPPORTED, 1);
        set(LOCAL_L1_CACHE_SUPPORTED, 1);
        set(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 * 1024);
        set(MAX_REGISTERS_PER_MULTIPROCESSOR, 65536);
        set(MANAGED_MEMORY, 0);
        set(IS_MULTI_GPU_BOARD, 0);
        set(MULTI_GPU_BOARD_GROUP_ID, 0);
        set(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2);
        set(PAGEABLE_MEMORY_ACCESS, 0);
        set(CONCURRENT_MANAGED_ACCESS, 0);
        set(COMPUTE_PREEMPTION_SUPPORTED, 1);
        set(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0);
        set(COOPERATIVE_LAUNCH, 1);
        set(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024);
        set(CAN_FLUSH_REMOTE_WRITES, 0);
        set(HOST_REGISTER_SUPPORTED, 0);
        // cuMemCreate/cuMemAddressReserve/cuMemMap (whole allocations; vmm.rs).
        set(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1);
        set(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0);
        set(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0);
        // A cooperative grid (SMs x blocks per SM at most) stays within what the executor
        // runs at once.
        let coop = vcuda_ptx::MAX_COOPERATIVE_BLOCKS as i32;
        set(MAX_BLOCKS_PER_MULTIPROCESSOR, (coop / sms).clamp(1, 32));
        set(MAX_PERSISTING_L2_CACHE_SIZE, 0);
        set(MAX_ACCESS_POLICY_WINDOW_SIZE, 0);
        set(RESERVED_SHARED_MEMORY_PER_BLOCK, 1024);
        set(SPARSE_CUDA_ARRAY_SUPPORTED, 0);
        set(HOST_REGISTER_READ_ONLY_SUPPORTED, 0);
        set(MEMORY_POOLS_SUPPORTED, 1);
        set(GPUDIRECT_RDMASUPPORTED, 0);
        set(CLUSTER_LAUNCH, 0);
        set(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 0);
        set(NUMA_CONFIG, 0);
        set(NUMA_ID, -1);
        set(HOST_NUMA_ID, -1);
        info
    }
}

impl Executor for CpuExecutor {
    fn set_cancel(&mut self, cancel: super::Cancel) {
        self.modules.cancel = Some(cancel);
    }

    fn set_address_range(&mut self, base: u64, len: u64) {
        self.heap.set_range(base, len);
    }

    fn device_count(&self) -> u32 {
        1
    }

    fn driver_version(&self) -> u32 {
        DRIVER_VERSION
    }

    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo> {
        self.check_device(device)?;
        Ok(CpuExecutor::device_info(self))
    }

    fn device_synchronize(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)
    }

    fn device_reset(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.modules.clear(&mut self.heap);
        self.modules.drop_malloc_heap();
        self.heap.clear();
        self.streams.clear();
        self.events.clear();
        self.ipc_events.clear();
        self.limits = Limits::default();
        self.blas.clear();
        self.rand.clear();
        self.textures = texture::Textures::default();
        Ok(())
    }

    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)> {
        self.check_device(device)?;
        Ok(self.heap.info())
    }

    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()> {
        self.check_device(device)?;
        *self.limits.slot(limit)? = value;
        Ok(())
    }

    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        Ok(*self.limits.slot(limit)?)
    }

    fn can_map_host_memory(&self) -> bool {
        true
    }

    fn host_memory_map(&mut self, addr: u64, host: usize, len: usize) -> ExecResult<()> {
        // SAFETY: the session passes part of a shared region it keeps mapped until it
        // calls `host_memory_unmap` for this range (before unsharing the region, or when
        // the session ends after the executor is dropped).
        unsafe { self.heap.map_host(addr, host as *mut u8, len as u64) }
    }

    fn host_memory_unmap(&mut self, addr: u64) -> ExecResult<()> {
        self.heap.unmap_host(addr)
    }

    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        self.heap.alloc(size, AllocKind::User)
    }

    fn free(&mut self, ptr: u64) -> ExecResult<()> {
        self.heap.free(ptr, AllocKind::User)
    }

    fn vmm_create(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        self.heap.vmm_create(size)
    }

    fn vmm_release(&mut self, handle: u64) -> ExecResult<()> {
        self.heap.vmm_release(handle)
    }

    fn vmm_reserve(&mut self, size: u64, alignment: u64, _addr: u64) -> ExecResult<u64> {
        self.heap.vmm_reserve(size, alignment)
    }

    fn vmm_free(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.heap.vmm_free(ptr, size)
    }

    fn vmm_map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<()> {
        self.heap.vmm_map(ptr, size, offset, handle)
    }

    fn vmm_unmap(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        // Kernels that use the memory run on this thread, so none does now.
        self.heap.vmm_unmap(ptr, size)
    }

    fn vmm_set_access(&mut self, ptr: u64, size: u64, device: u32, flags: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.heap.vmm_set_access(ptr, size, flags)
    }

    fn ipc_get_mem_handle(&mut self, ptr: u64) -> ExecResult<[u8; 64]> {
        self.heap.ipc_export(ptr)
    }

    fn ipc_open_mem_handle(&mut self, handle: &[u8; 64], flags: u32) -> ExecResult<(u64, u64)> {
        // cudaIpcMemLazyEnablePeerAccess is the only flag (one device: nothing to enable).
        if flags & !1 != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.heap.ipc_import(handle)
    }

    fn ipc_close_mem_handle(&mut self, ptr: u64) -> ExecResult<()> {
        self.heap.ipc_close(ptr)
    }

    fn memcpy_htod(&mut self, r: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let rows = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        for (i, addr) in rows.rows() {
            for (at, n) in self.heap.spans(addr, r.width)? {
                let dst = self.heap.bytes_mut(at, n)?;
                src.read_at(i * r.width + (at - addr), dst)
                    .map_err(|_| Status::INVALID_VALUE)?;
            }
        }
        Ok(())
    }

    fn memcpy_dtoh(&mut self, r: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let rows = Region::new(r.src, r.spitch, r.width, r.height)?;
        for (i, addr) in rows.rows() {
            for (at, n) in self.heap.spans(addr, r.width)? {
                let src = self.heap.bytes(at, n)?;
                dst.write_at(i * r.width + (at - addr), src)
                    .map_err(|_| Status::INVALID_VALUE)?;
            }
        }
        Ok(())
    }

    fn array_create(&mut self, r: &vcuda_protocol::ArrayCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        let h = self.new_handle();
        self.textures.array_create(&mut self.heap, r, h)?;
        Ok(h)
    }

    fn array_destroy(&mut self, array: u64) -> ExecResult<()> {
        self.textures.array_destroy(&mut self.heap, array)
    }

    fn mipmapped_array_create(
        &mut self,
        r: &vcuda_protocol::MipmappedArrayCreateReq,
    ) -> ExecResult<u64> {
        self.check_device(r.array.device)?;
        let h = self.new_handle();
        self.textures.mipmapped_create(&mut self.heap, r, h)?;
        Ok(h)
    }

    fn mipmapped_array_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.textures.mipmapped_destroy(&mut self.heap, handle)
    }

    fn mipmapped_array_level(&mut self, handle: u64, level: u32) -> ExecResult<u64> {
        // (A number spent when the level has its handle already: handles only grow.)
        let fresh = self.new_handle();
        self.textures.mipmapped_level(handle, level, fresh)
    }

    fn memcpy_array(&mut self, r: &vcuda_protocol::MemcpyArrayReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        self.textures.memcpy(&mut self.heap, r)
    }

    fn tex_object_create(&mut self, r: &vcuda_protocol::TexObjectCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        let h = self.new_handle();
        self.textures.object_create(&self.heap, r, h)?;
        Ok(h)
    }

    fn tex_object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()> {
        self.textures.object_destroy(handle, surface)
    }

    fn memcpy_dtod(&mut self, r: &MemcpyDtoDReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let d = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        let s = Region::new(r.src, r.spitch, r.width, r.height)?;
        for ((_, da), (_, sa)) in d.rows().zip(s.rows()) {
            self.heap.copy(da, sa, r.width)?;
        }
        Ok(())
    }

    fn memset(&mut self, r: &MemsetReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let es = u64::from(r.elem_size);
        let row_bytes = region::memset_row_bytes(r.width, es)?;
        let rows = Region::new(r.dst, r.pitch, row_bytes, r.height)?;
        let pattern = r.value.to_le_bytes();
        for (_, addr) in rows.rows() {
            if es > 1 && addr % es != 0 {
                return Err(Status::INVALID_VALUE);
            }
            for (at, n) in self.heap.spans(addr, row_bytes)? {
                let bytes = self.heap.bytes_mut(at, n)?;
                match es {
                    1 => bytes.fill(pattern[0]),
                    _ => bytes
                        .chunks_exact_mut(es as usize)
                        .for_each(|c| c.copy_from_slice(&pattern[..es as usize])),
                }
            }
        }
        Ok(())
    }

    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !STREAM_NON_BLOCKING != 0 {
            return Err(Status::INVALID_VALUE);
        }
        if self.streams.len() >= MAX_STREAMS_OR_EVENTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let h = self.new_handle();
        self.streams.insert(
            h,
            Stream {
                _flags: flags,
                _priority: priority.clamp(-5, 0),
            },
        );
        Ok(h)
    }

    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()> {
        self.streams
            .remove(&stream)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()> {
        self.check_stream(stream)
    }

    fn stream_query(&mut self, stream: u64) -> ExecResult<()> {
        self.check_stream(stream)
    }

    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()> {
        self.check_stream(stream)?;
        if flags & !1 != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(Status::INVALID_VALUE);
        }
        if self.events.len() >= MAX_STREAMS_OR_EVENTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let h = self.new_handle();
        self.events.insert(
            h,
            Event {
                flags,
                recorded: None,
            },
        );
        Ok(h)
    }

    fn event_destroy(&mut self, event: u64) -> ExecResult<()> {
        self.events.remove(&event).ok_or(Status::INVALID_HANDLE)?;
        self.ipc_events.remove(event);
        Ok(())
    }

    fn ipc_get_event_handle(&mut self, event: u64) -> ExecResult<[u8; 64]> {
        let e = self.events.get(&event).ok_or(Status::INVALID_HANDLE)?;
        if e.flags & EVENT_INTERPROCESS == 0 {
            return Err(Status::INVALID_HANDLE);
        }
        self.ipc_events.export(event, &self.heap)
    }

    fn ipc_open_event_handle(&mut self, handle: &[u8; 64]) -> ExecResult<u64> {
        IpcEvents::check_open(handle, &self.heap)?;
        self.event_create(0, EVENT_DISABLE_TIMING | EVENT_INTERPROCESS)
    }

    fn event_record(&mut self, event: u64, stream: u64, _flags: u32) -> ExecResult<()> {
        self.check_stream(stream)?;
        let e = self.events.get_mut(&event).ok_or(Status::INVALID_HANDLE)?;
        e.recorded = Some(Instant::now());
        Ok(())
    }

    fn event_synchronize(&mut self, event: u64) -> ExecResult<()> {
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_query(&mut self, event: u64) -> ExecResult<()> {
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp> {
        let s = self.events.get(&start).ok_or(Status::INVALID_HANDLE)?;
        let e = self.events.get(&end).ok_or(Status::INVALID_HANDLE)?;
        if (s.flags | e.flags) & EVENT_DISABLE_TIMING != 0 {
            return Err(Status::INVALID_HANDLE);
        }
        let (Some(t0), Some(t1)) = (s.recorded, e.recorded) else {
            return Err(Status::INVALID_HANDLE);
        };
        let ms = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        Ok(EventElapsedResp {
            ms: ms as f32,
            reserved: 0,
        })
    }

    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        let h = self.new_handle();
        self.modules.load(h, &image, &mut self.heap)?;
        Ok(h)
    }

    fn module_unload(&mut self, module: u64) -> ExecResult<()> {
        self.modules.unload(module, &mut self.heap)
    }

    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo> {
        let h = self.new_handle();
        self.modules.function(module, name, h)
    }

    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        self.modules.symbol(module, name)
    }

    fn module_function(&mut self, module: u64, index: u32) -> ExecResult<(u32, Option<String>)> {
        self.modules.kernel_name(module, index)
    }

    fn symbol_bind(&mut self, module: u64, name: &str, addr: u64, size: u64) -> ExecResult<()> {
        self.modules.bind(module, name, addr, size, &mut self.heap)
    }

    fn launch(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.check_stream(req.stream)?;
        self.ensure_malloc_heap(req.function)?;
        self.modules
            .launch(req, params, &self.heap, &self.textures.objects, 0)
    }

    fn launch_cooperative(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.check_stream(req.stream)?;
        // Saturating: the dimensions are the guest's (three u32s overflow a u64).
        let blocks = req
            .grid
            .iter()
            .fold(1u64, |a, &g| a.saturating_mul(u64::from(g)));
        if blocks > vcuda_ptx::MAX_COOPERATIVE_BLOCKS {
            return Err(Status(vcuda_protocol::status::COOPERATIVE_LAUNCH_TOO_LARGE));
        }
        self.ensure_malloc_heap(req.function)?;
        // The grid workspace: private to this launch, zeroed, freed after it.
        let size = vcuda_ptx::GRID_WORKSPACE_SIZE;
        let ws = self.heap.alloc(size, memory::AllocKind::Symbol)?;
        let r = match self.heap.bytes_mut(ws, size) {
            Ok(b) => {
                b.fill(0);
                self.modules
                    .launch(req, params, &self.heap, &self.textures.objects, ws)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = self.heap.free(ws, memory::AllocKind::Symbol) {
            log::warn!("freeing a cooperative launch's workspace: {e:?}");
        }
        r
    }

    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        self.modules.set_attribute(function, attr, value)
    }

    fn take_stdout(&mut self) -> Vec<u8> {
        self.modules.take_stdout()
    }

    fn blas_create(&mut self, device: u32) -> ExecResult<u64> {
        self.check_device(device)
            .map_err(|_| Status(lib::BLAS_INVALID_VALUE))?;
        self.blas.create()
    }

    fn blas_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.blas.destroy(handle)
    }

    fn blas_call(&mut self, req: &BlasCallReq) -> ExecResult<[u8; 16]> {
        self.check_stream(req.stream)
            .map_err(|_| Status(lib::BLAS_EXECUTION_FAILED))?;
        self.blas.call(&mut self.heap, req)
    }

    fn rand_create(&mut self, rng_type: u32, flags: u32) -> ExecResult<u64> {
        self.rand.create(rng_type, flags & lib::RAND_HOST != 0)
    }

    fn rand_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.rand.destroy(handle)
    }

    fn rand_set(&mut self, req: &RandSetReq) -> ExecResult<()> {
        self.rand.set(req.handle, req.what, req.value)
    }

    fn rand_generate(&mut self, req: &RandGenerateReq, out: &DataSegs<'_>) -> ExecResult<u64> {
        self.check_stream(req.stream)
            .map_err(|_| Status(lib::RAND_LAUNCH_FAILURE))?;
        let to_host = req.flags & lib::RAND_TO_HOST != 0;
        if self.rand.is_host(req.handle)? != to_host {
            return Err(Status(lib::RAND_TYPE_ERROR));
        }
        let len = lib::dist::elem_size(req.dist)
            .and_then(|e| e.checked_mul(req.n))
            .ok_or(Status(lib::RAND_TYPE_ERROR))?;
        // Check the destination before advancing the generator.
        if !to_host {
            self.heap
                .bytes_mut(req.dst, len)
                .map_err(|_| Status(vcuda_protocol::status::ILLEGAL_ADDRESS))?;
        }
        let bytes = self.rand.generate(req)?;
        if to_host {
            out.write_at(0, &bytes)
                .map_err(|_| Status(lib::RAND_LAUNCH_FAILURE))?;
            Ok(bytes.len() as u64)
        } else {
            let dst = self
                .heap
                .bytes_mut(req.dst, len)
                .map_err(|_| Status(vcuda_protocol::status::ILLEGAL_ADDRESS))?;
            dst.copy_from_slice(&bytes);
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_events_are_bounded_per_session() {
        let f = CpuFactory::new(CpuConfig::default());
        let mut e = f.new_session().unwrap();
        let mut last = 0;
        for _ in 0..MAX_STREAMS_OR_EVENTS {
            last = e.event_create(0, 0).unwrap();
            e.stream_create(0, 0, 0).unwrap();
        }
        assert_eq!(e.event_create(0, 0), Err(Status::MEMORY_ALLOCATION));
        assert_eq!(e.stream_create(0, 0, 0), Err(Status::MEMORY_ALLOCATION));
        e.event_destroy(last).unwrap();
        assert!(
            e.event_create(0, 0).is_ok(),
            "room again once one is destroyed"
        );
    }
}
