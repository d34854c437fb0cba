// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Executors: what replays a session's CUDA calls.
//!
//! The session core ([`crate::session`]) decodes requests and calls an [`Executor`], one per
//! session. Two implementations exist: [`cpu::CpuExecutor`], the reference executor that
//! keeps device memory in host memory and interprets kernels' PTX, and the CUDA executor,
//! which replays calls on a real GPU. An [`ExecutorFactory`] makes one executor per session
//! and holds what sessions share (the device, module caches).
//!
//! The calls come in domains, one trait each: [`DeviceOps`] (the device and context),
//! [`MemoryOps`] (device memory, copies, memsets), [`HostMemoryOps`] (shared and mapped host
//! memory), [`ArrayOps`] (arrays and textures), [`StreamOps`] (streams and events),
//! [`ModuleOps`] (modules and launches), [`GraphOps`], [`VmmOps`], [`IpcOps`], [`BlasOps`]
//! and [`RandOps`], and [`StateOps`] saves and loads a session's device state (live
//! migration). [`Executor`] is all of them. Each executor implements each domain in a
//! file of its own (`cpu/ops/<domain>.rs`, `cuda/ops/<domain>.rs`).
//!
//! Every argument an executor receives comes from the guest and is hostile: pointers,
//! handles, sizes and offsets are checked against what the session owns.

use std::fmt;
use std::sync::Arc;

use vcuda_protocol::status::{self, CudaStatus};
use vcuda_protocol::{
    ArrayCreateReq, BlasCallReq, DeviceInfo, EventElapsedResp, ExecutorKind, FuncAttrs, LaunchReq,
    MemcpyArrayReq, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq,
    MipmappedArrayCreateReq, OccupancyClusterReq, OccupancyClusterResp, ParamInfo, RandGenerateReq,
    RandSetReq, TensorMapEncodeReq, TensorMapResp, TexObjectCreateReq,
};

pub use vcuda_protocol::graph::Node as GraphNode;

use crate::data::DataSegs;
use crate::migrate::precopy::ChunkRead;
use crate::migrate::state::ExecState;
use crate::migrate::{Known, MigrateError};

pub mod array;
pub mod cpu;
pub mod cuda;
#[cfg(test)]
pub(crate) mod testing;
pub mod vmm;

/// A non-success `cudaError_t`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Status(pub CudaStatus);

impl From<vcuda_protocol::region::RegionError> for Status {
    fn from(e: vcuda_protocol::region::RegionError) -> Self {
        Status(e.status())
    }
}

impl Status {
    /// `cudaErrorInvalidValue`.
    pub const INVALID_VALUE: Status = Status(status::INVALID_VALUE);
    /// `cudaErrorMemoryAllocation`.
    pub const MEMORY_ALLOCATION: Status = Status(status::MEMORY_ALLOCATION);
    /// `cudaErrorInvalidDevice`.
    pub const INVALID_DEVICE: Status = Status(status::INVALID_DEVICE);
    /// `cudaErrorInvalidDevicePointer`.
    pub const INVALID_DEVICE_POINTER: Status = Status(status::INVALID_DEVICE_POINTER);
    /// `cudaErrorInvalidResourceHandle`.
    pub const INVALID_HANDLE: Status = Status(status::INVALID_RESOURCE_HANDLE);
    /// `cudaErrorNotReady`.
    pub const NOT_READY: Status = Status(status::NOT_READY);
    /// `cudaErrorNotSupported`.
    pub const NOT_SUPPORTED: Status = Status(status::NOT_SUPPORTED);
    /// `cudaErrorInvalidDeviceFunction`.
    pub const INVALID_DEVICE_FUNCTION: Status = Status(status::INVALID_DEVICE_FUNCTION);
    /// `cudaErrorInvalidConfiguration`.
    pub const INVALID_CONFIGURATION: Status = Status(status::INVALID_CONFIGURATION);
    /// `cudaErrorInvalidSymbol`.
    pub const INVALID_SYMBOL: Status = Status(status::INVALID_SYMBOL);
    /// `cudaErrorInvalidKernelImage`.
    pub const INVALID_KERNEL_IMAGE: Status = Status(status::INVALID_KERNEL_IMAGE);
    /// `cudaErrorNoKernelImageForDevice`.
    pub const NO_KERNEL_IMAGE: Status = Status(status::NO_KERNEL_IMAGE_FOR_DEVICE);
    /// `cudaErrorInvalidPtx`.
    pub const INVALID_PTX: Status = Status(status::INVALID_PTX);
    /// `cudaErrorUnsupportedLimit`.
    pub const UNSUPPORTED_LIMIT: Status = Status(status::UNSUPPORTED_LIMIT);
    /// `cudaErrorInvalidMemcpyDirection`.
    pub const INVALID_PITCH: Status = Status(status::INVALID_PITCH_VALUE);
    /// `cudaErrorIllegalAddress`.
    pub const ILLEGAL_ADDRESS: Status = Status(status::ILLEGAL_ADDRESS);
    /// `cudaErrorLaunchOutOfResources`.
    pub const LAUNCH_OUT_OF_RESOURCES: Status = Status(status::LAUNCH_OUT_OF_RESOURCES);
    /// `cudaErrorUnknown`.
    pub const UNKNOWN: Status = Status(status::UNKNOWN);

    /// The raw code.
    pub fn code(self) -> CudaStatus {
        self.0
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match status::describe(self.0) {
            Some((name, _)) => write!(f, "{name}({})", self.0),
            None => write!(f, "Status({})", self.0),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What executor calls return.
pub type ExecResult<T> = Result<T, Status>;

/// A module image the guest registered (a fat binary), shared between sessions by hash.
#[derive(Debug)]
pub struct ModuleImage {
    /// SHA-256 of `bytes`.
    pub hash: [u8; 32],
    /// The image.
    pub bytes: Vec<u8>,
}

/// What `FunctionGet` returns.
#[derive(Debug, Clone, Default)]
pub struct FunctionInfo {
    /// The function handle.
    pub handle: u64,
    /// Attributes for `cudaFuncGetAttributes`.
    pub attrs: FuncAttrs,
    /// The parameter layout, when the executor knows it.
    pub params: Option<Vec<ParamInfo>>,
    /// Total parameter bytes (0 when unknown).
    pub param_size: u32,
}

/// Stops a session's running work from another thread (its connection closed, its device
/// file was released): see [`DeviceOps::set_cancel`].
pub use vcuda_ptx::Cancel;

/// Most device-printf bytes a session buffers before dropping output (CUDA's default printf
/// FIFO is 1 MiB and also drops what does not fit).
pub const MAX_STDOUT_BUFFER: usize = 1 << 20;

/// Makes executors, one per session.
/// Who a session belongs to. Sessions of one tenant share the executor's caches of parsed
/// and compiled code; sessions of different tenants never do, so one cannot tell from how
/// fast a module loads or a kernel starts what another ran (SECURITY.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tenant(u64);

impl Tenant {
    /// The tenant of a local client: its uid.
    pub fn uid(uid: u32) -> Self {
        Tenant(u64::from(uid))
    }

    /// A tenant of its own, sharing with no other session (a VM, a TCP client, a test).
    pub fn unique() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 32);
        Tenant(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

pub trait ExecutorFactory: Send + Sync {
    /// Which kind this is.
    fn kind(&self) -> ExecutorKind;
    /// A fresh executor for a new session of `tenant`.
    fn new_session(&self, tenant: Tenant) -> ExecResult<Box<dyn Executor>>;

    /// The guest memory regions a vhost-user frontend shared changed: `regions` are their
    /// host mappings `(address, length)` in this process, valid until the next call. An
    /// executor that can make device DMA reach guest RAM directly (the CUDA executor pins
    /// them with `cuMemHostRegister`) does so; the default does nothing. Data segments that
    /// point into these regions then need no staging copy.
    fn guest_memory_changed(&self, _regions: &[(usize, usize)]) {}

    /// Whether kernels can reach this process's pageable memory (HMM or ATS on a GPU).
    fn pageable_access(&self) -> bool {
        false
    }
}

/// One session's view of the device(s): every domain of calls an executor serves. Calls
/// arrive in the order the guest issued them.
///
/// Stream semantics: work on a stream runs in issue order; the legacy default stream
/// (handle [`vcuda_protocol::STREAM_LEGACY`]) waits for, and is waited for by, every
/// blocking stream. An executor may run everything in issue order, which satisfies every
/// ordering CUDA guarantees.
///
/// The calls are split by domain, one trait each ([`DeviceOps`], [`MemoryOps`],
/// [`HostMemoryOps`], [`ArrayOps`], [`StreamOps`], [`ModuleOps`], [`GraphOps`], [`VmmOps`],
/// [`IpcOps`], [`BlasOps`], [`RandOps`], [`StateOps`]), none with default bodies: an executor implements
/// every method of every domain, writing out its "not supported" answers where it has
/// none, so a call added to a domain is a compile error until each executor answers it.
/// Every type that implements all of them is an `Executor`.
pub trait Executor:
    Send
    + DeviceOps
    + MemoryOps
    + HostMemoryOps
    + ArrayOps
    + StreamOps
    + ModuleOps
    + GraphOps
    + VmmOps
    + IpcOps
    + BlasOps
    + RandOps
    + StateOps
{
}

impl<T> Executor for T where
    T: Send
        + DeviceOps
        + MemoryOps
        + HostMemoryOps
        + ArrayOps
        + StreamOps
        + ModuleOps
        + GraphOps
        + VmmOps
        + IpcOps
        + BlasOps
        + RandOps
        + StateOps
        + ?Sized
{
}

/// Saving and loading a session's device state, for live migration ([`crate::migrate`]).
pub trait StateOps {
    /// Everything the session built on the device, device memory's contents included, and
    /// the module images its modules came from. Called only while no call of the session
    /// runs. Fails with [`MigrateError::Unsupported`] when the session holds something
    /// that cannot be saved. Device memory `known` names (the destination holds it from a
    /// pre-copy, [`crate::migrate::precopy`]) is saved as a reference to it.
    fn save_state(
        &mut self,
        known: Option<Known<'_>>,
    ) -> Result<(ExecState, Vec<Arc<ModuleImage>>), MigrateError>;
    /// Re-creates `state` (saved by an executor of the same kind) in this executor, which
    /// has run no call yet: every object under its old handle, every allocation at its old
    /// address. `images` holds the module images by hash. The state is hostile input: on
    /// any inconsistency this fails, and the executor is then to be dropped.
    fn load_state(&mut self, state: ExecState, images: &Images) -> Result<(), MigrateError>;
    /// Links what a loaded session shares with other sessions of its VM (device memory
    /// opened through IPC handles), once every session of the VM is loaded. Fails if what
    /// it names is not there; the executor is then to be dropped.
    fn link_state(&mut self) -> Result<(), MigrateError>;
    /// The chunk of device memory after `after` (`(address, index)`; `None`: the first)
    /// of those [`StateOps::save_state`] saves, for a migration's pre-copy
    /// ([`crate::migrate::precopy`]): its checksum, and the chunk packed as the state
    /// packs it unless `known` says the destination holds it. Called between calls while
    /// the session runs. `None` at the end, and from an executor that saves no state.
    fn precopy_block(&mut self, after: Option<(u64, u32)>, known: Known<'_>) -> Option<ChunkRead>;
}

/// Module images by hash (what [`StateOps::load_state`] loads modules from).
pub type Images = std::collections::HashMap<[u8; 32], Arc<ModuleImage>>;

/// The device and the session's context on it: properties, synchronization, reset,
/// limits, cancellation and device-side `printf` output.
pub trait DeviceOps {
    /// The session's cancellation token: once it is cancelled (the session ended while a
    /// call runs), running and later launches and copies stop as soon as they can. An
    /// executor that ends work otherwise may ignore it (the CUDA executor ends work by
    /// destroying its context).
    fn set_cancel(&mut self, cancel: Cancel);
    /// The address range `[base, base + len)` the guest reserved for device allocations
    /// (see `HelloReq::va_base`). Executors that choose device addresses themselves place
    /// allocations there; others ignore it. Called once, before any allocation.
    fn set_address_range(&mut self, base: u64, len: u64);
    /// Number of devices.
    fn device_count(&self) -> u32;
    /// What `cudaDriverGetVersion` reports.
    fn driver_version(&self) -> u32;
    /// Device properties and attributes.
    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo>;
    /// Waits for all work on `device`.
    fn device_synchronize(&mut self, device: u32) -> ExecResult<()>;
    /// Frees everything the session owns on `device` and clears sticky errors.
    fn device_reset(&mut self, device: u32) -> ExecResult<()>;
    /// `(free, total)` bytes.
    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)>;
    /// `cudaDeviceSetLimit`.
    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()>;
    /// `cudaDeviceGetLimit`.
    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64>;
    /// Takes the device-side `printf` output produced so far.
    fn take_stdout(&mut self) -> Vec<u8>;
    /// `(charged, limit)`: the device memory charged to the session now and the most it
    /// may be charged (what the metrics show; no driver call).
    fn memory_charged(&self) -> (u64, u64);
}

/// Linear device memory: allocation and the copies and memsets that touch it.
pub trait MemoryOps {
    /// Allocates device memory.
    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64>;
    /// Frees device memory.
    fn free(&mut self, ptr: u64) -> ExecResult<()>;
    /// Host to device; `src` holds `width * height` bytes.
    fn memcpy_htod(&mut self, req: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()>;
    /// Device to host; `dst` receives `width * height` bytes.
    fn memcpy_dtoh(&mut self, req: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()>;
    /// Device to device.
    fn memcpy_dtod(&mut self, req: &MemcpyDtoDReq) -> ExecResult<()>;
    /// Memset.
    fn memset(&mut self, req: &MemsetReq) -> ExecResult<()>;
}

/// Host memory the guest shares with the session ([`crate::shared`]), and its mapping for
/// kernels (page-locked and managed memory).
pub trait HostMemoryOps {
    /// The guest shared `[addr, addr + len)` (memory mapped in this process, see
    /// [`crate::shared`]) with the session; copies to and from it name it. It stays mapped
    /// until [`HostMemoryOps::host_memory_unshared`] or until after the executor is
    /// dropped. An executor may pin it, so that copies move straight between it and the
    /// device.
    fn host_memory_shared(&mut self, addr: usize, len: usize);

    /// The region shared at `addr` is about to be unmapped: the executor stops using it
    /// (unpins it) before returning.
    fn host_memory_unshared(&mut self, addr: usize);

    /// Whether kernels can reach shared host memory at a device address the guest names
    /// ([`HostMemoryOps::host_memory_map`]).
    fn can_map_host_memory(&self) -> bool;

    /// Whether [`HostMemoryOps::host_memory_map`] needs the memory mapped in this process
    /// at the device address itself (`host == addr`): an executor whose device reaches host
    /// memory at this process's addresses (a GPU). The session maps the region's pages
    /// there first ([`crate::shared::SharedRegions::alias`]).
    fn maps_host_memory_in_place(&self) -> bool;

    /// The session shares the guest's own pages (a VM): memory mapped for kernels
    /// ([`HostMemoryOps::host_memory_map`]) goes back to the guest's kernel once unmapped,
    /// for other processes to use. The executor must then never let go of such a mapping
    /// while work that may reach it runs, not even when the session ends: it waits for that
    /// work instead, so the guest keeps the pages pinned meanwhile.
    fn mapped_memory_is_guest_pages(&mut self);

    /// Whether managed memory had better live in device memory, kept coherent by the
    /// library, even where page-locked memory is mapped for kernels: the device reaches
    /// host memory only across a bus (a GPU), so kernels working on managed memory in
    /// place would run at the bus's speed. Tells the library through `Hello`.
    fn prefers_managed_on_device(&self) -> bool;

    /// Exposes `[host, host + len)`, part of a region shared with
    /// [`HostMemoryOps::host_memory_shared`], to kernels at device address `addr`: kernels
    /// and device-side copies then read and write that memory in place. Fails if the range
    /// overlaps device memory, another mapped range, or addresses the executor reserves.
    /// The memory stays mapped in this process until [`HostMemoryOps::host_memory_unmap`]
    /// (the session calls it before unsharing the region).
    fn host_memory_map(&mut self, addr: u64, host: usize, len: usize) -> ExecResult<()>;

    /// Removes the mapped range that starts at device address `addr`; the executor stops
    /// using its memory before returning.
    fn host_memory_unmap(&mut self, addr: u64) -> ExecResult<()>;
}

/// CUDA arrays, mipmapped arrays, and the texture and surface objects over them.
pub trait ArrayOps {
    /// Creates a CUDA array; returns its handle.
    fn array_create(&mut self, req: &ArrayCreateReq) -> ExecResult<u64>;
    /// Destroys an array (after the work that uses it, as `cudaFreeArray` does).
    fn array_destroy(&mut self, array: u64) -> ExecResult<()>;
    /// Copies a box between an array and linear device memory.
    fn memcpy_array(&mut self, req: &MemcpyArrayReq) -> ExecResult<()>;
    /// Creates a CUDA mipmapped array; returns its handle.
    fn mipmapped_array_create(&mut self, req: &MipmappedArrayCreateReq) -> ExecResult<u64>;
    /// Destroys a mipmapped array and its levels (after the work that uses it, as
    /// `cudaFreeMipmappedArray` does).
    fn mipmapped_array_destroy(&mut self, handle: u64) -> ExecResult<()>;
    /// The array handle of level `level` of a mipmapped array (the same handle each time;
    /// it dies with the mipmapped array).
    fn mipmapped_array_level(&mut self, handle: u64, level: u32) -> ExecResult<u64>;
    /// Creates a texture or surface object; returns the handle kernels take.
    fn tex_object_create(&mut self, req: &TexObjectCreateReq) -> ExecResult<u64>;
    /// Destroys a texture object, or a surface object if `surface`.
    fn tex_object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()>;
}

/// Streams and events.
pub trait StreamOps {
    /// Creates a stream.
    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64>;
    /// Destroys a stream (pending work still completes).
    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()>;
    /// Waits for a stream.
    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()>;
    /// `Ok` when the stream is idle, `NOT_READY` otherwise.
    fn stream_query(&mut self, stream: u64) -> ExecResult<()>;
    /// Makes `stream` wait for `event`'s last record.
    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()>;

    /// Creates an event.
    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64>;
    /// Destroys an event.
    fn event_destroy(&mut self, event: u64) -> ExecResult<()>;
    /// Records an event on a stream.
    fn event_record(&mut self, event: u64, stream: u64, flags: u32) -> ExecResult<()>;
    /// Waits for an event.
    fn event_synchronize(&mut self, event: u64) -> ExecResult<()>;
    /// `Ok` when the event has completed, `NOT_READY` otherwise.
    fn event_query(&mut self, event: u64) -> ExecResult<()>;
    /// Milliseconds between two completed events.
    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp>;
}

/// Modules, their kernels and variables, and launches.
pub trait ModuleOps {
    /// Loads a module image; returns a module handle.
    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64>;
    /// Unloads a module.
    fn module_unload(&mut self, module: u64) -> ExecResult<()>;
    /// Looks a kernel up by mangled name.
    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo>;
    /// Looks a module variable up by mangled name: `(device address, size)`.
    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)>;
    /// How many kernels (`.entry` functions) a module has, and the mangled name of the one
    /// at `index` in a fixed order (`None` past the end).
    fn module_function(&mut self, module: u64, index: u32) -> ExecResult<(u32, Option<String>)>;
    /// Moves module variable `name` (`size` bytes) to `addr`, memory mapped for kernels
    /// with [`HostMemoryOps::host_memory_map`]: copies its current contents there, and
    /// kernels, [`ModuleOps::symbol_get`] and copies use it from then on (`__managed__`
    /// variables).
    fn symbol_bind(&mut self, module: u64, name: &str, addr: u64, size: u64) -> ExecResult<()>;
    /// Launches a kernel.
    fn launch(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()>;
    /// Launches a kernel cooperatively: every block resident at once, so blocks may wait for
    /// each other (cooperative groups' grid barrier); a grid larger than the device can hold
    /// at once fails with `cudaErrorCooperativeLaunchTooLarge`.
    fn launch_cooperative(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()>;
    /// Launches a kernel in thread-block clusters of `cluster` blocks (sm_90): a cluster's
    /// blocks run at once and share their shared memory; a shape the grid does not divide
    /// into, or one the device cannot run, fails with `cudaErrorInvalidClusterSize`.
    fn launch_cluster(
        &mut self,
        req: &LaunchReq,
        cluster: [u32; 3],
        params: &[u8],
    ) -> ExecResult<()>;
    /// `cudaFuncSetAttribute`.
    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()>;
    /// `cudaOccupancyMaxActiveClusters` or `cudaOccupancyMaxPotentialClusterSize` of a
    /// launch configuration: a shape other than the kernel's own, none at all where the
    /// kernel has none, or one larger than the device runs fails with
    /// `cudaErrorInvalidClusterSize`.
    fn occupancy_cluster(&mut self, req: &OccupancyClusterReq) -> ExecResult<OccupancyClusterResp>;
    /// `cuTensorMapEncodeTiled`: a tensor map in the layout this executor's kernels read.
    fn tensor_map_encode(&mut self, req: &TensorMapEncodeReq) -> ExecResult<TensorMapResp>;
    /// `cuTensorMapReplaceAddress` on a map [`ModuleOps::tensor_map_encode`] made.
    fn tensor_map_replace_address(
        &mut self,
        map: [u64; 16],
        address: u64,
    ) -> ExecResult<TensorMapResp>;
}

/// Graphs the device runs whole (the session keeps every graph; see [`crate::graphs`]).
pub trait GraphOps {
    /// Makes `nodes` (in a topological order, see [`vcuda_protocol::graph`]) one graph the
    /// device runs whole, if this executor can: `Ok(None)` where it cannot, and the session
    /// then replays the nodes one by one through the calls they stand for. Nothing the
    /// nodes name is trusted: a node that names what the session does not own fails here
    /// (or the graph is left to the replay, which fails it at launch).
    fn graph_instantiate(&mut self, nodes: &[GraphNode]) -> ExecResult<Option<u64>>;
    /// Launches a graph [`GraphOps::graph_instantiate`] made, on `stream`.
    fn graph_launch(&mut self, graph: u64, stream: u64) -> ExecResult<()>;
    /// Destroys a graph [`GraphOps::graph_instantiate`] made (launches already made still
    /// run).
    fn graph_destroy(&mut self, graph: u64) -> ExecResult<()>;
}

/// The virtual memory management API (`cuMemCreate` and friends; the rules are
/// [`vmm`]'s).
pub trait VmmOps {
    /// `cuMemCreate`: a physical allocation of `size` bytes on `device`; its handle.
    fn vmm_create(&mut self, device: u32, size: u64) -> ExecResult<u64>;
    /// `cuMemRelease`.
    fn vmm_release(&mut self, handle: u64) -> ExecResult<()>;
    /// `cuMemAddressReserve`: a range of device address space.
    fn vmm_reserve(&mut self, size: u64, alignment: u64, addr: u64) -> ExecResult<u64>;
    /// `cuMemAddressFree`.
    fn vmm_free(&mut self, ptr: u64, size: u64) -> ExecResult<()>;
    /// `cuMemMap`.
    fn vmm_map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<()>;
    /// `cuMemUnmap`.
    fn vmm_unmap(&mut self, ptr: u64, size: u64) -> ExecResult<()>;
    /// `cuMemSetAccess` for `device`.
    fn vmm_set_access(&mut self, ptr: u64, size: u64, device: u32, flags: u32) -> ExecResult<()>;
}

/// Interprocess handles: memory and events one session exports and another opens.
pub trait IpcOps {
    /// An interprocess handle for the allocation holding `ptr` (`cudaIpcGetMemHandle`).
    fn ipc_get_mem_handle(&mut self, ptr: u64) -> ExecResult<[u8; 64]>;
    /// Maps the allocation another session exported as `handle` into this session
    /// (`cudaIpcOpenMemHandle`): its address and length. The same handle opened again
    /// returns the same address and counts one more open.
    fn ipc_open_mem_handle(&mut self, handle: &[u8; 64], flags: u32) -> ExecResult<(u64, u64)>;
    /// Closes one open of the imported allocation at `ptr` (`cudaIpcCloseMemHandle`).
    fn ipc_close_mem_handle(&mut self, ptr: u64) -> ExecResult<()>;
    /// An interprocess handle for `event`, created with `cudaEventInterprocess`
    /// (`cudaIpcGetEventHandle`).
    fn ipc_get_event_handle(&mut self, event: u64) -> ExecResult<[u8; 64]>;
    /// An event of this session standing for the event another session exported as
    /// `handle` (`cudaIpcOpenEventHandle`).
    fn ipc_open_event_handle(&mut self, handle: &[u8; 64]) -> ExecResult<u64>;
}

/// cuBLAS (`vcuda_protocol::lib`). These return library statuses (`cublasStatus_t`) as
/// [`Status`] values, and `ILLEGAL_ADDRESS` for a device memory fault; an executor without
/// the library answers `lib::BLAS_NOT_SUPPORTED` to `blas_create` and `blas_call` and
/// `lib::BLAS_NOT_INITIALIZED` to `blas_destroy`.
pub trait BlasOps {
    /// Creates a cuBLAS handle on `device`.
    fn blas_create(&mut self, device: u32) -> ExecResult<u64>;
    /// Destroys a cuBLAS handle.
    fn blas_destroy(&mut self, handle: u64) -> ExecResult<()>;
    /// Runs one cuBLAS operation on the handle's stream; returns the scalar result of a
    /// host-pointer-mode reduction (zero otherwise).
    fn blas_call(&mut self, req: &BlasCallReq) -> ExecResult<[u8; 16]>;
}

/// cuRAND (`vcuda_protocol::lib`). These return library statuses (`curandStatus_t`) as
/// [`Status`] values, and `ILLEGAL_ADDRESS` for a device memory fault; an executor without
/// the library answers `lib::RAND_INITIALIZATION_FAILED` to `rand_create` and
/// `lib::RAND_NOT_INITIALIZED` to the rest.
pub trait RandOps {
    /// Creates a cuRAND generator (`curandRngType_t`; `lib::RAND_HOST` for a host one).
    fn rand_create(&mut self, rng_type: u32, flags: u32) -> ExecResult<u64>;
    /// Destroys a cuRAND generator.
    fn rand_destroy(&mut self, handle: u64) -> ExecResult<()>;
    /// Sets a generator's seed, offset, ordering or dimensions.
    fn rand_set(&mut self, req: &RandSetReq) -> ExecResult<()>;
    /// Generates `req.n` numbers into device memory, or into `out` (`n` times the element
    /// size, with `lib::RAND_TO_HOST`); returns the bytes written to `out`.
    fn rand_generate(&mut self, req: &RandGenerateReq, out: &DataSegs<'_>) -> ExecResult<u64>;
}

/// A factory made on first use: a worker process starts its executor (and the driver) only
/// for a client that completed its handshake and `Hello`, not for every connection.
pub struct LazyFactory {
    kind: ExecutorKind,
    make: Box<dyn Fn() -> Result<Arc<dyn ExecutorFactory>, String> + Send + Sync>,
    made: std::sync::OnceLock<Option<Arc<dyn ExecutorFactory>>>,
}

impl fmt::Debug for LazyFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyFactory")
            .field("kind", &self.kind)
            .field("made", &self.made.get().map(Option::is_some))
            .finish()
    }
}

impl LazyFactory {
    /// A factory of `kind` that `make` makes when first needed.
    pub fn new(
        kind: ExecutorKind,
        make: impl Fn() -> Result<Arc<dyn ExecutorFactory>, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            make: Box::new(make),
            made: std::sync::OnceLock::new(),
        }
    }

    fn get(&self) -> Option<&Arc<dyn ExecutorFactory>> {
        self.made
            .get_or_init(|| {
                (self.make)()
                    .inspect_err(|e| log::error!("the executor did not start: {e}"))
                    .ok()
            })
            .as_ref()
    }
}

impl ExecutorFactory for LazyFactory {
    fn kind(&self) -> ExecutorKind {
        self.kind
    }

    fn new_session(&self, tenant: Tenant) -> ExecResult<Box<dyn Executor>> {
        self.get()
            .ok_or(Status(status::DEVICES_UNAVAILABLE))?
            .new_session(tenant)
    }

    fn guest_memory_changed(&self, regions: &[(usize, usize)]) {
        if let Some(f) = self.get() {
            f.guest_memory_changed(regions);
        }
    }

    fn pageable_access(&self) -> bool {
        self.made
            .get()
            .and_then(Option::as_ref)
            .is_some_and(|f| f.pageable_access())
    }
}

#[cfg(test)]
mod lazy_tests {
    use super::*;

    #[test]
    fn a_lazy_factory_is_made_once_on_the_first_session() {
        let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let m = made.clone();
        let f = LazyFactory::new(ExecutorKind::Cpu, move || {
            m.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Arc::new(cpu::CpuFactory::new(cpu::CpuConfig {
                memory: 1 << 20,
                session_limit: 1 << 20,
                ..cpu::CpuConfig::default()
            })) as Arc<dyn ExecutorFactory>)
        });
        assert_eq!(f.kind(), ExecutorKind::Cpu);
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 0);
        let _a = f.new_session(Tenant::unique()).unwrap();
        let _b = f.new_session(Tenant::unique()).unwrap();
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1);
        let failing = LazyFactory::new(ExecutorKind::Cuda, || Err("no GPU".into()));
        assert_eq!(
            failing.new_session(Tenant::unique()).map(drop),
            Err(Status(status::DEVICES_UNAVAILABLE))
        );
    }
}
