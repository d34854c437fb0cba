// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules, their functions and variables: loading, function lookup and attributes,
//! kernel parameter layouts, symbols.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

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
        /// The kernel's compile-time cluster shape (`__cluster_dims__`: blocks in x, y and z;
        /// zeros: none) and, in the last byte, 1 if a launch must give a cluster shape.
        required_cluster: [u8; 4],
        /// Zero.
        reserved: [i32; 2],
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

wire_struct!(
    /// `TensorMapEncode` request: `cuTensorMapEncodeTiled`'s arguments (enumerations as
    /// `cuda.h` numbers them; entries past `rank` are zero).
    TensorMapEncodeReq, 144 {
        /// `CUtensorMapDataType`.
        data_type: u32,
        /// Dimensions, 1 to 5.
        rank: u32,
        /// Device address of the tensor's first element.
        address: u64,
        /// Elements in each dimension.
        global_dim: [u64; 5],
        /// Bytes between elements of dimensions 1 to `rank - 1`.
        global_strides: [u64; 4],
        /// The box's elements in each dimension.
        box_dim: [u32; 5],
        /// Traversal strides.
        element_strides: [u32; 5],
        /// `CUtensorMapInterleave`.
        interleave: u32,
        /// `CUtensorMapSwizzle`.
        swizzle: u32,
        /// `CUtensorMapL2promotion`.
        l2_promotion: u32,
        /// `CUtensorMapFloatOOBfill`.
        oob_fill: u32,
    }
);

wire_struct!(
    /// A tensor map (`CUtensorMap`): the reply of `TensorMapEncode` and
    /// `TensorMapReplaceAddress`. Its layout is the executor's (the driver's on a GPU).
    TensorMapResp, 128 {
        /// The map's 128 bytes.
        map: [u64; 16],
    }
);

wire_struct!(
    /// `TensorMapReplaceAddress` request: `cuTensorMapReplaceAddress`.
    TensorMapReplaceReq, 136 {
        /// The map, as an earlier reply gave it.
        map: [u64; 16],
        /// The new global address.
        address: u64,
    }
);

/// [`OccupancyClusterReq::query`]: `cudaOccupancyMaxActiveClusters`.
pub const OCCUPANCY_MAX_ACTIVE_CLUSTERS: u32 = 0;
/// [`OccupancyClusterReq::query`]: `cudaOccupancyMaxPotentialClusterSize`.
pub const OCCUPANCY_MAX_CLUSTER_SIZE: u32 = 1;

wire_struct!(
    /// `OccupancyCluster` request: how many clusters of a launch configuration the device
    /// holds at once, or the largest cluster it can launch with it.
    OccupancyClusterReq, 56 {
        /// Function handle.
        function: u64,
        /// The configuration's grid.
        grid: [u32; 3],
        /// The configuration's block.
        block: [u32; 3],
        /// The configuration's cluster shape; zeros: none given (the kernel's own).
        cluster: [u32; 3],
        /// Dynamic shared memory per block.
        shared_mem: u32,
        /// [`OCCUPANCY_MAX_ACTIVE_CLUSTERS`] or [`OCCUPANCY_MAX_CLUSTER_SIZE`].
        query: u32,
        /// Blocks of this configuration one multiprocessor holds by the library's occupancy
        /// calculator. An executor that computes no occupancy of its own (the CPU executor)
        /// answers from it; a GPU's driver answers itself.
        blocks_per_sm: u32,
    }
);

wire_struct!(
    /// `OccupancyCluster` reply.
    OccupancyClusterResp, 8 {
        /// Clusters, or blocks in the largest cluster.
        value: u32,
        /// Zero.
        reserved: u32,
    }
);
