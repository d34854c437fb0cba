// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The fixed part of each request and reply payload, named by the rows of the table in
//! [`crate::operations`].
//!
//! Handles (streams, events, modules, functions) are opaque `u64` values chosen by the host;
//! the host never treats a guest value as a pointer. Device pointers are `u64` device
//! addresses; the host checks every one against the session's allocations.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Which executor a backend runs.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutorKind {
    /// The CPU reference executor (PTX interpreter).
    Cpu = 1,
    /// The real GPU, through the CUDA driver.
    Cuda = 2,
}

impl ExecutorKind {
    /// Decodes an executor kind.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Cpu),
            2 => Some(Self::Cuda),
            _ => None,
        }
    }
}

macro_rules! wire_struct {
    ($(#[$doc:meta])* $name:ident, $size:literal { $($(#[$fdoc:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }
        const _: () = assert!(size_of::<$name>() == $size);

        impl Default for $name {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }
    };
}

wire_struct!(
    /// `Hello` request. Tail: the program's name (UTF-8, for logs).
    HelloReq, 32 {
        /// The CUDA runtime ABI the guest program uses, as `cudaRuntimeGetVersion` reports
        /// it (e.g. 13000, 12040).
        runtime_version: u32,
        /// The guest process id (for logs).
        pid: u32,
        /// Start of an address range the guest reserved for device allocations (0: none).
        /// An executor that chooses device addresses itself places them there, so device
        /// pointers never alias the guest's own memory.
        va_base: u64,
        /// Length of that range.
        va_len: u64,
        /// Zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `Hello` reply.
    HelloResp, 40 {
        /// The host's [`crate::PROTOCOL_VERSION`].
        protocol_version: u32,
        /// An [`ExecutorKind`] value.
        executor: u32,
        /// Devices the session can use.
        device_count: u32,
        /// What `cudaDriverGetVersion` reports (e.g. 13000).
        driver_version: u32,
        /// Largest data segment the host accepts.
        max_segment_len: u64,
        /// Largest out- or in-data area of one message.
        max_data_len: u64,
        /// `HELLO_FEATURE_*` bits.
        features: u64,
    }
);

wire_struct!(
    /// A device index.
    DeviceReq, 8 {
        /// Device ordinal.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

/// Length of [`DeviceInfo::attrs`]: covers every `cudaDeviceAttr` of CUDA 12 and 13.
pub const DEVICE_ATTR_COUNT: usize = 256;

wire_struct!(
    /// `GetDeviceInfo` reply: everything `cudaGetDeviceProperties` and
    /// `cudaDeviceGetAttribute` report, independent of the guest's CUDA version. The guest
    /// builds its version's `cudaDeviceProp` from it.
    DeviceInfo, 1328 {
        /// NUL-terminated device name.
        name: [u8; 256],
        /// Device UUID.
        uuid: [u8; 16],
        /// Locally unique id (zero on Linux).
        luid: [u8; 8],
        /// Bytes of device memory.
        total_global_mem: u64,
        /// `attrs[a]` is the value of `cudaDeviceAttr` `a`.
        attrs: [i32; DEVICE_ATTR_COUNT],
        /// Zero.
        reserved: [u8; 16],
    }
);

impl DeviceInfo {
    /// The value of attribute `attr`, if it is in range.
    pub fn attr(&self, attr: u32) -> Option<i32> {
        self.attrs.get(attr as usize).copied()
    }
}

wire_struct!(
    /// `MemGetInfo` reply.
    MemGetInfoResp, 16 {
        /// Free bytes.
        free: u64,
        /// Total bytes.
        total: u64,
    }
);

wire_struct!(
    /// `DeviceSetLimit` / `DeviceGetLimit` request.
    LimitReq, 16 {
        /// Device ordinal.
        device: u32,
        /// A `cudaLimit` value.
        limit: u32,
        /// The new value (set only).
        value: u64,
    }
);

wire_struct!(
    /// `DeviceGetLimit` reply.
    LimitResp, 8 {
        /// The limit's value.
        value: u64,
    }
);

wire_struct!(
    /// `Malloc` request.
    MallocReq, 16 {
        /// Device ordinal.
        device: u32,
        /// Zero.
        flags: u32,
        /// Bytes to allocate.
        size: u64,
    }
);

wire_struct!(
    /// A device pointer.
    PtrReq, 8 {
        /// Device address.
        ptr: u64,
    }
);

wire_struct!(
    /// `cudaIpcMemHandle_t` or `cudaIpcEventHandle_t`: what the backend hands out for an
    /// exported allocation or event (opaque to the program; see the executors for what it
    /// holds).
    IpcHandle, 64 {
        /// The handle's bytes.
        bytes: [u8; 64],
    }
);

wire_struct!(
    /// `IpcOpenMemHandle` and `IpcOpenEventHandle` request.
    IpcOpenReq, 72 {
        /// The handle, as `IpcGetMemHandle` returned it.
        handle: [u8; 64],
        /// Memory: `cudaIpcMemLazyEnablePeerAccess` (1) is the only flag. Events: zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `IpcOpenMemHandle` reply.
    IpcOpenResp, 16 {
        /// Where the shared allocation is mapped in this session.
        ptr: u64,
        /// Its length.
        len: u64,
    }
);

wire_struct!(
    /// A device pointer reply.
    PtrResp, 8 {
        /// Device address.
        ptr: u64,
    }
);

/// Copy flag: asynchronous with respect to the host (`cudaMemcpyAsync` and friends).
pub const COPY_ASYNC: u32 = 1 << 0;

/// `Hello` feature: the transport passes file descriptors (a Unix socket), so the guest may
/// share memory with the host ([`ShareMemoryReq`]).
pub const HELLO_FEATURE_SHARED_MEMORY: u64 = 1 << 0;

/// `Hello` feature: the session can expose shared memory to kernels at the guest's own
/// addresses ([`MapHostMemoryReq`]): mapped (zero-copy) host memory and managed memory.
pub const HELLO_FEATURE_MAP_HOST_MEMORY: u64 = 1 << 1;

/// `Hello` feature: managed memory should live in device memory, kept coherent by the
/// library, even though page-locked memory is mapped for kernels
/// ([`HELLO_FEATURE_MAP_HOST_MEMORY`]): the device reaches host memory only across a bus (a
/// GPU), where kernels using managed memory in place would run at the bus's speed.
pub const HELLO_FEATURE_MANAGED_ON_DEVICE: u64 = 1 << 2;

wire_struct!(
    /// `MapHostMemory` request: exposes `len` bytes at `offset` of a shared region
    /// (`region`, from `ShareMemory`) to kernels at device address `addr` (the guest's
    /// address of that memory: with unified addressing a mapped host pointer is its device
    /// pointer). The range must not overlap device allocations, other mapped ranges or the
    /// executor's reserved windows. `UnmapHostMemory` ([`PtrReq`] with `addr`) removes it;
    /// unsharing the region or ending the session removes it too.
    MapHostMemoryReq, 32 {
        /// The shared region.
        region: u64,
        /// Offset of the range in the region.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Device address of the range's first byte.
        addr: u64,
    }
);

wire_struct!(
    /// `ShareMemory` request: maps the memory file passed with the message (`SCM_RIGHTS` on a
    /// Unix socket: a sealed memfd) into the session. Replies with the region's handle.
    ShareMemoryReq, 16 {
        /// Bytes to map from the file's start (the file must be at least this long and
        /// sealed against shrinking).
        len: u64,
        /// Zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MemcpyHtoDShared` request: a [`MemcpyHtoDReq`] whose packed source rows are in a
    /// shared region (`region`, from `ShareMemory`) at `offset`, not in a data segment.
    MemcpyHtoDSharedReq, 64 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch (ignored when `height == 1`).
        dpitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
        /// The shared region.
        region: u64,
        /// Offset of the source in the region.
        offset: u64,
    }
);

impl MemcpyHtoDSharedReq {
    /// The copy, as a [`MemcpyHtoDReq`].
    pub fn copy(&self) -> MemcpyHtoDReq {
        MemcpyHtoDReq {
            dst: self.dst,
            dpitch: self.dpitch,
            width: self.width,
            height: self.height,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
        }
    }
}

wire_struct!(
    /// `MemcpyDtoHShared` request: a [`MemcpyDtoHReq`] whose packed destination rows are in
    /// a shared region (`region`, from `ShareMemory`) at `offset`, not in a data segment.
    MemcpyDtoHSharedReq, 64 {
        /// Source device address.
        src: u64,
        /// Source pitch (ignored when `height == 1`).
        spitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
        /// The shared region.
        region: u64,
        /// Offset of the destination in the region.
        offset: u64,
    }
);

impl MemcpyDtoHSharedReq {
    /// The copy, as a [`MemcpyDtoHReq`].
    pub fn copy(&self) -> MemcpyDtoHReq {
        MemcpyDtoHReq {
            src: self.src,
            spitch: self.spitch,
            width: self.width,
            height: self.height,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
        }
    }
}

wire_struct!(
    /// `MemcpyHtoD` request: `height` rows of `width` bytes, the destination rows `dpitch`
    /// apart. A 1-D copy has `height == 1`.
    MemcpyHtoDReq, 48 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch (ignored when `height == 1`).
        dpitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MemcpyDtoH` request: `height` rows of `width` bytes, the source rows `spitch` apart.
    MemcpyDtoHReq, 48 {
        /// Source device address.
        src: u64,
        /// Source pitch (ignored when `height == 1`).
        spitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MemcpyDtoD` request.
    MemcpyDtoDReq, 64 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch.
        dpitch: u64,
        /// Source device address.
        src: u64,
        /// Source pitch.
        spitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `Memset` request: sets `height` rows of `width` elements of `elem_size` bytes.
    MemsetReq, 48 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch in bytes.
        pitch: u64,
        /// Elements per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// The value; its low `elem_size` bytes are stored.
        value: u32,
        /// 1, 2 or 4.
        elem_size: u16,
        /// `COPY_*` flags.
        flags: u16,
    }
);

/// The legacy default stream (`0` / `cudaStreamLegacy`).
pub const STREAM_LEGACY: u64 = 0;

wire_struct!(
    /// `StreamCreate` request.
    StreamCreateReq, 16 {
        /// Device ordinal.
        device: u32,
        /// `cudaStreamDefault` (0) or `cudaStreamNonBlocking` (1).
        flags: u32,
        /// Priority (lower is higher priority).
        priority: i32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// A handle.
    HandleReq, 8 {
        /// The handle.
        handle: u64,
    }
);

wire_struct!(
    /// A new handle.
    HandleResp, 8 {
        /// The handle.
        handle: u64,
    }
);

wire_struct!(
    /// `StreamWaitEvent` request.
    StreamWaitEventReq, 24 {
        /// Stream handle.
        stream: u64,
        /// Event handle.
        event: u64,
        /// Zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `EventCreate` request.
    EventCreateReq, 8 {
        /// Device ordinal.
        device: u32,
        /// `cudaEvent*` creation flags.
        flags: u32,
    }
);

wire_struct!(
    /// `EventRecord` request.
    EventRecordReq, 24 {
        /// Event handle.
        event: u64,
        /// Stream handle.
        stream: u64,
        /// `cudaEventRecordWithFlags` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `EventElapsedTime` request.
    EventElapsedReq, 16 {
        /// Start event.
        start: u64,
        /// End event.
        end: u64,
    }
);

wire_struct!(
    /// `EventElapsedTime` reply.
    EventElapsedResp, 8 {
        /// Milliseconds.
        ms: f32,
        /// Zero.
        reserved: u32,
    }
);

/// Module-load flag: the image follows as an out segment.
pub const MODULE_HAS_DATA: u32 = 1 << 0;

wire_struct!(
    /// `ModuleLoad` request. Without [`MODULE_HAS_DATA`], the host looks the image up by
    /// hash in its cache and answers `need_data = 1` if it does not have it.
    ModuleLoadReq, 48 {
        /// SHA-256 of the image.
        hash: [u8; 32],
        /// Bytes of the image.
        size: u64,
        /// `MODULE_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `ModuleLoad` reply.
    ModuleLoadResp, 16 {
        /// Module handle (0 when `need_data`).
        handle: u64,
        /// 1: send the image.
        need_data: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `FunctionGet` request; tail: the mangled name.
    FunctionGetReq, 8 {
        /// Module handle.
        module: u64,
    }
);

wire_struct!(
    /// What `cudaFuncGetAttributes` reports, version independent.
    FuncAttrs, 64 {
        /// Static shared memory bytes.
        shared_size_bytes: u64,
        /// Constant memory bytes.
        const_size_bytes: u64,
        /// Local memory bytes per thread.
        local_size_bytes: u64,
        /// Most threads per block.
        max_threads_per_block: i32,
        /// Registers per thread.
        num_regs: i32,
        /// PTX ISA version x 10 (e.g. 90).
        ptx_version: i32,
        /// Binary (SASS) version x 10.
        binary_version: i32,
        /// Compiled with `-Xptxas --dlcm=ca`.
        cache_mode_ca: i32,
        /// Most dynamic shared memory bytes a launch may ask for.
        max_dynamic_shared_size_bytes: i32,
        /// Preferred shared memory carve-out, percent or -1.
        preferred_shmem_carveout: i32,
        /// Zero.
        reserved: [i32; 3],
    }
);

/// [`FunctionGetResp::n_params`] when the host does not know the layout.
pub const PARAMS_UNKNOWN: u32 = u32::MAX;

wire_struct!(
    /// `FunctionGet` reply; tail: `n_params` [`ParamInfo`].
    FunctionGetResp, 80 {
        /// Function handle.
        handle: u64,
        /// Parameter count, or [`PARAMS_UNKNOWN`].
        n_params: u32,
        /// Total bytes of the parameter buffer.
        param_size: u32,
        /// Attributes.
        attrs: FuncAttrs,
    }
);

wire_struct!(
    /// One kernel parameter's place in the parameter buffer.
    ParamInfo, 8 {
        /// Byte offset.
        offset: u32,
        /// Bytes.
        size: u32,
    }
);

wire_struct!(
    /// `VmmCreate` request (`cuMemCreate`): a physical allocation of device memory.
    VmmCreateReq, 16 {
        /// Bytes, a multiple of the allocation granularity.
        size: u64,
        /// The device it lives on.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `VmmReserve` request (`cuMemAddressReserve`): a range of device address space.
    VmmReserveReq, 24 {
        /// Bytes, a multiple of the allocation granularity.
        size: u64,
        /// Alignment (0: the granularity; else a power of two).
        alignment: u64,
        /// The address asked for (a hint; 0: none).
        addr: u64,
    }
);

wire_struct!(
    /// A range of reserved address space (`VmmFree`, `VmmUnmap`).
    VmmRangeReq, 16 {
        /// Start.
        ptr: u64,
        /// Bytes.
        size: u64,
    }
);

wire_struct!(
    /// `VmmMap` request (`cuMemMap`).
    VmmMapReq, 32 {
        /// Where, inside a reservation.
        ptr: u64,
        /// Bytes.
        size: u64,
        /// Offset into the physical allocation.
        offset: u64,
        /// The physical allocation.
        handle: u64,
    }
);

wire_struct!(
    /// `VmmSetAccess` request (`cuMemSetAccess`, one descriptor).
    VmmAccessReq, 24 {
        /// Start of mapped memory.
        ptr: u64,
        /// Bytes.
        size: u64,
        /// The device given access.
        device: u32,
        /// `CUmemAccess_flags`: 0 none, 1 read, 3 read-write.
        flags: u32,
    }
);

wire_struct!(
    /// `ModuleFunction` request: the kernel at `index` of a module, and how many it has.
    ModuleFunctionReq, 16 {
        /// Module handle.
        module: u64,
        /// Which kernel, in the module's order (past the end: only the count).
        index: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `ModuleFunction` reply; tail: the kernel's mangled name (`name_len` bytes, at most
    /// [`crate::MAX_NAME_LEN`]; none when `index` is past the end).
    ModuleFunctionResp, 8 {
        /// Kernels (`.entry` functions) in the module.
        count: u32,
        /// Bytes of the name that follows.
        name_len: u32,
    }
);

wire_struct!(
    /// `SymbolGet` request; tail: the mangled name.
    SymbolGetReq, 8 {
        /// Module handle.
        module: u64,
    }
);

wire_struct!(
    /// `SymbolBind` request; tail: the variable's name.
    SymbolBindReq, 24 {
        /// Module handle.
        module: u64,
        /// Where the variable lives from now on: memory mapped for kernels
        /// (`MapHostMemory`), `size` bytes.
        addr: u64,
        /// The variable's size.
        size: u64,
    }
);

wire_struct!(
    /// `SymbolGet` reply.
    SymbolGetResp, 16 {
        /// Device address of the variable.
        ptr: u64,
        /// Bytes.
        size: u64,
    }
);

/// Largest kernel parameter buffer (CUDA 12.1+ allows 32764 bytes).
pub const MAX_PARAM_LEN: u32 = 32764;

wire_struct!(
    /// `Launch` request; tail: the parameter buffer.
    LaunchReq, 48 {
        /// Function handle.
        function: u64,
        /// Stream handle.
        stream: u64,
        /// Grid dimensions.
        grid: [u32; 3],
        /// Block dimensions.
        block: [u32; 3],
        /// Dynamic shared memory bytes.
        shared_mem: u32,
        /// Bytes of parameter buffer in the tail.
        param_len: u32,
    }
);

wire_struct!(
    /// `GraphCreate` request, with one out segment of `size` bytes: the nodes (see
    /// [`crate::graph`]).
    GraphCreateReq, 16 {
        /// Nodes in the description.
        node_count: u32,
        /// Zero.
        reserved: u32,
        /// Bytes of the description.
        size: u64,
    }
);

wire_struct!(
    /// `GraphLaunch` request.
    GraphLaunchReq, 16 {
        /// The graph (`GraphCreate`'s handle).
        graph: u64,
        /// Stream handle.
        stream: u64,
    }
);

wire_struct!(
    /// One node of a graph's description; its body and dependencies follow.
    GraphNodeHeader, 16 {
        /// `NODE_*`.
        kind: u32,
        /// Dependencies (earlier nodes) after the body.
        dep_count: u32,
        /// Bytes of the body.
        body_len: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `FuncSetAttribute` request.
    FuncSetAttributeReq, 16 {
        /// Function handle.
        function: u64,
        /// A `cudaFuncAttribute` value.
        attr: u32,
        /// The value.
        value: i32,
    }
);

// Arrays, textures and surfaces.

/// `cudaChannelFormatKindSigned`.
pub const CHANNEL_SIGNED: u32 = 0;
/// `cudaChannelFormatKindUnsigned`.
pub const CHANNEL_UNSIGNED: u32 = 1;
/// `cudaChannelFormatKindFloat`.
pub const CHANNEL_FLOAT: u32 = 2;

/// `cudaArrayLayered`: a 1-D or 2-D layered array (its depth counts layers).
pub const ARRAY_LAYERED: u32 = 0x01;
/// `cudaArrayCubemap`: six square faces (times the layers, with [`ARRAY_LAYERED`]).
pub const ARRAY_CUBEMAP: u32 = 0x04;
/// `cudaArraySurfaceLoadStore`: surfaces may view the array.
pub const ARRAY_SURFACE_LOAD_STORE: u32 = 0x02;
/// `cudaArrayTextureGather`: `tex2Dgather` may read the array.
pub const ARRAY_TEXTURE_GATHER: u32 = 0x08;

/// Largest width, height or depth of an array (the executors may allow less).
pub const MAX_ARRAY_DIM: u64 = 1 << 17;

wire_struct!(
    /// The texel format of an array or texture: `cudaChannelFormatDesc`.
    ChannelFormat, 8 {
        /// Bits of channels x, y, z, w (0 for an absent channel).
        bits: [u8; 4],
        /// A `CHANNEL_*` kind.
        kind: u32,
    }
);

wire_struct!(
    /// `ArrayCreate` request: a CUDA array of `width` x `height` x `depth` texels (`height`
    /// and `depth` 0 for fewer dimensions, as `cudaMalloc3DArray` takes them).
    ArrayCreateReq, 40 {
        /// Device ordinal.
        device: u32,
        /// `ARRAY_*` flags.
        flags: u32,
        /// The texel format.
        format: ChannelFormat,
        /// Width in texels.
        width: u64,
        /// Height in texels (0: a 1-D array).
        height: u64,
        /// Depth in texels (0: a 1-D or 2-D array).
        depth: u64,
    }
);

/// Most levels of a mipmapped array: enough to halve the widest array to one texel.
pub const MAX_MIPMAP_LEVELS: u32 = 18;

wire_struct!(
    /// `MipmappedArrayCreate` request: a CUDA mipmapped array whose level 0 is `array`'s
    /// shape (`cudaMallocMipmappedArray`).
    MipmappedArrayCreateReq, 48 {
        /// Level 0: device, flags, format and extent, as for an array.
        array: ArrayCreateReq,
        /// Levels, as the program asked (the executor clamps them to what the extent
        /// allows, as CUDA does).
        levels: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MipmappedArrayGetLevel` request: the array handle of one level of a mipmapped array.
    MipmappedArrayLevelReq, 16 {
        /// The mipmapped array.
        handle: u64,
        /// The level.
        level: u32,
        /// Zero.
        reserved: u32,
    }
);

/// `MemcpyArrayReq::flags`: the copy goes from linear device memory into the array.
pub const ARRAY_COPY_TO_ARRAY: u32 = 1 << 0;
/// `MemcpyArrayReq::flags`: the guest does not wait (stream ordered).
pub const ARRAY_COPY_ASYNC: u32 = 1 << 1;

wire_struct!(
    /// `MemcpyArray` request: copies a box between an array and linear device memory.
    MemcpyArrayReq, 96 {
        /// Array handle.
        array: u64,
        /// The box's origin in the array: x in bytes, y and z in texels.
        x: u64,
        /// Row.
        y: u64,
        /// Slice.
        z: u64,
        /// Device address of the box in linear memory.
        ptr: u64,
        /// Bytes from one row to the next in linear memory.
        pitch: u64,
        /// Rows from one slice to the next in linear memory.
        rows: u64,
        /// Bytes per row of the box.
        width: u64,
        /// Rows of the box.
        height: u64,
        /// Slices of the box.
        depth: u64,
        /// Stream handle.
        stream: u64,
        /// `ARRAY_COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

/// `TexObjectCreateReq::resource`: a CUDA array.
pub const RESOURCE_ARRAY: u32 = 0;
/// `TexObjectCreateReq::resource`: a CUDA mipmapped array (its handle in `array`).
pub const RESOURCE_MIPMAPPED_ARRAY: u32 = 1;
/// `TexObjectCreateReq::resource`: linear device memory (1-D).
pub const RESOURCE_LINEAR: u32 = 2;
/// `TexObjectCreateReq::resource`: pitched 2-D device memory.
pub const RESOURCE_PITCH2D: u32 = 3;

/// `TexObjectCreateReq::flags`: a surface object (otherwise a texture object).
pub const TEX_SURFACE: u32 = 1 << 0;
/// `TexObjectCreateReq::flags`: normalized coordinates.
pub const TEX_NORMALIZED_COORDS: u32 = 1 << 1;
/// `TexObjectCreateReq::flags`: `cudaReadModeNormalizedFloat`.
pub const TEX_READ_NORMALIZED_FLOAT: u32 = 1 << 2;
/// `TexObjectCreateReq::flags`: sRGB to linear conversion.
pub const TEX_SRGB: u32 = 1 << 3;
/// `TexObjectCreateReq::flags`: linear filtering (otherwise point).
pub const TEX_FILTER_LINEAR: u32 = 1 << 4;
/// `TexObjectCreateReq::flags`: linear filtering between mipmap levels (otherwise point).
pub const TEX_MIPMAP_LINEAR: u32 = 1 << 5;
/// `TexObjectCreateReq::flags`: a resource view (`cudaResourceViewDesc`) of an array or a
/// mipmapped array: the `view_*` fields apply.
pub const TEX_VIEW: u32 = 1 << 6;

wire_struct!(
    /// `TexObjectCreate` request: a texture or surface object over an array or device memory.
    TexObjectCreateReq, 136 {
        /// Device ordinal.
        device: u32,
        /// A `RESOURCE_*` type.
        resource: u32,
        /// The array handle (`RESOURCE_ARRAY`) or mipmapped array handle
        /// (`RESOURCE_MIPMAPPED_ARRAY`).
        array: u64,
        /// Device address of texel 0 (`RESOURCE_LINEAR`, `RESOURCE_PITCH2D`).
        ptr: u64,
        /// The texel format (linear and pitched memory; an array has its own).
        format: ChannelFormat,
        /// Bytes (`RESOURCE_LINEAR`).
        size: u64,
        /// Width in texels (`RESOURCE_PITCH2D`).
        width: u64,
        /// Height in texels (`RESOURCE_PITCH2D`).
        height: u64,
        /// Bytes from one row to the next (`RESOURCE_PITCH2D`).
        pitch: u64,
        /// `cudaTextureAddressMode` per coordinate.
        address: [u32; 3],
        /// `TEX_*` flags.
        flags: u32,
        /// The border color.
        border: [f32; 4],
        /// Added to every fetch's level of detail (a mipmapped array; 0 otherwise).
        mip_bias: f32,
        /// Least level of detail (a mipmapped array; 0 otherwise).
        mip_min_clamp: f32,
        /// Greatest level of detail (a mipmapped array; 0 otherwise).
        mip_max_clamp: f32,
        /// A view's texel format (no bits: the resource's own).
        view_format: ChannelFormat,
        /// A view's first and last mipmap level.
        view_levels: [u32; 2],
        /// A view's first and last layer (cube faces count as layers).
        view_layers: [u32; 2],
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `TexObjectDestroy` request. Texture and surface objects are numbered apart (on a
    /// GPU the two kinds may share values), so the request says which kind it names.
    TexObjectDestroyReq, 16 {
        /// The handle.
        handle: u64,
        /// `TEX_SURFACE` for a surface object; otherwise 0.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

/// cuBLAS and cuRAND: constants shared by the guest library and the executors.
///
/// A library request's reply carries the library's status (`cublasStatus_t` for `Blas*`,
/// `curandStatus_t` for `Rand*`), except that a device memory fault is reported as
/// `cudaErrorIllegalAddress`, as the fault of a library kernel is on a GPU: the guest maps it
/// to `CUBLAS_STATUS_EXECUTION_FAILED` / `CURAND_STATUS_LAUNCH_FAILURE` for a call it waits
/// for, and it becomes the process's (sticky) CUDA error either way. The guest validates the
/// arguments of the requests it posts without waiting, so those fail only on memory faults.
pub mod lib {
    /// `CUBLAS_STATUS_NOT_INITIALIZED`.
    pub const BLAS_NOT_INITIALIZED: u32 = 1;
    /// `CUBLAS_STATUS_ALLOC_FAILED`.
    pub const BLAS_ALLOC_FAILED: u32 = 3;
    /// `CUBLAS_STATUS_INVALID_VALUE`.
    pub const BLAS_INVALID_VALUE: u32 = 7;
    /// `CUBLAS_STATUS_EXECUTION_FAILED`.
    pub const BLAS_EXECUTION_FAILED: u32 = 13;
    /// `CUBLAS_STATUS_INTERNAL_ERROR`.
    pub const BLAS_INTERNAL_ERROR: u32 = 14;
    /// `CUBLAS_STATUS_NOT_SUPPORTED`.
    pub const BLAS_NOT_SUPPORTED: u32 = 15;

    /// `CURAND_STATUS_NOT_INITIALIZED`.
    pub const RAND_NOT_INITIALIZED: u32 = 101;
    /// `CURAND_STATUS_ALLOCATION_FAILED`.
    pub const RAND_ALLOCATION_FAILED: u32 = 102;
    /// `CURAND_STATUS_TYPE_ERROR`.
    pub const RAND_TYPE_ERROR: u32 = 103;
    /// `CURAND_STATUS_OUT_OF_RANGE`.
    pub const RAND_OUT_OF_RANGE: u32 = 104;
    /// `CURAND_STATUS_LENGTH_NOT_MULTIPLE`.
    pub const RAND_LENGTH_NOT_MULTIPLE: u32 = 105;
    /// `CURAND_STATUS_LAUNCH_FAILURE`.
    pub const RAND_LAUNCH_FAILURE: u32 = 201;
    /// `CURAND_STATUS_INITIALIZATION_FAILED`: what creating a generator answers on an
    /// executor without cuRAND.
    pub const RAND_INITIALIZATION_FAILED: u32 = 203;
    /// `CURAND_STATUS_INTERNAL_ERROR`.
    pub const RAND_INTERNAL_ERROR: u32 = 999;

    /// [`super::BlasCallReq::flags`]: scalars (`alpha`, `beta`, rotation `c`, `s`) are
    /// device addresses in the first 8 bytes of their fields, and results go to device
    /// memory at `result` (`CUBLAS_POINTER_MODE_DEVICE`).
    pub const BLAS_DEVICE_POINTERS: u32 = 1 << 0;

    /// cuBLAS operations ([`super::BlasCallReq::func`]). The element type is in `type_a`
    /// (and `type_b`, `type_c`, `compute` for the `Ex` forms) as a `cudaDataType`.
    pub mod func {
        /// `asum`: `result = sum |x_i|` (complex: `|re| + |im|`).
        pub const ASUM: u32 = 1;
        /// `nrm2`.
        pub const NRM2: u32 = 2;
        /// `dot` (complex: `dotu`).
        pub const DOT: u32 = 3;
        /// `dotc`.
        pub const DOTC: u32 = 4;
        /// `axpy`: `y += alpha x`.
        pub const AXPY: u32 = 5;
        /// `scal`: `x *= alpha` (`type_b` = a real type for `csscal`/`zdscal`).
        pub const SCAL: u32 = 6;
        /// `copy`: `y = x`.
        pub const COPY: u32 = 7;
        /// `swap`.
        pub const SWAP: u32 = 8;
        /// `rot`: plane rotation with `c = alpha`, `s = beta`.
        pub const ROT: u32 = 9;
        /// `iamax` (1-based index).
        pub const IAMAX: u32 = 10;
        /// `iamin` (1-based index).
        pub const IAMIN: u32 = 11;
        /// `gemv`: `y = alpha op(A) x + beta y`.
        pub const GEMV: u32 = 20;
        /// `ger`: `A += alpha x y^T`.
        pub const GER: u32 = 21;
        /// `symv`.
        pub const SYMV: u32 = 22;
        /// `trsv`.
        pub const TRSV: u32 = 23;
        /// `gemm`: `C = alpha op(A) op(B) + beta C`; with `batch > 0` strided batched.
        pub const GEMM: u32 = 30;
        /// `gemmBatched`: `a`, `b`, `c` are device arrays of `batch` device pointers.
        pub const GEMM_BATCHED: u32 = 31;
        /// `symm`.
        pub const SYMM: u32 = 32;
        /// `syrk`.
        pub const SYRK: u32 = 33;
        /// `trsm`: `B = alpha op(A)^-1 B` (or `B op(A)^-1`).
        pub const TRSM: u32 = 34;
        /// `geam`: `C = alpha op(A) + beta op(B)`.
        pub const GEAM: u32 = 35;
        /// `getrfBatched`: `a` array of pointers, `x` pivots (`n` per matrix, or 0 for
        /// none), `y` infos.
        pub const GETRF_BATCHED: u32 = 40;
        /// `getrsBatched`: `a` array of LU factors, `x` pivots, `b` array of right-hand
        /// sides (`n` x `k`, `trans_a`); the info goes to the reply.
        pub const GETRS_BATCHED: u32 = 41;
    }

    /// `cudaDataType` values the executors understand.
    pub mod dtype {
        /// `CUDA_R_32F`.
        pub const R_32F: u32 = 0;
        /// `CUDA_R_64F`.
        pub const R_64F: u32 = 1;
        /// `CUDA_R_16F`.
        pub const R_16F: u32 = 2;
        /// `CUDA_C_32F`.
        pub const C_32F: u32 = 4;
        /// `CUDA_C_64F`.
        pub const C_64F: u32 = 5;
    }

    /// [`super::RandCreateReq::flags`]: a host generator (`curandCreateGeneratorHost`); its
    /// output travels back in the generate request's in segments.
    pub const RAND_HOST: u32 = 1 << 0;
    /// [`super::RandGenerateReq::flags`]: the output goes to the in segments, not to
    /// device memory.
    pub const RAND_TO_HOST: u32 = 1 << 0;

    /// [`super::RandSetReq::what`] values.
    pub mod set {
        /// `curandSetPseudoRandomGeneratorSeed`.
        pub const SEED: u32 = 1;
        /// `curandSetGeneratorOffset`.
        pub const OFFSET: u32 = 2;
        /// `curandSetGeneratorOrdering`.
        pub const ORDERING: u32 = 3;
        /// `curandSetQuasiRandomGeneratorDimensions`.
        pub const DIMENSIONS: u32 = 4;
    }

    /// [`super::RandGenerateReq::dist`] values.
    pub mod dist {
        /// `curandGenerate`: 32-bit words.
        pub const BITS32: u32 = 1;
        /// `curandGenerateLongLong`: 64-bit words (64-bit quasi-random generators only).
        pub const BITS64: u32 = 2;
        /// `curandGenerateUniform`.
        pub const UNIFORM_F32: u32 = 3;
        /// `curandGenerateUniformDouble`.
        pub const UNIFORM_F64: u32 = 4;
        /// `curandGenerateNormal`.
        pub const NORMAL_F32: u32 = 5;
        /// `curandGenerateNormalDouble`.
        pub const NORMAL_F64: u32 = 6;
        /// `curandGenerateLogNormal`.
        pub const LOG_NORMAL_F32: u32 = 7;
        /// `curandGenerateLogNormalDouble`.
        pub const LOG_NORMAL_F64: u32 = 8;
        /// `curandGeneratePoisson` (`mean` is lambda).
        pub const POISSON: u32 = 9;

        /// Bytes per element of a distribution, or `None` for an unknown one.
        pub fn elem_size(dist: u32) -> Option<u64> {
            match dist {
                BITS32 | UNIFORM_F32 | NORMAL_F32 | LOG_NORMAL_F32 | POISSON => Some(4),
                BITS64 | UNIFORM_F64 | NORMAL_F64 | LOG_NORMAL_F64 => Some(8),
                _ => None,
            }
        }
    }
}

wire_struct!(
    /// `BlasCreate` request.
    BlasCreateReq, 8 {
        /// Device ordinal.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `BlasCall` request: one cuBLAS operation, every argument by value. The guest keeps
    /// the handle's stream and pointer mode and sends them with each call. Which fields an
    /// operation reads is documented with its [`lib::func`] code; the rest are zero.
    BlasCallReq, 256 {
        /// cuBLAS handle.
        handle: u64,
        /// Stream handle (from the handle's `cublasSetStream`).
        stream: u64,
        /// A [`lib::func`] code.
        func: u32,
        /// `lib::BLAS_*` flags.
        flags: u32,
        /// `cublasOperation_t` of A.
        trans_a: u32,
        /// `cublasOperation_t` of B.
        trans_b: u32,
        /// `cublasFillMode_t`.
        uplo: u32,
        /// `cublasSideMode_t`.
        side: u32,
        /// `cublasDiagType_t`.
        diag: u32,
        /// `cudaDataType` of A (and of x, y for level 1 and 2).
        type_a: u32,
        /// `cudaDataType` of B.
        type_b: u32,
        /// `cudaDataType` of C.
        type_c: u32,
        /// `cublasComputeType_t` (`Ex` forms; 0 otherwise).
        compute: u32,
        /// The handle's `cublasMath_t`.
        math_mode: u32,
        /// Rows (`m`).
        m: i64,
        /// Columns (`n`).
        n: i64,
        /// Inner dimension (`k`).
        k: i64,
        /// Leading dimension of A.
        lda: i64,
        /// Leading dimension of B.
        ldb: i64,
        /// Leading dimension of C.
        ldc: i64,
        /// Stride of x.
        incx: i64,
        /// Stride of y.
        incy: i64,
        /// Batch count (0 or 1: not batched).
        batch: i64,
        /// Elements between consecutive A matrices of a strided batch.
        stride_a: i64,
        /// Elements between consecutive B matrices.
        stride_b: i64,
        /// Elements between consecutive C matrices.
        stride_c: i64,
        /// Device address of A.
        a: u64,
        /// Device address of B.
        b: u64,
        /// Device address of C.
        c: u64,
        /// Device address of x.
        x: u64,
        /// Device address of y.
        y: u64,
        /// Device address of the result (device pointer mode).
        result: u64,
        /// `alpha` (or rotation `c`): the value, little-endian, in host pointer mode; a
        /// device address in the first 8 bytes in device pointer mode.
        alpha: [u8; 16],
        /// `beta` (or rotation `s`), like `alpha`.
        beta: [u8; 16],
        /// Zero.
        reserved: [u8; 16],
    }
);

wire_struct!(
    /// `BlasCall` reply.
    BlasCallResp, 16 {
        /// A scalar result in host pointer mode (a float, double, complex or 32-bit
        /// index, little-endian), or the `info` of `getrsBatched`.
        value: [u8; 16],
    }
);

wire_struct!(
    /// `RandCreate` request.
    RandCreateReq, 16 {
        /// A `curandRngType_t`.
        rng_type: u32,
        /// `lib::RAND_HOST`.
        flags: u32,
        /// Device ordinal.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `RandSet` request.
    RandSetReq, 24 {
        /// Generator handle.
        handle: u64,
        /// A [`lib::set`] code.
        what: u32,
        /// Zero.
        reserved: u32,
        /// The value.
        value: u64,
    }
);

wire_struct!(
    /// `RandGenerate` request.
    RandGenerateReq, 56 {
        /// Generator handle.
        handle: u64,
        /// Stream handle (from `curandSetStream`).
        stream: u64,
        /// Device address of the output (ignored with [`lib::RAND_TO_HOST`]).
        dst: u64,
        /// Number of elements.
        n: u64,
        /// A [`lib::dist`] code.
        dist: u32,
        /// `lib::RAND_TO_HOST`.
        flags: u32,
        /// Mean (normal, log-normal) or lambda (Poisson).
        mean: f64,
        /// Standard deviation (normal, log-normal).
        stddev: f64,
    }
);
