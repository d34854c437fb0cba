// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The table of operations: one row per call of the wire format.
//!
//! Numeric codes are stable and never reused; a retired code stays here as a comment.
//! Ranges: `0x00xx` session, `0x01xx` device, `0x02xx` memory, `0x03xx` streams, `0x04xx`
//! events, `0x05xx` modules and launches, `0x10xx` cuBLAS, `0x11xx` cuRAND. The structs
//! the rows name are in [`crate::op`]; the macro that turns the rows into [`Opcode`],
//! [`ops`], [`Request`] and its decoder is in `table.rs`.

use std::fmt::Debug;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::checks;
use crate::op::*;
use crate::table::{Name, Params, ProgramName, operations};

/// One operation of the wire format: its code and the structs it sends and answers with.
pub trait Op {
    /// The opcode.
    const CODE: Opcode;
    /// The fixed part of the request payload.
    type Req: FromBytes + IntoBytes + Immutable + KnownLayout + Debug;
    /// The fixed part of the reply payload (`()`: none).
    type Resp: FromBytes + IntoBytes + Immutable + KnownLayout + Debug;
}

// One row per operation: `Name = code, Request => Reply [, tail Kind] [, check fn]
// [, serve Domain::method(args)];` (see `crate::table`). Adding an operation end to end:
// ARCHITECTURE.md, "Adding a call".
//
// The table is a macro that hands its rows to another: `operations!` (below) makes the
// wire format's types from them, and the backend's session makes its dispatch of the rows
// with a `serve` clause from them (`vcuda_protocol::operation_table!(its_macro)`).

/// The table of operations, handed to macro `$cb` as its rows (see the comment above).
#[macro_export]
macro_rules! operation_table {
    ($cb:ident) => {
        $cb! {
            /// [`HelloReq`] -> [`HelloResp`]: version check; must be a session's first request.
            Hello = 0x0001, HelloReq => HelloResp, tail ProgramName;
            /// No payload, no reply payload: a round trip that does nothing.
            Nop = 0x0002, () => ();

            /// [`DeviceReq`] -> [`DeviceInfo`].
            GetDeviceInfo = 0x0100, DeviceReq => DeviceInfo, serve DeviceOps::device_info(device);
            /// [`DeviceReq`]: waits for all work on the device.
            DeviceSynchronize = 0x0101, DeviceReq => (), serve DeviceOps::device_synchronize(device);
            /// [`DeviceReq`]: frees everything the session owns on the device and clears sticky errors.
            DeviceReset = 0x0102, DeviceReq => ();
            /// [`DeviceReq`] -> [`MemGetInfoResp`].
            MemGetInfo = 0x0103, DeviceReq => MemGetInfoResp, serve DeviceOps::mem_get_info(device);
            /// [`LimitReq`]: `cudaDeviceSetLimit`.
            DeviceSetLimit = 0x0104, LimitReq => (), serve DeviceOps::set_limit(device, limit, value);
            /// [`LimitReq`] (value ignored) -> [`LimitResp`]: `cudaDeviceGetLimit`.
            DeviceGetLimit = 0x0105, LimitReq => LimitResp, serve DeviceOps::get_limit(device, limit);

            /// [`MallocReq`] -> [`PtrResp`].
            Malloc = 0x0200, MallocReq => PtrResp, serve MemoryOps::malloc(device, size);
            /// [`PtrReq`]: `cudaFree` (synchronizes the device first, as CUDA does).
            Free = 0x0201, PtrReq => (), serve MemoryOps::free(ptr);
            /// [`MemcpyHtoDReq`] + one out segment of `width * height` bytes (rows packed).
            MemcpyHtoD = 0x0202, MemcpyHtoDReq => (), check checks::packed_out;
            /// [`MemcpyDtoHReq`] + one in segment of `width * height` bytes (rows packed).
            MemcpyDtoH = 0x0203, MemcpyDtoHReq => (), check checks::packed_in;
            /// [`MemcpyDtoDReq`].
            MemcpyDtoD = 0x0204, MemcpyDtoDReq => (), serve MemoryOps::memcpy_dtod(&);
            /// [`MemsetReq`].
            Memset = 0x0205, MemsetReq => (), serve MemoryOps::memset(&);
            /// [`ShareMemoryReq`] + a memory file passed beside the message -> [`HandleResp`]: the
            /// guest shares memory with the host (socket transport on one host).
            ShareMemory = 0x0206, ShareMemoryReq => HandleResp;
            /// [`HandleReq`]: unmaps a shared region.
            UnshareMemory = 0x0207, HandleReq => ();
            /// [`MemcpyHtoDSharedReq`]: a host-to-device copy from a shared region.
            MemcpyHtoDShared = 0x0208, MemcpyHtoDSharedReq => ();
            /// [`MemcpyDtoHSharedReq`]: a device-to-host copy into a shared region.
            MemcpyDtoHShared = 0x0209, MemcpyDtoHSharedReq => ();
            /// [`MapHostMemoryReq`]: kernels reach part of a shared region at a device address
            /// (mapped host memory, managed memory).
            MapHostMemory = 0x020A, MapHostMemoryReq => ();
            /// [`PtrReq`]: removes the mapped range that starts at `ptr`.
            UnmapHostMemory = 0x020B, PtrReq => ();

            /// [`ArrayCreateReq`] -> [`HandleResp`]: a CUDA array.
            ArrayCreate = 0x020C, ArrayCreateReq => HandleResp, serve ArrayOps::array_create(&);
            /// [`HandleReq`]: destroys an array (synchronizes the device first, as `cudaFree` does).
            ArrayDestroy = 0x020D, HandleReq => (), serve ArrayOps::array_destroy(handle);
            /// [`MemcpyArrayReq`]: a copy between an array and linear device memory.
            MemcpyArray = 0x020E, MemcpyArrayReq => (), serve ArrayOps::memcpy_array(&);
            /// [`TexObjectCreateReq`] -> [`HandleResp`]: a texture or surface object; its handle is
            /// what kernels take.
            TexObjectCreate = 0x020F, TexObjectCreateReq => HandleResp, serve ArrayOps::tex_object_create(&);
            /// [`TexObjectDestroyReq`]: destroys a texture or surface object.
            TexObjectDestroy = 0x0210, TexObjectDestroyReq => ();
            /// [`PtrReq`] -> [`IpcHandle`]: an interprocess handle for the allocation holding
            /// `ptr` (`cudaIpcGetMemHandle`).
            IpcGetMemHandle = 0x0211, PtrReq => IpcHandle, serve IpcOps::ipc_get_mem_handle(ptr);
            /// [`IpcOpenReq`] -> [`IpcOpenResp`]: maps another session's exported allocation into
            /// this one (`cudaIpcOpenMemHandle`); opening it again returns the same address.
            IpcOpenMemHandle = 0x0212, IpcOpenReq => IpcOpenResp;
            /// [`PtrReq`]: closes what `IpcOpenMemHandle` returned (`cudaIpcCloseMemHandle`).
            IpcCloseMemHandle = 0x0213, PtrReq => (), serve IpcOps::ipc_close_mem_handle(ptr);
            /// [`VmmCreateReq`] -> [`HandleResp`]: a physical allocation (`cuMemCreate`).
            VmmCreate = 0x0214, VmmCreateReq => HandleResp;
            /// [`HandleReq`]: releases a physical allocation, at once or with its last mapping
            /// (`cuMemRelease`).
            VmmRelease = 0x0215, HandleReq => (), serve VmmOps::vmm_release(handle);
            /// [`VmmReserveReq`] -> [`PtrResp`]: reserves device address space
            /// (`cuMemAddressReserve`).
            VmmReserve = 0x0216, VmmReserveReq => PtrResp, serve VmmOps::vmm_reserve(size, alignment, addr);
            /// [`VmmRangeReq`]: frees a whole reservation with nothing mapped in it
            /// (`cuMemAddressFree`).
            VmmFree = 0x0217, VmmRangeReq => (), serve VmmOps::vmm_free(ptr, size);
            /// [`VmmMapReq`]: maps a physical allocation into a reservation (`cuMemMap`).
            VmmMap = 0x0218, VmmMapReq => (), serve VmmOps::vmm_map(ptr, size, offset, handle);
            /// [`VmmRangeReq`]: unmaps whole mappings (`cuMemUnmap`).
            VmmUnmap = 0x0219, VmmRangeReq => (), serve VmmOps::vmm_unmap(ptr, size);
            /// [`VmmAccessReq`]: makes mappings accessible to kernels and copies, or not
            /// (`cuMemSetAccess`).
            VmmSetAccess = 0x021A, VmmAccessReq => (), serve VmmOps::vmm_set_access(ptr, size, device, flags);
            /// [`MipmappedArrayCreateReq`] -> [`HandleResp`]: a CUDA mipmapped array.
            MipmappedArrayCreate = 0x021B, MipmappedArrayCreateReq => HandleResp, serve ArrayOps::mipmapped_array_create(&);
            /// [`HandleReq`]: destroys a mipmapped array and its levels.
            MipmappedArrayDestroy = 0x021C, HandleReq => (), serve ArrayOps::mipmapped_array_destroy(handle);
            /// [`MipmappedArrayLevelReq`] -> [`HandleResp`]: the array handle of one level (owned
            /// by the mipmapped array: `ArrayDestroy` refuses it).
            MipmappedArrayGetLevel = 0x021D, MipmappedArrayLevelReq => HandleResp;

            /// [`StreamCreateReq`] -> [`HandleResp`].
            StreamCreate = 0x0300, StreamCreateReq => HandleResp, serve StreamOps::stream_create(device, flags, priority);
            /// [`HandleReq`].
            StreamDestroy = 0x0301, HandleReq => (), serve StreamOps::stream_destroy(handle);
            /// [`HandleReq`].
            StreamSynchronize = 0x0302, HandleReq => (), serve StreamOps::stream_synchronize(handle);
            /// [`HandleReq`]: status `cudaErrorNotReady` while work is pending.
            StreamQuery = 0x0303, HandleReq => (), serve StreamOps::stream_query(handle);
            /// [`StreamWaitEventReq`].
            StreamWaitEvent = 0x0304, StreamWaitEventReq => (), serve StreamOps::stream_wait_event(stream, event, flags);

            /// [`EventCreateReq`] -> [`HandleResp`].
            EventCreate = 0x0400, EventCreateReq => HandleResp, serve StreamOps::event_create(device, flags);
            /// [`HandleReq`].
            EventDestroy = 0x0401, HandleReq => (), serve StreamOps::event_destroy(handle);
            /// [`EventRecordReq`].
            EventRecord = 0x0402, EventRecordReq => (), serve StreamOps::event_record(event, stream, flags);
            /// [`HandleReq`].
            EventSynchronize = 0x0403, HandleReq => (), serve StreamOps::event_synchronize(handle);
            /// [`HandleReq`]: status `cudaErrorNotReady` while the recorded work is pending.
            EventQuery = 0x0404, HandleReq => (), serve StreamOps::event_query(handle);
            /// [`EventElapsedReq`] -> [`EventElapsedResp`].
            EventElapsedTime = 0x0405, EventElapsedReq => EventElapsedResp, serve StreamOps::event_elapsed(start, end);
            /// [`HandleReq`] -> [`IpcHandle`]: an interprocess handle for an event created with
            /// `cudaEventInterprocess` (`cudaIpcGetEventHandle`).
            IpcGetEventHandle = 0x0406, HandleReq => IpcHandle, serve IpcOps::ipc_get_event_handle(handle);
            /// [`IpcOpenReq`] -> [`HandleResp`]: an event of this session standing for another
            /// session's exported event (`cudaIpcOpenEventHandle`).
            IpcOpenEventHandle = 0x0407, IpcOpenReq => HandleResp;

            /// [`ModuleLoadReq`] (+ one out segment with the image when `MODULE_HAS_DATA`)
            /// -> [`ModuleLoadResp`].
            ModuleLoad = 0x0500, ModuleLoadReq => ModuleLoadResp, check checks::module_image;
            /// [`HandleReq`].
            ModuleUnload = 0x0501, HandleReq => (), serve ModuleOps::module_unload(handle);
            /// [`FunctionGetReq`] + the kernel's mangled name -> [`FunctionGetResp`] + one
            /// [`ParamInfo`] per parameter when the host knows the layout.
            FunctionGet = 0x0502, FunctionGetReq => FunctionGetResp, tail Name;
            /// [`SymbolGetReq`] + the variable's mangled name -> [`SymbolGetResp`].
            SymbolGet = 0x0503, SymbolGetReq => SymbolGetResp, tail Name;
            /// [`LaunchReq`] + the parameter buffer (`param_len` bytes).
            Launch = 0x0504, LaunchReq => (), tail Params, check checks::launch_params;
            /// [`FuncSetAttributeReq`].
            FuncSetAttribute = 0x0505, FuncSetAttributeReq => (), serve ModuleOps::func_set_attribute(function, attr, value);
            /// [`SymbolBindReq`] + the variable's name: a `__managed__` variable moves to memory the
            /// program and the backend share: its initial contents are copied there, and kernels,
            /// `SymbolGet` and copies use it from then on.
            SymbolBind = 0x0507, SymbolBindReq => (), tail Name;
            /// [`LaunchReq`] + the parameter buffer: a cooperative launch (every block resident at
            /// once, with a grid workspace for cooperative groups' grid barrier).
            LaunchCooperative = 0x0506, LaunchReq => (), tail Params, check checks::launch_params;
            /// [`LaunchClusterReq`] + the parameter buffer: a launch in thread-block clusters
            /// (the blocks of a cluster run at once and share their shared memory).
            LaunchCluster = 0x050E, LaunchClusterReq => (), tail Params, check checks::launch_cluster_params;
            /// [`GraphCreateReq`] + one out segment with the nodes ([`crate::graph`]) ->
            /// [`HandleResp`]: a graph of device work, launched whole with `GraphLaunch`.
            GraphCreate = 0x0508, GraphCreateReq => HandleResp, check checks::graph_nodes;
            /// [`GraphLaunchReq`]: runs a graph on a stream, its nodes in their dependency order.
            GraphLaunch = 0x0509, GraphLaunchReq => ();
            /// [`HandleReq`]: destroys a graph (launches of it already made still run).
            GraphDestroy = 0x050A, HandleReq => ();
            /// [`ModuleFunctionReq`] -> [`ModuleFunctionResp`] + the kernel's name: how many kernels
            /// a module has and the name of one (`cuModuleEnumerateFunctions`,
            /// `cudaLibraryEnumerateKernels`).
            ModuleFunction = 0x050B, ModuleFunctionReq => ModuleFunctionResp;
            /// [`TensorMapEncodeReq`] -> [`TensorMapResp`]: a tiled tensor map for bulk tensor
            /// copies (`cuTensorMapEncodeTiled`), encoded by the executor.
            TensorMapEncode = 0x050C, TensorMapEncodeReq => TensorMapResp, serve ModuleOps::tensor_map_encode(&);
            /// [`TensorMapReplaceReq`] -> [`TensorMapResp`]: the map with another global
            /// address (`cuTensorMapReplaceAddress`).
            TensorMapReplaceAddress = 0x050D, TensorMapReplaceReq => TensorMapResp, serve ModuleOps::tensor_map_replace_address(map, address);
            /// [`OccupancyClusterReq`] -> [`OccupancyClusterResp`]: the occupancy of a launch
            /// in clusters (`cudaOccupancyMaxActiveClusters`,
            /// `cudaOccupancyMaxPotentialClusterSize`).
            OccupancyCluster = 0x050F, OccupancyClusterReq => OccupancyClusterResp, serve ModuleOps::occupancy_cluster(&);

            /// [`BlasCreateReq`] -> [`HandleResp`]: a cuBLAS handle. Library requests answer with
            /// a library status (see [`lib`]).
            BlasCreate = 0x1000, BlasCreateReq => HandleResp, serve BlasOps::blas_create(device);
            /// [`HandleReq`]: destroys a cuBLAS handle.
            BlasDestroy = 0x1001, HandleReq => (), serve BlasOps::blas_destroy(handle);
            /// [`BlasCallReq`] -> [`BlasCallResp`]: one cuBLAS operation.
            BlasCall = 0x1002, BlasCallReq => BlasCallResp;

            /// [`RandCreateReq`] -> [`HandleResp`]: a cuRAND generator.
            RandCreate = 0x1100, RandCreateReq => HandleResp, serve RandOps::rand_create(rng_type, flags);
            /// [`HandleReq`]: destroys a cuRAND generator.
            RandDestroy = 0x1101, HandleReq => (), serve RandOps::rand_destroy(handle);
            /// [`RandSetReq`]: sets a generator's seed, offset, ordering or dimensions.
            RandSet = 0x1102, RandSetReq => (), serve RandOps::rand_set(&);
            /// [`RandGenerateReq`] (+ in segments of `n * element size` bytes in all for a host
            /// generator, [`lib::RAND_TO_HOST`]): fills memory with random numbers.
            RandGenerate = 0x1103, RandGenerateReq => (), check checks::rand_output;
        }
    };
}

operation_table!(operations);
