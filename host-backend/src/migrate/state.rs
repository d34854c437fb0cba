// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a saved session holds: plain data, encoded with postcard inside the checked
//! container of [`super::format`].
//!
//! Nothing here is trusted when loaded: the types only carry values, and whoever loads them
//! (the session, the executor) checks every address, length and handle as it would a
//! guest's request. Byte buffers are encoded as one run of bytes (`serde_bytes`). Adding a
//! field or a variant changes the encoding: bump
//! [`super::format::VERSION`] and keep reading the old layout where it can be read.

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// Every session of one vhost-user connection (one VM), by the guest's session id.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DeviceState {
    /// The sessions, by id.
    pub sessions: Vec<(u64, SessionState)>,
    /// Reserved, 0: guests choose their session ids, so the device keeps no counter yet.
    pub next_session: u64,
}

/// One session: what the session core keeps, and its executor's state.
#[derive(Debug, Serialize, Deserialize)]
pub struct SessionState {
    /// `vcuda_protocol::ExecutorKind` of the executor that saved it; a session loads only
    /// into one of the same kind.
    pub executor: u32,
    /// Whether the guest said `Hello`.
    pub hello: bool,
    /// The sticky error, if a kernel failed.
    pub sticky: Option<u32>,
    /// Device `printf` output not yet sent.
    #[serde(with = "serde_bytes")]
    pub stdout: Vec<u8>,
    /// Records of detached messages' replies, waiting for the guest's next reply
    /// (`Session::handle_detached`), in order.
    pub held: Vec<HeldRecord>,
    /// The module images the executor's modules were loaded from, each once.
    pub images: Vec<Image>,
    /// The session's graphs.
    pub graphs: GraphsState,
    /// Regions of guest pages the guest shares with the session (page-locked, mapped and
    /// managed memory): each handle with the guest-physical extents `(address, length)` of
    /// its pages, in order. The pages themselves travel as guest RAM.
    pub shared: Vec<(u64, Vec<(u64, u64)>)>,
    /// The counter behind region handles.
    pub shared_next: u64,
    /// Ranges of those regions exposed to kernels.
    pub mapped: Vec<MappedState>,
    /// The executor's state.
    pub exec: ExecState,
}

/// A reply record held for the guest's next reply.
#[derive(Debug, Serialize, Deserialize)]
pub struct HeldRecord {
    /// A `vcuda_protocol::RecordKind` value.
    pub kind: u16,
    /// The request it answers.
    pub seq: u64,
    /// Its status.
    pub status: u32,
    /// Its payload.
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
}

/// A range of a shared region exposed to kernels at a device address (`MapHostMemory`).
#[derive(Debug, Serialize, Deserialize)]
pub struct MappedState {
    /// The device address.
    pub addr: u64,
    /// The region's handle.
    pub region: u64,
    /// Offset of the range in the region.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

impl SessionState {
    /// About how many bytes it encodes to (for one allocation of the right size).
    pub fn size_hint(&self) -> usize {
        let memory: usize = self
            .exec
            .allocs()
            .iter()
            .flat_map(|a| &a.data)
            .map(|d| d.len() + 8)
            .sum();
        let (stdout, globals) = match &self.exec {
            ExecState::Cpu(c) => (c.stdout.len(), 0),
            ExecState::Cuda(c) => (
                0,
                c.modules
                    .iter()
                    .flat_map(|m| &m.globals)
                    .flat_map(|g| &g.data)
                    .map(|d| d.len() + 64)
                    .sum(),
            ),
        };
        let images: usize = self.images.iter().map(|i| i.bytes.len() + 40).sum();
        let graphs: usize = self.graphs.graphs.iter().map(|g| g.desc.len() + 16).sum();
        memory + globals + images + graphs + self.stdout.len() + stdout + (64 << 10)
    }
}

/// A module image.
#[derive(Debug, Serialize, Deserialize)]
pub struct Image {
    /// SHA-256 of `bytes` (checked on load).
    pub hash: [u8; 32],
    /// The fat binary.
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

/// A session's graphs (see [`crate::graphs`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct GraphsState {
    /// The counter behind the next handle.
    pub next: u64,
    /// The graphs.
    pub graphs: Vec<GraphState>,
}

/// One graph, as the guest described it.
#[derive(Debug, Serialize, Deserialize)]
pub struct GraphState {
    /// Its handle.
    pub handle: u64,
    /// Nodes in `desc`.
    pub node_count: u32,
    /// The description in the wire format (`vcuda_protocol::graph`).
    #[serde(with = "serde_bytes")]
    pub desc: Vec<u8>,
}

/// An executor's state, by kind.
// One per session, made once per migration: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
pub enum ExecState {
    /// The CPU executor.
    Cpu(CpuState),
    /// The CUDA executor.
    Cuda(CudaState),
}

impl ExecState {
    /// The device memory allocations it carries.
    pub fn allocs(&self) -> &[AllocState] {
        match self {
            Self::Cpu(c) => &c.allocs,
            Self::Cuda(c) => &c.allocs,
        }
    }

    /// The same, to change.
    pub fn allocs_mut(&mut self) -> &mut Vec<AllocState> {
        match self {
            Self::Cpu(c) => &mut c.allocs,
            Self::Cuda(c) => &mut c.allocs,
        }
    }
}

/// The CUDA executor's state (a session of `--cuda-migratable`, whose device memory lies
/// in one range it reserved).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CudaState {
    /// The range its device memory lies in: base and length.
    pub range: (u64, u64),
    /// Device memory: every `cudaMalloc` allocation ([`ALLOC_USER`]), with its contents.
    pub allocs: Vec<AllocState>,
    /// Streams.
    pub streams: Vec<StreamState>,
    /// Events (their recordings do not move: each is recorded once more as it loads).
    pub events: Vec<EventState>,
    /// Module handles, each with the image it refers to; the first handle of each image
    /// carries the image's variables.
    pub modules: Vec<CudaModuleState>,
    /// Function handles.
    pub functions: Vec<CudaFunctionState>,
    /// The counters behind stream, event, module and function handles, in that order.
    pub next: [u64; 4],
    /// cuBLAS handles, and the counter behind the next.
    pub blas: (Vec<u64>, u64),
    /// cuRAND generators, and the counter behind the next handle.
    pub rand: (Vec<GeneratorState>, u64),
    /// The calls each Mersenne Twister among them took (by handle), which a load repeats.
    pub rand_logs: Vec<(u64, Vec<RandStep>)>,
    /// CUDA arrays, mipmapped arrays, texture and surface objects (the driver's numbers,
    /// which kernels hold: a load makes the objects again in their order and checks it
    /// gets the same numbers).
    pub textures: TexturesState,
    /// The contents of the arrays and of every level of the mipmapped arrays.
    pub texels: Vec<TexelsState>,
    /// The counters behind array and mipmapped array handles.
    pub texture_next: [u64; 2],
    /// For each array and mipmapped array (by handle), the module handle counter when it
    /// was made: a load makes arrays and modules again in the order they were made, since
    /// the driver may take their memory from the same place.
    pub modules_before: Vec<(u64, u64)>,
    /// The virtual memory management API's objects (`top` is `None`: the driver places
    /// reservations, at the addresses asked for).
    pub vmm: VmmState,
}

/// The contents of a CUDA array, or of one level of a mipmapped array (CUDA executor).
#[derive(Debug, Serialize, Deserialize)]
pub struct TexelsState {
    /// The array's handle, or the mipmapped array's.
    pub handle: u64,
    /// The level (0 for an array).
    pub level: u32,
    /// Its texels, rows packed, in [`AllocState::data`]'s blocks.
    pub data: Vec<ByteBuf>,
}

/// A call a Mersenne Twister generator of the CUDA executor took: cuRAND takes no offset
/// for these, so a load makes the generator again and repeats its calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum RandStep {
    /// `curandSetPseudoRandomGeneratorSeed` or `curandSetGeneratorOrdering`: what (a
    /// `set::` value) and the value.
    Set { what: u32, value: u64 },
    /// `times` draws in a row of `n` numbers of distribution `dist` (a `dist::` value) with
    /// these parameters.
    Draw {
        dist: u32,
        n: u64,
        mean: f64,
        stddev: f64,
        times: u64,
    },
}

/// A module handle of the CUDA executor.
#[derive(Debug, Serialize, Deserialize)]
pub struct CudaModuleState {
    /// Handle.
    pub handle: u64,
    /// SHA-256 of its image (one of [`SessionState::images`]).
    pub image: [u8; 32],
    /// The image's variables (`__device__`, `__constant__`), with their contents.
    pub globals: Vec<GlobalState>,
}

/// A module variable.
#[derive(Debug, Serialize, Deserialize)]
pub struct GlobalState {
    /// Its name.
    pub name: String,
    /// Its device address on the source.
    pub addr: u64,
    /// Its length.
    pub len: u64,
    /// The guest asked for its address (`cudaGetSymbolAddress`, the symbol copies): it must
    /// load at the same one.
    pub seen: bool,
    /// Its contents, in [`AllocState::data`]'s blocks.
    pub data: Vec<ByteBuf>,
}

/// A function handle of the CUDA executor.
#[derive(Debug, Serialize, Deserialize)]
pub struct CudaFunctionState {
    /// Handle.
    pub handle: u64,
    /// The module handle it was looked up through.
    pub module: u64,
    /// The kernel's name.
    pub name: String,
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
    pub max_dynamic_shared: i32,
    /// `cudaFuncAttributePreferredSharedMemoryCarveout`.
    pub carveout: i32,
}

/// The CPU executor's state.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CpuState {
    /// The device address range allocations go in: `(start, end)`.
    pub range: (u64, u64),
    /// Where the next allocation goes when nothing was freed below.
    pub next_addr: u64,
    /// Device memory: every allocation, with its contents.
    pub allocs: Vec<AllocState>,
    /// Streams.
    pub streams: Vec<StreamState>,
    /// Events.
    pub events: Vec<EventState>,
    /// Loaded modules.
    pub modules: Vec<ModuleState>,
    /// Function handles.
    pub functions: Vec<FunctionState>,
    /// The device heap of device-side `malloc`, once made.
    pub malloc_heap: Option<MallocHeapState>,
    /// `cudaLimit` values, in `cudaLimit` order.
    pub limits: Vec<u64>,
    /// The counter behind stream, event, module and function handles.
    pub next_handle: u64,
    /// cuBLAS handles, and the counter behind the next.
    pub blas: (Vec<u64>, u64),
    /// cuRAND generators, and the counter behind the next.
    pub rand: (Vec<GeneratorState>, u64),
    /// Device `printf` output of kernels not yet taken.
    #[serde(with = "serde_bytes")]
    pub stdout: Vec<u8>,
    /// CUDA arrays, mipmapped arrays, texture and surface objects.
    pub textures: TexturesState,
    /// The virtual memory management API's objects.
    pub vmm: VmmState,
    /// Device memory shared with other sessions of the VM through IPC handles.
    pub ipc: IpcState,
}

/// A session's device memory shared through interprocess handles with the other sessions
/// of the same VM, which move with it: loading registers its exports again under their
/// tokens (the handles the guest processes hold), and links each import to the exporting
/// session's allocation once every session is loaded.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct IpcState {
    /// Allocations of this session exported (`cudaIpcGetMemHandle`): address and token.
    pub exports: Vec<(u64, [u8; 16])>,
    /// Allocations of other sessions opened here (`cudaIpcOpenMemHandle`).
    pub imports: Vec<ImportState>,
    /// Interprocess events of this session exported (`cudaIpcGetEventHandle`): event handle
    /// and token.
    pub events: Vec<(u64, [u8; 16])>,
}

/// An allocation of another session opened here through its IPC handle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportState {
    /// Where it is opened in this session.
    pub addr: u64,
    /// The token of the exporter's handle.
    pub token: [u8; 16],
    /// Its length.
    pub len: u64,
    /// How many opens are not closed yet.
    pub opens: u32,
}

/// A session's objects of the virtual memory management API (`cuMemCreate`,
/// `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`): loading re-makes them through the
/// same checks as the calls did, under their handles and at their addresses.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct VmmState {
    /// Where the session's allocations' address space ended before its first reservation
    /// (reservations are taken from the top of it); `None` if it never made one.
    pub top: Option<u64>,
    /// Physical allocations.
    pub phys: Vec<PhysState>,
    /// Reservations: base and length.
    pub reserved: Vec<(u64, u64)>,
    /// Mappings.
    pub maps: Vec<MapState>,
    /// The counter behind physical allocations' handles.
    pub next_handle: u64,
}

/// A physical allocation (`cuMemCreate`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhysState {
    /// Its handle.
    pub handle: u64,
    /// Length in bytes.
    pub len: u64,
    /// `cuMemRelease` was called: it goes with its last mapping.
    pub released: bool,
    /// Its contents, in [`AllocState::data`]'s blocks.
    pub data: Vec<ByteBuf>,
}

/// A mapping of a whole physical allocation (`cuMemMap`), and whether kernels and copies
/// may reach it (`cuMemSetAccess`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MapState {
    /// Device address.
    pub addr: u64,
    /// The physical allocation mapped.
    pub handle: u64,
    /// Accessible.
    pub accessible: bool,
}

/// A session's CUDA arrays and texture/surface objects, as the requests that made them (so
/// loading re-makes them through the same checks as the calls did), their handles and the
/// device addresses of their memory (which travels with the other allocations, kind
/// [`ALLOC_ARRAY`]).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct TexturesState {
    /// Arrays (not the levels of mipmapped arrays).
    pub arrays: Vec<ArrayState>,
    /// Mipmapped arrays.
    pub mipmapped: Vec<MipmappedState>,
    /// Texture and surface objects.
    pub objects: Vec<TexObjectState>,
}

/// A CUDA array.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArrayState {
    /// Its handle.
    pub handle: u64,
    /// Where its memory starts.
    pub addr: u64,
    /// The `ArrayCreateReq` that made it, in the wire format.
    #[serde(with = "serde_bytes")]
    pub req: Vec<u8>,
}

/// A mipmapped array.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MipmappedState {
    /// Its handle.
    pub handle: u64,
    /// Where its memory (every level) starts.
    pub addr: u64,
    /// The `MipmappedArrayCreateReq` that made it, in the wire format.
    #[serde(with = "serde_bytes")]
    pub req: Vec<u8>,
    /// The array handles given out for its levels: `(level, handle)`.
    pub levels: Vec<(u32, u64)>,
}

/// A texture or surface object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TexObjectState {
    /// Its handle.
    pub handle: u64,
    /// The `TexObjectCreateReq` that made it, in the wire format.
    #[serde(with = "serde_bytes")]
    pub req: Vec<u8>,
}

/// One allocation of device memory.
#[derive(Debug, Serialize, Deserialize)]
pub struct AllocState {
    /// Device address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// What it is for: [`ALLOC_USER`], [`ALLOC_SYMBOL`] or [`ALLOC_ARRAY`].
    pub kind: u8,
    /// Its contents: one block per `super::CHUNK` bytes, each a tag byte (0: an LZ4 block
    /// follows, 1: the bytes as they are, where LZ4 would not shrink them).
    pub data: Vec<ByteBuf>,
}

/// A `cudaMalloc` allocation.
pub const ALLOC_USER: u8 = 0;
/// A module variable's storage (or the device-side `malloc` heap).
pub const ALLOC_SYMBOL: u8 = 1;
/// A CUDA array's (or mipmapped array's) memory.
pub const ALLOC_ARRAY: u8 = 2;

/// A stream.
#[derive(Debug, Serialize, Deserialize)]
pub struct StreamState {
    /// Handle.
    pub handle: u64,
    /// `cudaStreamNonBlocking` or 0.
    pub flags: u32,
    /// Priority.
    pub priority: i32,
}

/// An event.
#[derive(Debug, Serialize, Deserialize)]
pub struct EventState {
    /// Handle.
    pub handle: u64,
    /// Creation flags.
    pub flags: u32,
    /// Nanoseconds between its last recording and the save, if it was recorded.
    pub recorded_ago_ns: Option<u64>,
}

/// A loaded module.
#[derive(Debug, Serialize, Deserialize)]
pub struct ModuleState {
    /// Handle.
    pub handle: u64,
    /// SHA-256 of the image it was loaded from (one of [`SessionState::images`]).
    pub image: [u8; 32],
    /// Device address of each of its globals (0 for extern ones), by global index.
    pub addrs: Vec<u64>,
    /// Its own storage of each global (differs from `addrs` for variables bound elsewhere).
    pub allocs: Vec<u64>,
}

/// A function handle.
#[derive(Debug, Serialize, Deserialize)]
pub struct FunctionState {
    /// Handle.
    pub handle: u64,
    /// Its module's handle.
    pub module: u64,
    /// The kernel's index in the module's parsed PTX.
    pub kernel: u32,
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
    pub max_dynamic_shared: u32,
    /// `cudaFuncAttributePreferredSharedMemoryCarveout`.
    pub carveout: i32,
}

/// The device heap of device-side `malloc`.
#[derive(Debug, Serialize, Deserialize)]
pub struct MallocHeapState {
    /// Device address of the heap.
    pub base: u64,
    /// Its size.
    pub size: u64,
    /// Live blocks: `(address, length)`.
    pub used: Vec<(u64, u64)>,
}

/// A cuRAND generator.
#[derive(Debug, Serialize, Deserialize)]
pub struct GeneratorState {
    /// Handle.
    pub handle: u64,
    /// `curandRngType_t`.
    pub rng_type: u32,
    /// A host generator (`curandCreateGeneratorHost`).
    pub host: bool,
    /// Seed.
    pub seed: u64,
    /// Outputs (or points) generated or skipped so far.
    pub offset: u64,
    /// Dimensions (quasi-random generators).
    pub dims: u32,
    /// `curandOrdering_t`.
    pub ordering: u32,
}
