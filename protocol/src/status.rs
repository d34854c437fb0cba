// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA runtime status codes (`cudaError_t`), with the names and messages libcudart 13.0 gives them.
//!
//! Generated from libcudart.so.13 (13.0.96): `cudaGetErrorName`/`cudaGetErrorString` for every code.

/// A `cudaError_t` value as it travels on the wire.
pub type CudaStatus = u32;

/// `cudaSuccess`: no error.
pub const SUCCESS: CudaStatus = 0;
/// `cudaErrorInvalidValue`: invalid argument.
pub const INVALID_VALUE: CudaStatus = 1;
/// `cudaErrorMemoryAllocation`: out of memory.
pub const MEMORY_ALLOCATION: CudaStatus = 2;
/// `cudaErrorInitializationError`: initialization error.
pub const INITIALIZATION_ERROR: CudaStatus = 3;
/// `cudaErrorCudartUnloading`: driver shutting down.
pub const CUDART_UNLOADING: CudaStatus = 4;
/// `cudaErrorProfilerDisabled`: profiler disabled while using external profiling tool.
pub const PROFILER_DISABLED: CudaStatus = 5;
/// `cudaErrorProfilerNotInitialized`: profiler not initialized: call cudaProfilerInitialize().
pub const PROFILER_NOT_INITIALIZED: CudaStatus = 6;
/// `cudaErrorProfilerAlreadyStarted`: profiler already started.
pub const PROFILER_ALREADY_STARTED: CudaStatus = 7;
/// `cudaErrorProfilerAlreadyStopped`: profiler already stopped.
pub const PROFILER_ALREADY_STOPPED: CudaStatus = 8;
/// `cudaErrorInvalidConfiguration`: invalid configuration argument.
pub const INVALID_CONFIGURATION: CudaStatus = 9;
/// `cudaErrorInvalidPitchValue`: invalid pitch argument.
pub const INVALID_PITCH_VALUE: CudaStatus = 12;
/// `cudaErrorInvalidSymbol`: invalid device symbol.
pub const INVALID_SYMBOL: CudaStatus = 13;
/// `cudaErrorInvalidHostPointer`: invalid host pointer.
pub const INVALID_HOST_POINTER: CudaStatus = 16;
/// `cudaErrorInvalidDevicePointer`: invalid device pointer.
pub const INVALID_DEVICE_POINTER: CudaStatus = 17;
/// `cudaErrorInvalidTexture`: invalid texture reference.
pub const INVALID_TEXTURE: CudaStatus = 18;
/// `cudaErrorInvalidTextureBinding`: texture is not bound to a pointer.
pub const INVALID_TEXTURE_BINDING: CudaStatus = 19;
/// `cudaErrorInvalidChannelDescriptor`: invalid channel descriptor.
pub const INVALID_CHANNEL_DESCRIPTOR: CudaStatus = 20;
/// `cudaErrorInvalidMemcpyDirection`: invalid copy direction for memcpy.
pub const INVALID_MEMCPY_DIRECTION: CudaStatus = 21;
/// `cudaErrorAddressOfConstant`: invalid address of constant.
pub const ADDRESS_OF_CONSTANT: CudaStatus = 22;
/// `cudaErrorTextureFetchFailed`: fetch from texture failed.
pub const TEXTURE_FETCH_FAILED: CudaStatus = 23;
/// `cudaErrorTextureNotBound`: cannot fetch from a texture that is not bound.
pub const TEXTURE_NOT_BOUND: CudaStatus = 24;
/// `cudaErrorSynchronizationError`: incorrect use of __syncthreads().
pub const SYNCHRONIZATION_ERROR: CudaStatus = 25;
/// `cudaErrorInvalidFilterSetting`: linear filtering not supported for non-float type.
pub const INVALID_FILTER_SETTING: CudaStatus = 26;
/// `cudaErrorInvalidNormSetting`: read as normalized float not supported for data type.
pub const INVALID_NORM_SETTING: CudaStatus = 27;
/// `cudaErrorMixedDeviceExecution`: device emulation mode and device execution mode cannot be mixed.
pub const MIXED_DEVICE_EXECUTION: CudaStatus = 28;
/// `cudaErrorNotYetImplemented`: feature not yet implemented.
pub const NOT_YET_IMPLEMENTED: CudaStatus = 31;
/// `cudaErrorMemoryValueTooLarge`: memory size or pointer value too large to fit in 32 bit.
pub const MEMORY_VALUE_TOO_LARGE: CudaStatus = 32;
/// `cudaErrorStubLibrary`: CUDA driver is a stub library.
pub const STUB_LIBRARY: CudaStatus = 34;
/// `cudaErrorInsufficientDriver`: CUDA driver version is insufficient for CUDA runtime version.
pub const INSUFFICIENT_DRIVER: CudaStatus = 35;
/// `cudaErrorCallRequiresNewerDriver`: API call is not supported in the installed CUDA driver.
pub const CALL_REQUIRES_NEWER_DRIVER: CudaStatus = 36;
/// `cudaErrorInvalidSurface`: invalid surface reference.
pub const INVALID_SURFACE: CudaStatus = 37;
/// `cudaErrorDuplicateVariableName`: duplicate global variable looked up by string name.
pub const DUPLICATE_VARIABLE_NAME: CudaStatus = 43;
/// `cudaErrorDuplicateTextureName`: duplicate texture looked up by string name.
pub const DUPLICATE_TEXTURE_NAME: CudaStatus = 44;
/// `cudaErrorDuplicateSurfaceName`: duplicate surface looked up by string name.
pub const DUPLICATE_SURFACE_NAME: CudaStatus = 45;
/// `cudaErrorDevicesUnavailable`: CUDA-capable device(s) is/are busy or unavailable.
pub const DEVICES_UNAVAILABLE: CudaStatus = 46;
/// `cudaErrorIncompatibleDriverContext`: incompatible driver context.
pub const INCOMPATIBLE_DRIVER_CONTEXT: CudaStatus = 49;
/// `cudaErrorMissingConfiguration`: __global__ function call is not configured.
pub const MISSING_CONFIGURATION: CudaStatus = 52;
/// `cudaErrorPriorLaunchFailure`: unspecified launch failure in prior launch.
pub const PRIOR_LAUNCH_FAILURE: CudaStatus = 53;
/// `cudaErrorLaunchMaxDepthExceeded`: launch would exceed maximum depth of nested launches.
pub const LAUNCH_MAX_DEPTH_EXCEEDED: CudaStatus = 65;
/// `cudaErrorLaunchFileScopedTex`: launch failed because kernel uses unsupported, file-scoped textures (texture objects are supported).
pub const LAUNCH_FILE_SCOPED_TEX: CudaStatus = 66;
/// `cudaErrorLaunchFileScopedSurf`: launch failed because kernel uses unsupported, file-scoped surfaces (surface objects are supported).
pub const LAUNCH_FILE_SCOPED_SURF: CudaStatus = 67;
/// `cudaErrorSyncDepthExceeded`: cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth.
pub const SYNC_DEPTH_EXCEEDED: CudaStatus = 68;
/// `cudaErrorLaunchPendingCountExceeded`: launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount.
pub const LAUNCH_PENDING_COUNT_EXCEEDED: CudaStatus = 69;
/// `cudaErrorInvalidDeviceFunction`: invalid device function.
pub const INVALID_DEVICE_FUNCTION: CudaStatus = 98;
/// `cudaErrorNoDevice`: no CUDA-capable device is detected.
pub const NO_DEVICE: CudaStatus = 100;
/// `cudaErrorInvalidDevice`: invalid device ordinal.
pub const INVALID_DEVICE: CudaStatus = 101;
/// `cudaErrorDeviceNotLicensed`: device doesn't have valid Grid license.
pub const DEVICE_NOT_LICENSED: CudaStatus = 102;
/// `cudaErrorSoftwareValidityNotEstablished`: integrity checks failed.
pub const SOFTWARE_VALIDITY_NOT_ESTABLISHED: CudaStatus = 103;
/// `cudaErrorStartupFailure`: startup failure in cuda runtime.
pub const STARTUP_FAILURE: CudaStatus = 127;
/// `cudaErrorInvalidKernelImage`: device kernel image is invalid.
pub const INVALID_KERNEL_IMAGE: CudaStatus = 200;
/// `cudaErrorDeviceUninitialized`: invalid device context.
pub const DEVICE_UNINITIALIZED: CudaStatus = 201;
/// `cudaErrorMapBufferObjectFailed`: mapping of buffer object failed.
pub const MAP_BUFFER_OBJECT_FAILED: CudaStatus = 205;
/// `cudaErrorUnmapBufferObjectFailed`: unmapping of buffer object failed.
pub const UNMAP_BUFFER_OBJECT_FAILED: CudaStatus = 206;
/// `cudaErrorArrayIsMapped`: array is mapped.
pub const ARRAY_IS_MAPPED: CudaStatus = 207;
/// `cudaErrorAlreadyMapped`: resource already mapped.
pub const ALREADY_MAPPED: CudaStatus = 208;
/// `cudaErrorNoKernelImageForDevice`: no kernel image is available for execution on the device.
pub const NO_KERNEL_IMAGE_FOR_DEVICE: CudaStatus = 209;
/// `cudaErrorAlreadyAcquired`: resource already acquired.
pub const ALREADY_ACQUIRED: CudaStatus = 210;
/// `cudaErrorNotMapped`: resource not mapped.
pub const NOT_MAPPED: CudaStatus = 211;
/// `cudaErrorNotMappedAsArray`: resource not mapped as array.
pub const NOT_MAPPED_AS_ARRAY: CudaStatus = 212;
/// `cudaErrorNotMappedAsPointer`: resource not mapped as pointer.
pub const NOT_MAPPED_AS_POINTER: CudaStatus = 213;
/// `cudaErrorECCUncorrectable`: uncorrectable ECC error encountered.
pub const ECCUNCORRECTABLE: CudaStatus = 214;
/// `cudaErrorUnsupportedLimit`: limit is not supported on this architecture.
pub const UNSUPPORTED_LIMIT: CudaStatus = 215;
/// `cudaErrorDeviceAlreadyInUse`: exclusive-thread device already in use by a different thread.
pub const DEVICE_ALREADY_IN_USE: CudaStatus = 216;
/// `cudaErrorPeerAccessUnsupported`: peer access is not supported between these two devices.
pub const PEER_ACCESS_UNSUPPORTED: CudaStatus = 217;
/// `cudaErrorInvalidPtx`: a PTX JIT compilation failed.
pub const INVALID_PTX: CudaStatus = 218;
/// `cudaErrorInvalidGraphicsContext`: invalid OpenGL or DirectX context.
pub const INVALID_GRAPHICS_CONTEXT: CudaStatus = 219;
/// `cudaErrorNvlinkUncorrectable`: uncorrectable NVLink error detected during the execution.
pub const NVLINK_UNCORRECTABLE: CudaStatus = 220;
/// `cudaErrorJitCompilerNotFound`: PTX JIT compiler library not found.
pub const JIT_COMPILER_NOT_FOUND: CudaStatus = 221;
/// `cudaErrorUnsupportedPtxVersion`: the provided PTX was compiled with an unsupported toolchain..
pub const UNSUPPORTED_PTX_VERSION: CudaStatus = 222;
/// `cudaErrorJitCompilationDisabled`: PTX JIT compilation was disabled.
pub const JIT_COMPILATION_DISABLED: CudaStatus = 223;
/// `cudaErrorUnsupportedExecAffinity`: the provided execution affinity is not supported.
pub const UNSUPPORTED_EXEC_AFFINITY: CudaStatus = 224;
/// `cudaErrorUnsupportedDevSideSync`: the provided PTX contains unsupported call to cudaDeviceSynchronize.
pub const UNSUPPORTED_DEV_SIDE_SYNC: CudaStatus = 225;
/// `cudaErrorContained`: Invalid access of peer GPU memory over nvlink or a hardware error.
pub const CONTAINED: CudaStatus = 226;
/// `cudaErrorInvalidSource`: device kernel image is invalid.
pub const INVALID_SOURCE: CudaStatus = 300;
/// `cudaErrorFileNotFound`: file not found.
pub const FILE_NOT_FOUND: CudaStatus = 301;
/// `cudaErrorSharedObjectSymbolNotFound`: shared object symbol not found.
pub const SHARED_OBJECT_SYMBOL_NOT_FOUND: CudaStatus = 302;
/// `cudaErrorSharedObjectInitFailed`: shared object initialization failed.
pub const SHARED_OBJECT_INIT_FAILED: CudaStatus = 303;
/// `cudaErrorOperatingSystem`: OS call failed or operation not supported on this OS.
pub const OPERATING_SYSTEM: CudaStatus = 304;
/// `cudaErrorInvalidResourceHandle`: invalid resource handle.
pub const INVALID_RESOURCE_HANDLE: CudaStatus = 400;
/// `cudaErrorIllegalState`: the operation cannot be performed in the present state.
pub const ILLEGAL_STATE: CudaStatus = 401;
/// `cudaErrorLossyQuery`: attempted introspection would be semantically lossy.
pub const LOSSY_QUERY: CudaStatus = 402;
/// `cudaErrorSymbolNotFound`: named symbol not found.
pub const SYMBOL_NOT_FOUND: CudaStatus = 500;
/// `cudaErrorNotReady`: device not ready.
pub const NOT_READY: CudaStatus = 600;
/// `cudaErrorIllegalAddress`: an illegal memory access was encountered.
pub const ILLEGAL_ADDRESS: CudaStatus = 700;
/// `cudaErrorLaunchOutOfResources`: too many resources requested for launch.
pub const LAUNCH_OUT_OF_RESOURCES: CudaStatus = 701;
/// `cudaErrorLaunchTimeout`: the launch timed out and was terminated.
pub const LAUNCH_TIMEOUT: CudaStatus = 702;
/// `cudaErrorLaunchIncompatibleTexturing`: launch uses incompatible texturing mode.
pub const LAUNCH_INCOMPATIBLE_TEXTURING: CudaStatus = 703;
/// `cudaErrorPeerAccessAlreadyEnabled`: peer access is already enabled.
pub const PEER_ACCESS_ALREADY_ENABLED: CudaStatus = 704;
/// `cudaErrorPeerAccessNotEnabled`: peer access has not been enabled.
pub const PEER_ACCESS_NOT_ENABLED: CudaStatus = 705;
/// `cudaErrorSetOnActiveProcess`: cannot set while device is active in this process.
pub const SET_ON_ACTIVE_PROCESS: CudaStatus = 708;
/// `cudaErrorContextIsDestroyed`: context is destroyed.
pub const CONTEXT_IS_DESTROYED: CudaStatus = 709;
/// `cudaErrorAssert`: device-side assert triggered.
pub const ASSERT: CudaStatus = 710;
/// `cudaErrorTooManyPeers`: peer mapping resources exhausted.
pub const TOO_MANY_PEERS: CudaStatus = 711;
/// `cudaErrorHostMemoryAlreadyRegistered`: part or all of the requested memory range is already mapped.
pub const HOST_MEMORY_ALREADY_REGISTERED: CudaStatus = 712;
/// `cudaErrorHostMemoryNotRegistered`: pointer does not correspond to a registered memory region.
pub const HOST_MEMORY_NOT_REGISTERED: CudaStatus = 713;
/// `cudaErrorHardwareStackError`: hardware stack error.
pub const HARDWARE_STACK_ERROR: CudaStatus = 714;
/// `cudaErrorIllegalInstruction`: an illegal instruction was encountered.
pub const ILLEGAL_INSTRUCTION: CudaStatus = 715;
/// `cudaErrorMisalignedAddress`: misaligned address.
pub const MISALIGNED_ADDRESS: CudaStatus = 716;
/// `cudaErrorInvalidAddressSpace`: operation not supported on global/shared address space.
pub const INVALID_ADDRESS_SPACE: CudaStatus = 717;
/// `cudaErrorInvalidPc`: invalid program counter.
pub const INVALID_PC: CudaStatus = 718;
/// `cudaErrorLaunchFailure`: unspecified launch failure.
pub const LAUNCH_FAILURE: CudaStatus = 719;
/// `cudaErrorCooperativeLaunchTooLarge`: too many blocks in cooperative launch.
pub const COOPERATIVE_LAUNCH_TOO_LARGE: CudaStatus = 720;
/// `cudaErrorTensorMemoryLeak`: tensor memory not completely freed.
pub const TENSOR_MEMORY_LEAK: CudaStatus = 721;
/// `cudaErrorNotPermitted`: operation not permitted.
pub const NOT_PERMITTED: CudaStatus = 800;
/// `cudaErrorNotSupported`: operation not supported.
pub const NOT_SUPPORTED: CudaStatus = 801;
/// `cudaErrorSystemNotReady`: system not yet initialized.
pub const SYSTEM_NOT_READY: CudaStatus = 802;
/// `cudaErrorSystemDriverMismatch`: system has unsupported display driver / cuda driver combination.
pub const SYSTEM_DRIVER_MISMATCH: CudaStatus = 803;
/// `cudaErrorCompatNotSupportedOnDevice`: forward compatibility was attempted on non supported HW.
pub const COMPAT_NOT_SUPPORTED_ON_DEVICE: CudaStatus = 804;
/// `cudaErrorMpsConnectionFailed`: MPS client failed to connect to the MPS control daemon or the MPS server.
pub const MPS_CONNECTION_FAILED: CudaStatus = 805;
/// `cudaErrorMpsRpcFailure`: the remote procedural call between the MPS server and the MPS client failed.
pub const MPS_RPC_FAILURE: CudaStatus = 806;
/// `cudaErrorMpsServerNotReady`: MPS server is not ready to accept new MPS client requests.
pub const MPS_SERVER_NOT_READY: CudaStatus = 807;
/// `cudaErrorMpsMaxClientsReached`: the hardware resources required to create MPS client have been exhausted.
pub const MPS_MAX_CLIENTS_REACHED: CudaStatus = 808;
/// `cudaErrorMpsMaxConnectionsReached`: the hardware resources required to support device connections have been exhausted.
pub const MPS_MAX_CONNECTIONS_REACHED: CudaStatus = 809;
/// `cudaErrorMpsClientTerminated`: the MPS client has been terminated by the server.
pub const MPS_CLIENT_TERMINATED: CudaStatus = 810;
/// `cudaErrorCdpNotSupported`: is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it.
pub const CDP_NOT_SUPPORTED: CudaStatus = 811;
/// `cudaErrorCdpVersionMismatch`: unsupported interaction between different versions of CUDA Dynamic Parallelism.
pub const CDP_VERSION_MISMATCH: CudaStatus = 812;
/// `cudaErrorStreamCaptureUnsupported`: operation not permitted when stream is capturing.
pub const STREAM_CAPTURE_UNSUPPORTED: CudaStatus = 900;
/// `cudaErrorStreamCaptureInvalidated`: operation failed due to a previous error during capture.
pub const STREAM_CAPTURE_INVALIDATED: CudaStatus = 901;
/// `cudaErrorStreamCaptureMerge`: operation would result in a merge of separate capture sequences.
pub const STREAM_CAPTURE_MERGE: CudaStatus = 902;
/// `cudaErrorStreamCaptureUnmatched`: capture was not ended in the same stream as it began.
pub const STREAM_CAPTURE_UNMATCHED: CudaStatus = 903;
/// `cudaErrorStreamCaptureUnjoined`: capturing stream has unjoined work.
pub const STREAM_CAPTURE_UNJOINED: CudaStatus = 904;
/// `cudaErrorStreamCaptureIsolation`: dependency created on uncaptured work in another stream.
pub const STREAM_CAPTURE_ISOLATION: CudaStatus = 905;
/// `cudaErrorStreamCaptureImplicit`: operation would make the legacy stream depend on a capturing blocking stream.
pub const STREAM_CAPTURE_IMPLICIT: CudaStatus = 906;
/// `cudaErrorCapturedEvent`: operation not permitted on an event last recorded in a capturing stream.
pub const CAPTURED_EVENT: CudaStatus = 907;
/// `cudaErrorStreamCaptureWrongThread`: attempt to terminate a thread-local capture sequence from another thread.
pub const STREAM_CAPTURE_WRONG_THREAD: CudaStatus = 908;
/// `cudaErrorTimeout`: wait operation timed out.
pub const TIMEOUT: CudaStatus = 909;
/// `cudaErrorGraphExecUpdateFailure`: the graph update was not performed because it included changes which violated constraints specific to instantiated graph update.
pub const GRAPH_EXEC_UPDATE_FAILURE: CudaStatus = 910;
/// `cudaErrorExternalDevice`: an async error has occured in external entity outside of CUDA.
pub const EXTERNAL_DEVICE: CudaStatus = 911;
/// `cudaErrorInvalidClusterSize`: a kernel launch error has occurred due to cluster misconfiguration.
pub const INVALID_CLUSTER_SIZE: CudaStatus = 912;
/// `cudaErrorFunctionNotLoaded`: the function handle is not loaded when calling an API that requires a loaded function.
pub const FUNCTION_NOT_LOADED: CudaStatus = 913;
/// `cudaErrorInvalidResourceType`: one or more resources passed in are not valid resource types for the operation.
pub const INVALID_RESOURCE_TYPE: CudaStatus = 914;
/// `cudaErrorInvalidResourceConfiguration`: one or more resources are insufficient or non-applicable for the operation.
pub const INVALID_RESOURCE_CONFIGURATION: CudaStatus = 915;
/// `cudaErrorUnknown`: unknown error.
pub const UNKNOWN: CudaStatus = 999;

/// `(code, name, message)` for every status libcudart 13.0 knows, sorted by code.
pub const TABLE: &[(CudaStatus, &str, &str)] = &[
    (0, "cudaSuccess", "no error"),
    (1, "cudaErrorInvalidValue", "invalid argument"),
    (2, "cudaErrorMemoryAllocation", "out of memory"),
    (3, "cudaErrorInitializationError", "initialization error"),
    (4, "cudaErrorCudartUnloading", "driver shutting down"),
    (
        5,
        "cudaErrorProfilerDisabled",
        "profiler disabled while using external profiling tool",
    ),
    (
        6,
        "cudaErrorProfilerNotInitialized",
        "profiler not initialized: call cudaProfilerInitialize()",
    ),
    (
        7,
        "cudaErrorProfilerAlreadyStarted",
        "profiler already started",
    ),
    (
        8,
        "cudaErrorProfilerAlreadyStopped",
        "profiler already stopped",
    ),
    (
        9,
        "cudaErrorInvalidConfiguration",
        "invalid configuration argument",
    ),
    (12, "cudaErrorInvalidPitchValue", "invalid pitch argument"),
    (13, "cudaErrorInvalidSymbol", "invalid device symbol"),
    (16, "cudaErrorInvalidHostPointer", "invalid host pointer"),
    (
        17,
        "cudaErrorInvalidDevicePointer",
        "invalid device pointer",
    ),
    (18, "cudaErrorInvalidTexture", "invalid texture reference"),
    (
        19,
        "cudaErrorInvalidTextureBinding",
        "texture is not bound to a pointer",
    ),
    (
        20,
        "cudaErrorInvalidChannelDescriptor",
        "invalid channel descriptor",
    ),
    (
        21,
        "cudaErrorInvalidMemcpyDirection",
        "invalid copy direction for memcpy",
    ),
    (
        22,
        "cudaErrorAddressOfConstant",
        "invalid address of constant",
    ),
    (
        23,
        "cudaErrorTextureFetchFailed",
        "fetch from texture failed",
    ),
    (
        24,
        "cudaErrorTextureNotBound",
        "cannot fetch from a texture that is not bound",
    ),
    (
        25,
        "cudaErrorSynchronizationError",
        "incorrect use of __syncthreads()",
    ),
    (
        26,
        "cudaErrorInvalidFilterSetting",
        "linear filtering not supported for non-float type",
    ),
    (
        27,
        "cudaErrorInvalidNormSetting",
        "read as normalized float not supported for data type",
    ),
    (
        28,
        "cudaErrorMixedDeviceExecution",
        "device emulation mode and device execution mode cannot be mixed",
    ),
    (
        31,
        "cudaErrorNotYetImplemented",
        "feature not yet implemented",
    ),
    (
        32,
        "cudaErrorMemoryValueTooLarge",
        "memory size or pointer value too large to fit in 32 bit",
    ),
    (34, "cudaErrorStubLibrary", "CUDA driver is a stub library"),
    (
        35,
        "cudaErrorInsufficientDriver",
        "CUDA driver version is insufficient for CUDA runtime version",
    ),
    (
        36,
        "cudaErrorCallRequiresNewerDriver",
        "API call is not supported in the installed CUDA driver",
    ),
    (37, "cudaErrorInvalidSurface", "invalid surface reference"),
    (
        43,
        "cudaErrorDuplicateVariableName",
        "duplicate global variable looked up by string name",
    ),
    (
        44,
        "cudaErrorDuplicateTextureName",
        "duplicate texture looked up by string name",
    ),
    (
        45,
        "cudaErrorDuplicateSurfaceName",
        "duplicate surface looked up by string name",
    ),
    (
        46,
        "cudaErrorDevicesUnavailable",
        "CUDA-capable device(s) is/are busy or unavailable",
    ),
    (
        49,
        "cudaErrorIncompatibleDriverContext",
        "incompatible driver context",
    ),
    (
        52,
        "cudaErrorMissingConfiguration",
        "__global__ function call is not configured",
    ),
    (
        53,
        "cudaErrorPriorLaunchFailure",
        "unspecified launch failure in prior launch",
    ),
    (
        65,
        "cudaErrorLaunchMaxDepthExceeded",
        "launch would exceed maximum depth of nested launches",
    ),
    (
        66,
        "cudaErrorLaunchFileScopedTex",
        "launch failed because kernel uses unsupported, file-scoped textures (texture objects are supported)",
    ),
    (
        67,
        "cudaErrorLaunchFileScopedSurf",
        "launch failed because kernel uses unsupported, file-scoped surfaces (surface objects are supported)",
    ),
    (
        68,
        "cudaErrorSyncDepthExceeded",
        "cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth",
    ),
    (
        69,
        "cudaErrorLaunchPendingCountExceeded",
        "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount",
    ),
    (
        98,
        "cudaErrorInvalidDeviceFunction",
        "invalid device function",
    ),
    (
        100,
        "cudaErrorNoDevice",
        "no CUDA-capable device is detected",
    ),
    (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
    (
        102,
        "cudaErrorDeviceNotLicensed",
        "device doesn't have valid Grid license",
    ),
    (
        103,
        "cudaErrorSoftwareValidityNotEstablished",
        "integrity checks failed",
    ),
    (
        127,
        "cudaErrorStartupFailure",
        "startup failure in cuda runtime",
    ),
    (
        200,
        "cudaErrorInvalidKernelImage",
        "device kernel image is invalid",
    ),
    (
        201,
        "cudaErrorDeviceUninitialized",
        "invalid device context",
    ),
    (
        205,
        "cudaErrorMapBufferObjectFailed",
        "mapping of buffer object failed",
    ),
    (
        206,
        "cudaErrorUnmapBufferObjectFailed",
        "unmapping of buffer object failed",
    ),
    (207, "cudaErrorArrayIsMapped", "array is mapped"),
    (208, "cudaErrorAlreadyMapped", "resource already mapped"),
    (
        209,
        "cudaErrorNoKernelImageForDevice",
        "no kernel image is available for execution on the device",
    ),
    (210, "cudaErrorAlreadyAcquired", "resource already acquired"),
    (211, "cudaErrorNotMapped", "resource not mapped"),
    (
        212,
        "cudaErrorNotMappedAsArray",
        "resource not mapped as array",
    ),
    (
        213,
        "cudaErrorNotMappedAsPointer",
        "resource not mapped as pointer",
    ),
    (
        214,
        "cudaErrorECCUncorrectable",
        "uncorrectable ECC error encountered",
    ),
    (
        215,
        "cudaErrorUnsupportedLimit",
        "limit is not supported on this architecture",
    ),
    (
        216,
        "cudaErrorDeviceAlreadyInUse",
        "exclusive-thread device already in use by a different thread",
    ),
    (
        217,
        "cudaErrorPeerAccessUnsupported",
        "peer access is not supported between these two devices",
    ),
    (218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"),
    (
        219,
        "cudaErrorInvalidGraphicsContext",
        "invalid OpenGL or DirectX context",
    ),
    (
        220,
        "cudaErrorNvlinkUncorrectable",
        "uncorrectable NVLink error detected during the execution",
    ),
    (
        221,
        "cudaErrorJitCompilerNotFound",
        "PTX JIT compiler library not found",
    ),
    (
        222,
        "cudaErrorUnsupportedPtxVersion",
        "the provided PTX was compiled with an unsupported toolchain.",
    ),
    (
        223,
        "cudaErrorJitCompilationDisabled",
        "PTX JIT compilation was disabled",
    ),
    (
        224,
        "cudaErrorUnsupportedExecAffinity",
        "the provided execution affinity is not supported",
    ),
    (
        225,
        "cudaErrorUnsupportedDevSideSync",
        "the provided PTX contains unsupported call to cudaDeviceSynchronize",
    ),
    (
        226,
        "cudaErrorContained",
        "Invalid access of peer GPU memory over nvlink or a hardware error",
    ),
    (
        300,
        "cudaErrorInvalidSource",
        "device kernel image is invalid",
    ),
    (301, "cudaErrorFileNotFound", "file not found"),
    (
        302,
        "cudaErrorSharedObjectSymbolNotFound",
        "shared object symbol not found",
    ),
    (
        303,
        "cudaErrorSharedObjectInitFailed",
        "shared object initialization failed",
    ),
    (
        304,
        "cudaErrorOperatingSystem",
        "OS call failed or operation not supported on this OS",
    ),
    (
        400,
        "cudaErrorInvalidResourceHandle",
        "invalid resource handle",
    ),
    (
        401,
        "cudaErrorIllegalState",
        "the operation cannot be performed in the present state",
    ),
    (
        402,
        "cudaErrorLossyQuery",
        "attempted introspection would be semantically lossy",
    ),
    (500, "cudaErrorSymbolNotFound", "named symbol not found"),
    (600, "cudaErrorNotReady", "device not ready"),
    (
        700,
        "cudaErrorIllegalAddress",
        "an illegal memory access was encountered",
    ),
    (
        701,
        "cudaErrorLaunchOutOfResources",
        "too many resources requested for launch",
    ),
    (
        702,
        "cudaErrorLaunchTimeout",
        "the launch timed out and was terminated",
    ),
    (
        703,
        "cudaErrorLaunchIncompatibleTexturing",
        "launch uses incompatible texturing mode",
    ),
    (
        704,
        "cudaErrorPeerAccessAlreadyEnabled",
        "peer access is already enabled",
    ),
    (
        705,
        "cudaErrorPeerAccessNotEnabled",
        "peer access has not been enabled",
    ),
    (
        708,
        "cudaErrorSetOnActiveProcess",
        "cannot set while device is active in this process",
    ),
    (709, "cudaErrorContextIsDestroyed", "context is destroyed"),
    (710, "cudaErrorAssert", "device-side assert triggered"),
    (
        711,
        "cudaErrorTooManyPeers",
        "peer mapping resources exhausted",
    ),
    (
        712,
        "cudaErrorHostMemoryAlreadyRegistered",
        "part or all of the requested memory range is already mapped",
    ),
    (
        713,
        "cudaErrorHostMemoryNotRegistered",
        "pointer does not correspond to a registered memory region",
    ),
    (714, "cudaErrorHardwareStackError", "hardware stack error"),
    (
        715,
        "cudaErrorIllegalInstruction",
        "an illegal instruction was encountered",
    ),
    (716, "cudaErrorMisalignedAddress", "misaligned address"),
    (
        717,
        "cudaErrorInvalidAddressSpace",
        "operation not supported on global/shared address space",
    ),
    (718, "cudaErrorInvalidPc", "invalid program counter"),
    (719, "cudaErrorLaunchFailure", "unspecified launch failure"),
    (
        720,
        "cudaErrorCooperativeLaunchTooLarge",
        "too many blocks in cooperative launch",
    ),
    (
        721,
        "cudaErrorTensorMemoryLeak",
        "tensor memory not completely freed",
    ),
    (800, "cudaErrorNotPermitted", "operation not permitted"),
    (801, "cudaErrorNotSupported", "operation not supported"),
    (802, "cudaErrorSystemNotReady", "system not yet initialized"),
    (
        803,
        "cudaErrorSystemDriverMismatch",
        "system has unsupported display driver / cuda driver combination",
    ),
    (
        804,
        "cudaErrorCompatNotSupportedOnDevice",
        "forward compatibility was attempted on non supported HW",
    ),
    (
        805,
        "cudaErrorMpsConnectionFailed",
        "MPS client failed to connect to the MPS control daemon or the MPS server",
    ),
    (
        806,
        "cudaErrorMpsRpcFailure",
        "the remote procedural call between the MPS server and the MPS client failed",
    ),
    (
        807,
        "cudaErrorMpsServerNotReady",
        "MPS server is not ready to accept new MPS client requests",
    ),
    (
        808,
        "cudaErrorMpsMaxClientsReached",
        "the hardware resources required to create MPS client have been exhausted",
    ),
    (
        809,
        "cudaErrorMpsMaxConnectionsReached",
        "the hardware resources required to support device connections have been exhausted",
    ),
    (
        810,
        "cudaErrorMpsClientTerminated",
        "the MPS client has been terminated by the server",
    ),
    (
        811,
        "cudaErrorCdpNotSupported",
        "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it",
    ),
    (
        812,
        "cudaErrorCdpVersionMismatch",
        "unsupported interaction between different versions of CUDA Dynamic Parallelism",
    ),
    (
        900,
        "cudaErrorStreamCaptureUnsupported",
        "operation not permitted when stream is capturing",
    ),
    (
        901,
        "cudaErrorStreamCaptureInvalidated",
        "operation failed due to a previous error during capture",
    ),
    (
        902,
        "cudaErrorStreamCaptureMerge",
        "operation would result in a merge of separate capture sequences",
    ),
    (
        903,
        "cudaErrorStreamCaptureUnmatched",
        "capture was not ended in the same stream as it began",
    ),
    (
        904,
        "cudaErrorStreamCaptureUnjoined",
        "capturing stream has unjoined work",
    ),
    (
        905,
        "cudaErrorStreamCaptureIsolation",
        "dependency created on uncaptured work in another stream",
    ),
    (
        906,
        "cudaErrorStreamCaptureImplicit",
        "operation would make the legacy stream depend on a capturing blocking stream",
    ),
    (
        907,
        "cudaErrorCapturedEvent",
        "operation not permitted on an event last recorded in a capturing stream",
    ),
    (
        908,
        "cudaErrorStreamCaptureWrongThread",
        "attempt to terminate a thread-local capture sequence from another thread",
    ),
    (909, "cudaErrorTimeout", "wait operation timed out"),
    (
        910,
        "cudaErrorGraphExecUpdateFailure",
        "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update",
    ),
    (
        911,
        "cudaErrorExternalDevice",
        "an async error has occured in external entity outside of CUDA",
    ),
    (
        912,
        "cudaErrorInvalidClusterSize",
        "a kernel launch error has occurred due to cluster misconfiguration",
    ),
    (
        913,
        "cudaErrorFunctionNotLoaded",
        "the function handle is not loaded when calling an API that requires a loaded function",
    ),
    (
        914,
        "cudaErrorInvalidResourceType",
        "one or more resources passed in are not valid resource types for the operation",
    ),
    (
        915,
        "cudaErrorInvalidResourceConfiguration",
        "one or more resources are insufficient or non-applicable for the operation",
    ),
    (999, "cudaErrorUnknown", "unknown error"),
];

/// What `cudaGetErrorName` and `cudaGetErrorString` return for a code they do not know.
pub const UNRECOGNIZED: &str = "unrecognized error code";

/// The name and message of `code`, if it is a known status.
pub fn describe(code: CudaStatus) -> Option<(&'static str, &'static str)> {
    TABLE
        .binary_search_by_key(&code, |&(c, _, _)| c)
        .ok()
        .map(|i| (TABLE[i].1, TABLE[i].2))
}

/// Whether `code` is a sticky error: once it happens, the context is unusable and every later
/// call returns it until `cudaDeviceReset`.
pub fn is_sticky(code: CudaStatus) -> bool {
    matches!(
        code,
        ILLEGAL_ADDRESS
            | LAUNCH_FAILURE
            | HARDWARE_STACK_ERROR
            | ILLEGAL_INSTRUCTION
            | MISALIGNED_ADDRESS
            | INVALID_ADDRESS_SPACE
            | INVALID_PC
            | ASSERT
            | LAUNCH_TIMEOUT
            | ECCUNCORRECTABLE
            | CONTEXT_IS_DESTROYED
            | CONTAINED
            | TENSOR_MEMORY_LEAK
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_known() {
        assert!(TABLE.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(describe(SUCCESS), Some(("cudaSuccess", "no error")));
        assert_eq!(
            describe(ILLEGAL_ADDRESS).unwrap().0,
            "cudaErrorIllegalAddress"
        );
        assert_eq!(describe(12345), None);
        assert!(is_sticky(ILLEGAL_ADDRESS));
        assert!(!is_sticky(INVALID_VALUE));
    }
}
