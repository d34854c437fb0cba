// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `cudaDeviceAttr` numbers (CUDA 13.0 `driver_types.h`), indices into
//! [`crate::DeviceInfo::attrs`].

/// `cudaDevAttrMaxThreadsPerBlock`: Maximum number of threads per block.
pub const MAX_THREADS_PER_BLOCK: u32 = 1;
/// `cudaDevAttrMaxBlockDimX`: Maximum block dimension X.
pub const MAX_BLOCK_DIM_X: u32 = 2;
/// `cudaDevAttrMaxBlockDimY`: Maximum block dimension Y.
pub const MAX_BLOCK_DIM_Y: u32 = 3;
/// `cudaDevAttrMaxBlockDimZ`: Maximum block dimension Z.
pub const MAX_BLOCK_DIM_Z: u32 = 4;
/// `cudaDevAttrMaxGridDimX`: Maximum grid dimension X.
pub const MAX_GRID_DIM_X: u32 = 5;
/// `cudaDevAttrMaxGridDimY`: Maximum grid dimension Y.
pub const MAX_GRID_DIM_Y: u32 = 6;
/// `cudaDevAttrMaxGridDimZ`: Maximum grid dimension Z.
pub const MAX_GRID_DIM_Z: u32 = 7;
/// `cudaDevAttrMaxSharedMemoryPerBlock`: Maximum shared memory available per block in bytes.
pub const MAX_SHARED_MEMORY_PER_BLOCK: u32 = 8;
/// `cudaDevAttrTotalConstantMemory`: Memory available on device for __constant__ variables in a CUDA C kernel in bytes.
pub const TOTAL_CONSTANT_MEMORY: u32 = 9;
/// `cudaDevAttrWarpSize`: Warp size in threads.
pub const WARP_SIZE: u32 = 10;
/// `cudaDevAttrMaxPitch`: Maximum pitch in bytes allowed by memory copies.
pub const MAX_PITCH: u32 = 11;
/// `cudaDevAttrMaxRegistersPerBlock`: Maximum number of 32-bit registers available per block.
pub const MAX_REGISTERS_PER_BLOCK: u32 = 12;
/// `cudaDevAttrClockRate`: Peak clock frequency in kilohertz.
pub const CLOCK_RATE: u32 = 13;
/// `cudaDevAttrTextureAlignment`: Alignment requirement for textures.
pub const TEXTURE_ALIGNMENT: u32 = 14;
/// `cudaDevAttrGpuOverlap`: Device can possibly copy memory and execute a kernel concurrently.
pub const GPU_OVERLAP: u32 = 15;
/// `cudaDevAttrMultiProcessorCount`: Number of multiprocessors on device.
pub const MULTI_PROCESSOR_COUNT: u32 = 16;
/// `cudaDevAttrKernelExecTimeout`: Specifies whether there is a run time limit on kernels.
pub const KERNEL_EXEC_TIMEOUT: u32 = 17;
/// `cudaDevAttrIntegrated`: Device is integrated with host memory.
pub const INTEGRATED: u32 = 18;
/// `cudaDevAttrCanMapHostMemory`: Device can map host memory into CUDA address space.
pub const CAN_MAP_HOST_MEMORY: u32 = 19;
/// `cudaDevAttrComputeMode`: Compute mode (See cudaComputeMode for details).
pub const COMPUTE_MODE: u32 = 20;
/// `cudaDevAttrMaxTexture1DWidth`: Maximum 1D texture width.
pub const MAX_TEXTURE1_DWIDTH: u32 = 21;
/// `cudaDevAttrMaxTexture2DWidth`: Maximum 2D texture width.
pub const MAX_TEXTURE2_DWIDTH: u32 = 22;
/// `cudaDevAttrMaxTexture2DHeight`: Maximum 2D texture height.
pub const MAX_TEXTURE2_DHEIGHT: u32 = 23;
/// `cudaDevAttrMaxTexture3DWidth`: Maximum 3D texture width.
pub const MAX_TEXTURE3_DWIDTH: u32 = 24;
/// `cudaDevAttrMaxTexture3DHeight`: Maximum 3D texture height.
pub const MAX_TEXTURE3_DHEIGHT: u32 = 25;
/// `cudaDevAttrMaxTexture3DDepth`: Maximum 3D texture depth.
pub const MAX_TEXTURE3_DDEPTH: u32 = 26;
/// `cudaDevAttrMaxTexture2DLayeredWidth`: Maximum 2D layered texture width.
pub const MAX_TEXTURE2_DLAYERED_WIDTH: u32 = 27;
/// `cudaDevAttrMaxTexture2DLayeredHeight`: Maximum 2D layered texture height.
pub const MAX_TEXTURE2_DLAYERED_HEIGHT: u32 = 28;
/// `cudaDevAttrMaxTexture2DLayeredLayers`: Maximum layers in a 2D layered texture.
pub const MAX_TEXTURE2_DLAYERED_LAYERS: u32 = 29;
/// `cudaDevAttrSurfaceAlignment`: Alignment requirement for surfaces.
pub const SURFACE_ALIGNMENT: u32 = 30;
/// `cudaDevAttrConcurrentKernels`: Device can possibly execute multiple kernels concurrently.
pub const CONCURRENT_KERNELS: u32 = 31;
/// `cudaDevAttrEccEnabled`: Device has ECC support enabled.
pub const ECC_ENABLED: u32 = 32;
/// `cudaDevAttrPciBusId`: PCI bus ID of the device.
pub const PCI_BUS_ID: u32 = 33;
/// `cudaDevAttrPciDeviceId`: PCI device ID of the device.
pub const PCI_DEVICE_ID: u32 = 34;
/// `cudaDevAttrTccDriver`: Device is using TCC driver model.
pub const TCC_DRIVER: u32 = 35;
/// `cudaDevAttrMemoryClockRate`: Peak memory clock frequency in kilohertz.
pub const MEMORY_CLOCK_RATE: u32 = 36;
/// `cudaDevAttrGlobalMemoryBusWidth`: Global memory bus width in bits.
pub const GLOBAL_MEMORY_BUS_WIDTH: u32 = 37;
/// `cudaDevAttrL2CacheSize`: Size of L2 cache in bytes.
pub const L2_CACHE_SIZE: u32 = 38;
/// `cudaDevAttrMaxThreadsPerMultiProcessor`: Maximum resident threads per multiprocessor.
pub const MAX_THREADS_PER_MULTI_PROCESSOR: u32 = 39;
/// `cudaDevAttrAsyncEngineCount`: Number of asynchronous engines.
pub const ASYNC_ENGINE_COUNT: u32 = 40;
/// `cudaDevAttrUnifiedAddressing`: Device shares a unified address space with the host.
pub const UNIFIED_ADDRESSING: u32 = 41;
/// `cudaDevAttrMaxTexture1DLayeredWidth`: Maximum 1D layered texture width.
pub const MAX_TEXTURE1_DLAYERED_WIDTH: u32 = 42;
/// `cudaDevAttrMaxTexture1DLayeredLayers`: Maximum layers in a 1D layered texture.
pub const MAX_TEXTURE1_DLAYERED_LAYERS: u32 = 43;
/// `cudaDevAttrMaxTexture2DGatherWidth`: Maximum 2D texture width if cudaArrayTextureGather is set.
pub const MAX_TEXTURE2_DGATHER_WIDTH: u32 = 45;
/// `cudaDevAttrMaxTexture2DGatherHeight`: Maximum 2D texture height if cudaArrayTextureGather is set.
pub const MAX_TEXTURE2_DGATHER_HEIGHT: u32 = 46;
/// `cudaDevAttrMaxTexture3DWidthAlt`: Alternate maximum 3D texture width.
pub const MAX_TEXTURE3_DWIDTH_ALT: u32 = 47;
/// `cudaDevAttrMaxTexture3DHeightAlt`: Alternate maximum 3D texture height.
pub const MAX_TEXTURE3_DHEIGHT_ALT: u32 = 48;
/// `cudaDevAttrMaxTexture3DDepthAlt`: Alternate maximum 3D texture depth.
pub const MAX_TEXTURE3_DDEPTH_ALT: u32 = 49;
/// `cudaDevAttrPciDomainId`: PCI domain ID of the device.
pub const PCI_DOMAIN_ID: u32 = 50;
/// `cudaDevAttrTexturePitchAlignment`: Pitch alignment requirement for textures.
pub const TEXTURE_PITCH_ALIGNMENT: u32 = 51;
/// `cudaDevAttrMaxTextureCubemapWidth`: Maximum cubemap texture width/height.
pub const MAX_TEXTURE_CUBEMAP_WIDTH: u32 = 52;
/// `cudaDevAttrMaxTextureCubemapLayeredWidth`: Maximum cubemap layered texture width/height.
pub const MAX_TEXTURE_CUBEMAP_LAYERED_WIDTH: u32 = 53;
/// `cudaDevAttrMaxTextureCubemapLayeredLayers`: Maximum layers in a cubemap layered texture.
pub const MAX_TEXTURE_CUBEMAP_LAYERED_LAYERS: u32 = 54;
/// `cudaDevAttrMaxSurface1DWidth`: Maximum 1D surface width.
pub const MAX_SURFACE1_DWIDTH: u32 = 55;
/// `cudaDevAttrMaxSurface2DWidth`: Maximum 2D surface width.
pub const MAX_SURFACE2_DWIDTH: u32 = 56;
/// `cudaDevAttrMaxSurface2DHeight`: Maximum 2D surface height.
pub const MAX_SURFACE2_DHEIGHT: u32 = 57;
/// `cudaDevAttrMaxSurface3DWidth`: Maximum 3D surface width.
pub const MAX_SURFACE3_DWIDTH: u32 = 58;
/// `cudaDevAttrMaxSurface3DHeight`: Maximum 3D surface height.
pub const MAX_SURFACE3_DHEIGHT: u32 = 59;
/// `cudaDevAttrMaxSurface3DDepth`: Maximum 3D surface depth.
pub const MAX_SURFACE3_DDEPTH: u32 = 60;
/// `cudaDevAttrMaxSurface1DLayeredWidth`: Maximum 1D layered surface width.
pub const MAX_SURFACE1_DLAYERED_WIDTH: u32 = 61;
/// `cudaDevAttrMaxSurface1DLayeredLayers`: Maximum layers in a 1D layered surface.
pub const MAX_SURFACE1_DLAYERED_LAYERS: u32 = 62;
/// `cudaDevAttrMaxSurface2DLayeredWidth`: Maximum 2D layered surface width.
pub const MAX_SURFACE2_DLAYERED_WIDTH: u32 = 63;
/// `cudaDevAttrMaxSurface2DLayeredHeight`: Maximum 2D layered surface height.
pub const MAX_SURFACE2_DLAYERED_HEIGHT: u32 = 64;
/// `cudaDevAttrMaxSurface2DLayeredLayers`: Maximum layers in a 2D layered surface.
pub const MAX_SURFACE2_DLAYERED_LAYERS: u32 = 65;
/// `cudaDevAttrMaxSurfaceCubemapWidth`: Maximum cubemap surface width.
pub const MAX_SURFACE_CUBEMAP_WIDTH: u32 = 66;
/// `cudaDevAttrMaxSurfaceCubemapLayeredWidth`: Maximum cubemap layered surface width.
pub const MAX_SURFACE_CUBEMAP_LAYERED_WIDTH: u32 = 67;
/// `cudaDevAttrMaxSurfaceCubemapLayeredLayers`: Maximum layers in a cubemap layered surface.
pub const MAX_SURFACE_CUBEMAP_LAYERED_LAYERS: u32 = 68;
/// `cudaDevAttrMaxTexture1DLinearWidth`: Maximum 1D linear texture width.
pub const MAX_TEXTURE1_DLINEAR_WIDTH: u32 = 69;
/// `cudaDevAttrMaxTexture2DLinearWidth`: Maximum 2D linear texture width.
pub const MAX_TEXTURE2_DLINEAR_WIDTH: u32 = 70;
/// `cudaDevAttrMaxTexture2DLinearHeight`: Maximum 2D linear texture height.
pub const MAX_TEXTURE2_DLINEAR_HEIGHT: u32 = 71;
/// `cudaDevAttrMaxTexture2DLinearPitch`: Maximum 2D linear texture pitch in bytes.
pub const MAX_TEXTURE2_DLINEAR_PITCH: u32 = 72;
/// `cudaDevAttrMaxTexture2DMipmappedWidth`: Maximum mipmapped 2D texture width.
pub const MAX_TEXTURE2_DMIPMAPPED_WIDTH: u32 = 73;
/// `cudaDevAttrMaxTexture2DMipmappedHeight`: Maximum mipmapped 2D texture height.
pub const MAX_TEXTURE2_DMIPMAPPED_HEIGHT: u32 = 74;
/// `cudaDevAttrComputeCapabilityMajor`: Major compute capability version number.
pub const COMPUTE_CAPABILITY_MAJOR: u32 = 75;
/// `cudaDevAttrComputeCapabilityMinor`: Minor compute capability version number.
pub const COMPUTE_CAPABILITY_MINOR: u32 = 76;
/// `cudaDevAttrMaxTexture1DMipmappedWidth`: Maximum mipmapped 1D texture width.
pub const MAX_TEXTURE1_DMIPMAPPED_WIDTH: u32 = 77;
/// `cudaDevAttrStreamPrioritiesSupported`: Device supports stream priorities.
pub const STREAM_PRIORITIES_SUPPORTED: u32 = 78;
/// `cudaDevAttrGlobalL1CacheSupported`: Device supports caching globals in L1.
pub const GLOBAL_L1_CACHE_SUPPORTED: u32 = 79;
/// `cudaDevAttrLocalL1CacheSupported`: Device supports caching locals in L1.
pub const LOCAL_L1_CACHE_SUPPORTED: u32 = 80;
/// `cudaDevAttrMaxSharedMemoryPerMultiprocessor`: Maximum shared memory available per multiprocessor in bytes.
pub const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: u32 = 81;
/// `cudaDevAttrMaxRegistersPerMultiprocessor`: Maximum number of 32-bit registers available per multiprocessor.
pub const MAX_REGISTERS_PER_MULTIPROCESSOR: u32 = 82;
/// `cudaDevAttrManagedMemory`: Device can allocate managed memory on this system.
pub const MANAGED_MEMORY: u32 = 83;
/// `cudaDevAttrIsMultiGpuBoard`: Device is on a multi-GPU board.
pub const IS_MULTI_GPU_BOARD: u32 = 84;
/// `cudaDevAttrMultiGpuBoardGroupID`: Unique identifier for a group of devices on the same multi-GPU board.
pub const MULTI_GPU_BOARD_GROUP_ID: u32 = 85;
/// `cudaDevAttrHostNativeAtomicSupported`: Link between the device and the host supports native atomic operations.
pub const HOST_NATIVE_ATOMIC_SUPPORTED: u32 = 86;
/// `cudaDevAttrSingleToDoublePrecisionPerfRatio`: Ratio of single precision performance (in floating-point operations per second) to double precision performance.
pub const SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: u32 = 87;
/// `cudaDevAttrPageableMemoryAccess`: Device supports coherently accessing pageable memory without calling cudaHostRegister on it.
pub const PAGEABLE_MEMORY_ACCESS: u32 = 88;
/// `cudaDevAttrConcurrentManagedAccess`: Device can coherently access managed memory concurrently with the CPU.
pub const CONCURRENT_MANAGED_ACCESS: u32 = 89;
/// `cudaDevAttrComputePreemptionSupported`: Device supports Compute Preemption.
pub const COMPUTE_PREEMPTION_SUPPORTED: u32 = 90;
/// `cudaDevAttrCanUseHostPointerForRegisteredMem`: Device can access host registered memory at the same virtual address as the CPU.
pub const CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: u32 = 91;
/// `cudaDevAttrReserved92`: cudaDevAttrReserved92.
pub const RESERVED92: u32 = 92;
/// `cudaDevAttrReserved93`: cudaDevAttrReserved93.
pub const RESERVED93: u32 = 93;
/// `cudaDevAttrReserved94`: cudaDevAttrReserved94.
pub const RESERVED94: u32 = 94;
/// `cudaDevAttrCooperativeLaunch`: Device supports launching cooperative kernels via cudaLaunchCooperativeKernel.
pub const COOPERATIVE_LAUNCH: u32 = 95;
/// `cudaDevAttrReserved96`: cudaDevAttrReserved96.
pub const RESERVED96: u32 = 96;
/// `cudaDevAttrMaxSharedMemoryPerBlockOptin`: The maximum optin shared memory per block. This value may vary by chip. See cudaFuncSetAttribute.
pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: u32 = 97;
/// `cudaDevAttrCanFlushRemoteWrites`: Device supports flushing of outstanding remote writes.
pub const CAN_FLUSH_REMOTE_WRITES: u32 = 98;
/// `cudaDevAttrHostRegisterSupported`: Device supports host memory registration via cudaHostRegister.
pub const HOST_REGISTER_SUPPORTED: u32 = 99;
/// `cudaDevAttrPageableMemoryAccessUsesHostPageTables`: Device accesses pageable memory via the host's page tables.
pub const PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: u32 = 100;
/// `cudaDevAttrDirectManagedMemAccessFromHost`: Host can directly access managed memory on the device without migration.
pub const DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: u32 = 101;
/// `cudaDevAttrMaxBlocksPerMultiprocessor`: Maximum number of blocks per multiprocessor.
pub const MAX_BLOCKS_PER_MULTIPROCESSOR: u32 = 106;
/// `cudaDevAttrMaxPersistingL2CacheSize`: Maximum L2 persisting lines capacity setting in bytes.
pub const MAX_PERSISTING_L2_CACHE_SIZE: u32 = 108;
/// `cudaDevAttrMaxAccessPolicyWindowSize`: Maximum value of cudaAccessPolicyWindownum_bytes.
pub const MAX_ACCESS_POLICY_WINDOW_SIZE: u32 = 109;
/// `cudaDevAttrReservedSharedMemoryPerBlock`: Shared memory reserved by CUDA driver per block in bytes.
pub const RESERVED_SHARED_MEMORY_PER_BLOCK: u32 = 111;
/// `cudaDevAttrSparseCudaArraySupported`: Device supports sparse CUDA arrays and sparse CUDA mipmapped arrays.
pub const SPARSE_CUDA_ARRAY_SUPPORTED: u32 = 112;
/// `cudaDevAttrHostRegisterReadOnlySupported`: Device supports using the cudaHostRegister flag cudaHostRegisterReadOnly to register memory that must be mapped as read-only to the GPU.
pub const HOST_REGISTER_READ_ONLY_SUPPORTED: u32 = 113;
/// `cudaDevAttrTimelineSemaphoreInteropSupported`: External timeline semaphore interop is supported on the device.
pub const TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: u32 = 114;
/// `cudaDevAttrMemoryPoolsSupported`: Device supports using the cudaMallocAsync and cudaMemPool family of APIs.
pub const MEMORY_POOLS_SUPPORTED: u32 = 115;
/// `cudaDevAttrGPUDirectRDMASupported`: Device supports GPUDirect RDMA APIs, like nvidia_p2p_get_pages (see the GPUDirect RDMA documentation).
pub const GPUDIRECT_RDMASUPPORTED: u32 = 116;
/// `cudaDevAttrGPUDirectRDMAFlushWritesOptions`: The returned attribute shall be interpreted as a bitmask, where the individual bits are listed in the cudaFlushGPUDirectRDMAWritesOptions enum.
pub const GPUDIRECT_RDMAFLUSH_WRITES_OPTIONS: u32 = 117;
/// `cudaDevAttrGPUDirectRDMAWritesOrdering`: GPUDirect RDMA writes to the device do not need to be flushed for consumers within the scope indicated by the returned attribute. See cudaGPUDirectRDMAWritesOrdering for the numerical values returned here.
pub const GPUDIRECT_RDMAWRITES_ORDERING: u32 = 118;
/// `cudaDevAttrMemoryPoolSupportedHandleTypes`: Handle types supported with mempool based IPC.
pub const MEMORY_POOL_SUPPORTED_HANDLE_TYPES: u32 = 119;
/// `cudaDevAttrClusterLaunch`: Indicates device supports cluster launch.
pub const CLUSTER_LAUNCH: u32 = 120;
/// `cudaDevAttrDeferredMappingCudaArraySupported`: Device supports deferred mapping CUDA arrays and CUDA mipmapped arrays.
pub const DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: u32 = 121;
/// `cudaDevAttrReserved122`: cudaDevAttrReserved122.
pub const RESERVED122: u32 = 122;
/// `cudaDevAttrReserved123`: cudaDevAttrReserved123.
pub const RESERVED123: u32 = 123;
/// `cudaDevAttrReserved124`: cudaDevAttrReserved124.
pub const RESERVED124: u32 = 124;
/// `cudaDevAttrIpcEventSupport`: Device supports IPC Events.
pub const IPC_EVENT_SUPPORT: u32 = 125;
/// `cudaDevAttrMemSyncDomainCount`: Number of memory synchronization domains the device supports.
pub const MEM_SYNC_DOMAIN_COUNT: u32 = 126;
/// `cudaDevAttrReserved127`: cudaDevAttrReserved127.
pub const RESERVED127: u32 = 127;
/// `cudaDevAttrReserved128`: cudaDevAttrReserved128.
pub const RESERVED128: u32 = 128;
/// `cudaDevAttrReserved129`: cudaDevAttrReserved129.
pub const RESERVED129: u32 = 129;
/// `cudaDevAttrNumaConfig`: NUMA configuration of a device: value is of type cudaDeviceNumaConfig enum.
pub const NUMA_CONFIG: u32 = 130;
/// `cudaDevAttrNumaId`: NUMA node ID of the GPU memory.
pub const NUMA_ID: u32 = 131;
/// `cudaDevAttrReserved132`: cudaDevAttrReserved132.
pub const RESERVED132: u32 = 132;
/// `cudaDevAttrMpsEnabled`: Contexts created on this device will be shared via MPS.
pub const MPS_ENABLED: u32 = 133;
/// `cudaDevAttrHostNumaId`: NUMA ID of the host node closest to the device or -1 when system does not support NUMA.
pub const HOST_NUMA_ID: u32 = 134;
/// `cudaDevAttrD3D12CigSupported`: Device supports CIG with D3D12.
pub const D3_D12_CIG_SUPPORTED: u32 = 135;
/// `cudaDevAttrVulkanCigSupported`: Device supports CIG with Vulkan.
pub const VULKAN_CIG_SUPPORTED: u32 = 138;
/// `cudaDevAttrGpuPciDeviceId`: The combined 16-bit PCI device ID and 16-bit PCI vendor ID.
pub const GPU_PCI_DEVICE_ID: u32 = 139;
/// `cudaDevAttrGpuPciSubsystemId`: The combined 16-bit PCI subsystem ID and 16-bit PCI subsystem vendor ID.
pub const GPU_PCI_SUBSYSTEM_ID: u32 = 140;
/// `cudaDevAttrReserved141`: cudaDevAttrReserved141.
pub const RESERVED141: u32 = 141;
/// `cudaDevAttrHostNumaMemoryPoolsSupported`: Device supports HOST_NUMA location with the cudaMallocAsync and cudaMemPool family of APIs.
pub const HOST_NUMA_MEMORY_POOLS_SUPPORTED: u32 = 142;
/// `cudaDevAttrHostNumaMultinodeIpcSupported`: Device supports HostNuma location IPC between nodes in a multi-node system.
pub const HOST_NUMA_MULTINODE_IPC_SUPPORTED: u32 = 143;
/// `cudaDevAttrHostMemoryPoolsSupported`: Device suports HOST location with the cuMemAllocAsync and cuMemPool family of APIs.
pub const HOST_MEMORY_POOLS_SUPPORTED: u32 = 144;
/// `cudaDevAttrReserved145`: cudaDevAttrReserved145.
pub const RESERVED145: u32 = 145;
/// `cudaDevAttrOnlyPartialHostNativeAtomicSupported`: Link between the device and the host supports only some native atomic operations.
pub const ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED: u32 = 147;

// Driver-only attributes (`CUdevice_attribute`, CUDA 13.0 `cuda.h`): numbers the runtime's
// enumeration skips, which `cuDeviceGetAttribute` reads from the same table.

/// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`: `cuMemAddressReserve`,
/// `cuMemCreate`, `cuMemMap` and related calls.
pub const VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: u32 = 102;
/// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED`: `cuMemCreate`
/// allocations exportable as POSIX file descriptors.
pub const HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: u32 = 103;
/// `CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED`: compressible `cuMemCreate`
/// allocations.
pub const GENERIC_COMPRESSION_SUPPORTED: u32 = 107;
/// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`: GPUDirect RDMA with
/// `cuMemCreate` allocations.
pub const GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: u32 = 110;
