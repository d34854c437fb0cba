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
mod ops;
mod rand;
mod texture;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use vcuda_protocol::{DeviceInfo, ExecutorKind, STREAM_LEGACY, attr};

pub use self::memory::{AllocKind, DeviceHeap, IpcEvents, MemoryBudget};
use self::module::Modules;

use super::{ExecResult, Executor, ExecutorFactory, Status, Tenant};

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

    fn new_session(&self, tenant: Tenant) -> ExecResult<Box<dyn Executor>> {
        let threads = self.threads;
        Ok(Box::new(CpuExecutor {
            heap: DeviceHeap::new(self.budget.clone(), self.config.session_limit),
            streams: HashMap::new(),
            events: HashMap::new(),
            ipc_events: IpcEvents::default(),
            modules: Modules::new(
                self.ptx_cache.clone(),
                tenant,
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
        // Thread-block clusters run with their blocks at once (`vcuda_ptx::MAX_CLUSTER_SIZE`).
        set(CLUSTER_LAUNCH, 1);
        set(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 0);
        set(NUMA_CONFIG, 0);
        set(NUMA_ID, -1);
        set(HOST_NUMA_ID, -1);
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_events_are_bounded_per_session() {
        let f = CpuFactory::new(CpuConfig::default());
        let mut e = f.new_session(Tenant::unique()).unwrap();
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
