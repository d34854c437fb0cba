// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `DeviceInfo` from the real device: name, UUID, memory and every `cudaDeviceAttr`.
//!
//! `CUdevice_attribute` and `cudaDeviceAttr` share their numbering: attribute `n` of the
//! driver is attribute `n` of the runtime for every `n` in 1..=147 (the runtime calls 92-94,
//! 96, 122-124, 127-129, 132, 141 and 145 "reserved"; the driver still answers them; a test
//! below checks all 123 named ones). So `attrs[n]` is simply `cuDeviceGetAttribute(n)`.
//!
//! A few capabilities vcuda does not forward are reported as absent, so programs that test
//! for them take their fallback path instead of failing (see [`NOT_FORWARDED`]).

use cudarc::driver::sys::CUdevice_attribute::{self, *};
use vcuda_protocol::{DeviceInfo, attr};

/// Where the device facts come from: the driver, or a mock in tests.
pub trait AttrSource {
    /// The device name (without NUL).
    fn name(&self) -> Vec<u8>;
    /// The device UUID.
    fn uuid(&self) -> [u8; 16];
    /// Bytes of device memory.
    fn total_mem(&self) -> u64;
    /// One attribute; `None` if the driver does not know it.
    fn attribute(&self, a: CUdevice_attribute) -> Option<i32>;
}

/// Every driver attribute numbered 1..=147 (CUDA 13.0), in order: `CU_ATTRS[n - 1]` is
/// attribute `n`.
pub const CU_ATTRS: [CUdevice_attribute; 147] = [
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
    CU_DEVICE_ATTRIBUTE_GPU_OVERLAP,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT,
    CU_DEVICE_ATTRIBUTE_INTEGRATED,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
    CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH,
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID,
    CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1,
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
    CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
    CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH,
    CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
    CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS,
    CU_DEVICE_ATTRIBUTE_NUMA_CONFIG,
    CU_DEVICE_ATTRIBUTE_NUMA_ID,
    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MPS_ENABLED,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
    CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK,
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH,
    CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID,
    CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED,
];

/// Capabilities a guest cannot use through vcuda, reported as 0: mapped or managed host
/// memory (the GPU cannot reach guest memory), shareable memory-pool
/// handles and host memory pools, IPC, GPUDirect RDMA and stream memory operations (no
/// protocol operations for them).
/// Stream-ordered memory pools themselves are the guest library's, so the device's answer
/// stands.
pub const NOT_FORWARDED: &[u32] = &[
    attr::CAN_MAP_HOST_MEMORY,
    attr::MANAGED_MEMORY,
    attr::CONCURRENT_MANAGED_ACCESS,
    attr::PAGEABLE_MEMORY_ACCESS,
    attr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    attr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
    attr::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
    attr::HOST_NATIVE_ATOMIC_SUPPORTED,
    attr::ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED,
    attr::RESERVED96,
    attr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES,
    attr::HOST_MEMORY_POOLS_SUPPORTED,
    attr::HOST_NUMA_MEMORY_POOLS_SUPPORTED,
    attr::HOST_NUMA_MULTINODE_IPC_SUPPORTED,
    attr::IPC_EVENT_SUPPORT,
    attr::GPUDIRECT_RDMASUPPORTED,
    attr::GPUDIRECT_RDMAFLUSH_WRITES_OPTIONS,
    attr::GPUDIRECT_RDMAWRITES_ORDERING,
    attr::TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
    // Stream memory operations (`cuStreamWaitValue32` and the like; the runtime's numbers
    // for them are reserved): vcuda does not carry them, they answer not supported.
    attr::RESERVED92,
    attr::RESERVED93,
    attr::RESERVED94,
    attr::RESERVED122,
    attr::RESERVED123,
    // The VMM calls vcuda carries map whole allocations only: no shareable handles, no
    // compression, no RDMA on them.
    attr::HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
    attr::GENERIC_COMPRESSION_SUPPORTED,
    attr::GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
];

/// Builds the `DeviceInfo` a guest sees.
pub fn fill(src: &dyn AttrSource) -> DeviceInfo {
    let mut info = DeviceInfo::default();
    let name = src.name();
    // Leave room for the NUL.
    let n = name.len().min(info.name.len() - 1);
    info.name[..n].copy_from_slice(&name[..n]);
    info.uuid = src.uuid();
    info.total_global_mem = src.total_mem();
    for (i, &a) in CU_ATTRS.iter().enumerate() {
        if let (Some(v), Some(slot)) = (src.attribute(a), info.attrs.get_mut(i + 1)) {
            *slot = v;
        }
    }
    for &a in NOT_FORWARDED {
        if let Some(slot) = info.attrs.get_mut(a as usize) {
            *slot = 0;
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mock;

    impl AttrSource for Mock {
        fn name(&self) -> Vec<u8> {
            b"NVIDIA H100 80GB HBM3".to_vec()
        }
        fn uuid(&self) -> [u8; 16] {
            *b"0123456789abcdef"
        }
        fn total_mem(&self) -> u64 {
            85_017_755_648
        }
        fn attribute(&self, a: CUdevice_attribute) -> Option<i32> {
            // Pretend the driver does not know the reserved ones; everything else is
            // 1000 + its number, so misplaced values show.
            match a as u32 {
                92..=94 => None,
                n => Some(1000 + n as i32),
            }
        }
    }

    #[test]
    fn table_is_numbered_one_to_147() {
        for (i, &a) in CU_ATTRS.iter().enumerate() {
            assert_eq!(a as u32, i as u32 + 1, "{a:?}");
        }
    }

    #[test]
    fn driver_and_runtime_numbering_agree() {
        let pairs = [
            (
                attr::MAX_THREADS_PER_BLOCK,
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            ),
            (attr::MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            (attr::MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
            (attr::MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
            (attr::MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            (attr::MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            (attr::MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
            (
                attr::MAX_SHARED_MEMORY_PER_BLOCK,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            ),
            (
                attr::TOTAL_CONSTANT_MEMORY,
                CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
            ),
            (attr::WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
            (attr::MAX_PITCH, CU_DEVICE_ATTRIBUTE_MAX_PITCH),
            (
                attr::MAX_REGISTERS_PER_BLOCK,
                CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            ),
            (attr::CLOCK_RATE, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            (
                attr::TEXTURE_ALIGNMENT,
                CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT,
            ),
            (attr::GPU_OVERLAP, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP),
            (
                attr::MULTI_PROCESSOR_COUNT,
                CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            ),
            (
                attr::KERNEL_EXEC_TIMEOUT,
                CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT,
            ),
            (attr::INTEGRATED, CU_DEVICE_ATTRIBUTE_INTEGRATED),
            (
                attr::CAN_MAP_HOST_MEMORY,
                CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
            ),
            (attr::COMPUTE_MODE, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE),
            (
                attr::MAX_TEXTURE1_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DHEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT,
            ),
            (
                attr::MAX_TEXTURE3_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
            ),
            (
                attr::MAX_TEXTURE3_DHEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
            ),
            (
                attr::MAX_TEXTURE3_DDEPTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH,
            ),
            (
                attr::MAX_TEXTURE2_DLAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DLAYERED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
            ),
            (
                attr::MAX_TEXTURE2_DLAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS,
            ),
            (
                attr::SURFACE_ALIGNMENT,
                CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT,
            ),
            (
                attr::CONCURRENT_KERNELS,
                CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
            ),
            (attr::ECC_ENABLED, CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
            (attr::PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            (attr::PCI_DEVICE_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
            (attr::TCC_DRIVER, CU_DEVICE_ATTRIBUTE_TCC_DRIVER),
            (
                attr::MEMORY_CLOCK_RATE,
                CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
            ),
            (
                attr::GLOBAL_MEMORY_BUS_WIDTH,
                CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            ),
            (attr::L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            (
                attr::MAX_THREADS_PER_MULTI_PROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            ),
            (
                attr::ASYNC_ENGINE_COUNT,
                CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
            ),
            (
                attr::UNIFIED_ADDRESSING,
                CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
            ),
            (
                attr::MAX_TEXTURE1_DLAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH,
            ),
            (
                attr::MAX_TEXTURE1_DLAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS,
            ),
            (
                attr::MAX_TEXTURE2_DGATHER_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DGATHER_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT,
            ),
            (
                attr::MAX_TEXTURE3_DWIDTH_ALT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE,
            ),
            (
                attr::MAX_TEXTURE3_DHEIGHT_ALT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE,
            ),
            (
                attr::MAX_TEXTURE3_DDEPTH_ALT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE,
            ),
            (attr::PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
            (
                attr::TEXTURE_PITCH_ALIGNMENT,
                CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
            ),
            (
                attr::MAX_TEXTURE_CUBEMAP_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH,
            ),
            (
                attr::MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
            ),
            (
                attr::MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS,
            ),
            (
                attr::MAX_SURFACE1_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH,
            ),
            (
                attr::MAX_SURFACE2_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH,
            ),
            (
                attr::MAX_SURFACE2_DHEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT,
            ),
            (
                attr::MAX_SURFACE3_DWIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH,
            ),
            (
                attr::MAX_SURFACE3_DHEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT,
            ),
            (
                attr::MAX_SURFACE3_DDEPTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH,
            ),
            (
                attr::MAX_SURFACE1_DLAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH,
            ),
            (
                attr::MAX_SURFACE1_DLAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS,
            ),
            (
                attr::MAX_SURFACE2_DLAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH,
            ),
            (
                attr::MAX_SURFACE2_DLAYERED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT,
            ),
            (
                attr::MAX_SURFACE2_DLAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS,
            ),
            (
                attr::MAX_SURFACE_CUBEMAP_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH,
            ),
            (
                attr::MAX_SURFACE_CUBEMAP_LAYERED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH,
            ),
            (
                attr::MAX_SURFACE_CUBEMAP_LAYERED_LAYERS,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS,
            ),
            (
                attr::MAX_TEXTURE1_DLINEAR_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DLINEAR_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DLINEAR_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT,
            ),
            (
                attr::MAX_TEXTURE2_DLINEAR_PITCH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH,
            ),
            (
                attr::MAX_TEXTURE2_DMIPMAPPED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH,
            ),
            (
                attr::MAX_TEXTURE2_DMIPMAPPED_HEIGHT,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT,
            ),
            (
                attr::COMPUTE_CAPABILITY_MAJOR,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            ),
            (
                attr::COMPUTE_CAPABILITY_MINOR,
                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            ),
            (
                attr::MAX_TEXTURE1_DMIPMAPPED_WIDTH,
                CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH,
            ),
            (
                attr::STREAM_PRIORITIES_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED,
            ),
            (
                attr::GLOBAL_L1_CACHE_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED,
            ),
            (
                attr::LOCAL_L1_CACHE_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED,
            ),
            (
                attr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            ),
            (
                attr::MAX_REGISTERS_PER_MULTIPROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            ),
            (attr::MANAGED_MEMORY, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
            (
                attr::IS_MULTI_GPU_BOARD,
                CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD,
            ),
            (
                attr::MULTI_GPU_BOARD_GROUP_ID,
                CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID,
            ),
            (
                attr::HOST_NATIVE_ATOMIC_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
            ),
            (
                attr::SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
                CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
            ),
            (
                attr::PAGEABLE_MEMORY_ACCESS,
                CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
            ),
            (
                attr::CONCURRENT_MANAGED_ACCESS,
                CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
            ),
            (
                attr::COMPUTE_PREEMPTION_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED,
            ),
            (
                attr::CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
            ),
            (
                attr::COOPERATIVE_LAUNCH,
                CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
            ),
            (
                attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            ),
            (
                attr::CAN_FLUSH_REMOTE_WRITES,
                CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
            ),
            (
                attr::HOST_REGISTER_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
            ),
            (
                attr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
            ),
            (
                attr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
                CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
            ),
            (
                attr::MAX_BLOCKS_PER_MULTIPROCESSOR,
                CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            ),
            (
                attr::MAX_PERSISTING_L2_CACHE_SIZE,
                CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
            ),
            (
                attr::MAX_ACCESS_POLICY_WINDOW_SIZE,
                CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
            ),
            (
                attr::SPARSE_CUDA_ARRAY_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
            ),
            (
                attr::HOST_REGISTER_READ_ONLY_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
            ),
            (
                attr::TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
            ),
            (
                attr::MEMORY_POOLS_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            ),
            (
                attr::GPUDIRECT_RDMASUPPORTED,
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
            ),
            (
                attr::GPUDIRECT_RDMAFLUSH_WRITES_OPTIONS,
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
            ),
            (
                attr::GPUDIRECT_RDMAWRITES_ORDERING,
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING,
            ),
            (
                attr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES,
                CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
            ),
            (attr::CLUSTER_LAUNCH, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH),
            (
                attr::DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
            ),
            (
                attr::IPC_EVENT_SUPPORT,
                CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED,
            ),
            (
                attr::MEM_SYNC_DOMAIN_COUNT,
                CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
            ),
            (attr::NUMA_CONFIG, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG),
            (attr::NUMA_ID, CU_DEVICE_ATTRIBUTE_NUMA_ID),
            (attr::MPS_ENABLED, CU_DEVICE_ATTRIBUTE_MPS_ENABLED),
            (attr::HOST_NUMA_ID, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID),
            (
                attr::D3_D12_CIG_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED,
            ),
            (
                attr::VULKAN_CIG_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED,
            ),
            (
                attr::GPU_PCI_DEVICE_ID,
                CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID,
            ),
            (
                attr::GPU_PCI_SUBSYSTEM_ID,
                CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID,
            ),
            (
                attr::HOST_NUMA_MEMORY_POOLS_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED,
            ),
            (
                attr::HOST_NUMA_MULTINODE_IPC_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED,
            ),
            (
                attr::HOST_MEMORY_POOLS_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
            ),
            (
                attr::ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED,
                CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED,
            ),
        ];
        assert_eq!(pairs.len(), 123);
        for (runtime, driver) in pairs {
            assert_eq!(runtime, driver as u32, "{driver:?}");
        }
    }

    #[test]
    fn fill_from_a_mocked_device() {
        let info = fill(&Mock);
        assert_eq!(&info.name[..21], b"NVIDIA H100 80GB HBM3");
        assert_eq!(info.name[21], 0);
        assert_eq!(info.uuid, *b"0123456789abcdef");
        assert_eq!(info.total_global_mem, 85_017_755_648);
        assert_eq!(info.attrs[0], 0);
        assert_eq!(info.attr(attr::MAX_THREADS_PER_BLOCK), Some(1001));
        assert_eq!(info.attr(attr::COMPUTE_CAPABILITY_MAJOR), Some(1075));
        assert_eq!(
            info.attr(attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            Some(1097)
        );
        assert_eq!(info.attr(147), Some(0), "not forwarded");
        assert_eq!(info.attr(146), Some(1146));
        assert_eq!(info.attr(93), Some(0), "not forwarded");
        assert_eq!(info.attr(148), Some(0));
        for &a in NOT_FORWARDED {
            assert_eq!(info.attr(a), Some(0), "{a}");
        }
        // Everything else came from the source, at its own index.
        let forwarded = (1..=147u32).filter(|a| !NOT_FORWARDED.contains(a)).count();
        let set = (1..=147u32)
            .filter(|&a| info.attr(a) == Some(1000 + a as i32))
            .count();
        assert_eq!(set, forwarded);
    }

    #[test]
    fn long_names_keep_their_nul() {
        struct Long;
        impl AttrSource for Long {
            fn name(&self) -> Vec<u8> {
                vec![b'x'; 400]
            }
            fn uuid(&self) -> [u8; 16] {
                [0; 16]
            }
            fn total_mem(&self) -> u64 {
                0
            }
            fn attribute(&self, _: CUdevice_attribute) -> Option<i32> {
                None
            }
        }
        let info = fill(&Long);
        assert_eq!(info.name[254], b'x');
        assert_eq!(info.name[255], 0);
    }
}
