// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA driver results (`CUresult`) as runtime statuses (`cudaError_t`), and the errors that
//! keep the CUDA executor from starting.
//!
//! The driver and runtime number their errors alike: every `CUresult` of CUDA 13.0 has a
//! `cudaError_t` with the same value and meaning (`CUDA_ERROR_OUT_OF_MEMORY` = 2 =
//! `cudaErrorMemoryAllocation`, `CUDA_ERROR_INVALID_HANDLE` = 400 =
//! `cudaErrorInvalidResourceHandle`, ...), except two the runtime never reports:
//! `CUDA_ERROR_CONTEXT_ALREADY_CURRENT` (202, deprecated) and `CUDA_ERROR_KEY_ROTATION` (916,
//! confidential computing), which become `cudaErrorUnknown`. [`cuda_status`] spells the
//! table out as an exhaustive `match`, so a cudarc update that adds a variant fails to
//! compile until the table says where it goes. Call sites translate the few results whose
//! runtime meaning depends on the call (`CUDA_ERROR_NOT_FOUND` from `cuModuleGetFunction` is
//! `cudaErrorInvalidDeviceFunction`, from `cuModuleGetGlobal` `cudaErrorInvalidSymbol`).

use cudarc::driver::sys::CUresult;
use thiserror::Error;
use vcuda_protocol::status::{self, CudaStatus};

use crate::executor::Status;

/// The runtime status for a driver result.
pub fn cuda_status(r: CUresult) -> CudaStatus {
    use CUresult::*;
    match r {
        CUDA_SUCCESS => status::SUCCESS,
        CUDA_ERROR_INVALID_VALUE => status::INVALID_VALUE,
        CUDA_ERROR_OUT_OF_MEMORY => status::MEMORY_ALLOCATION,
        CUDA_ERROR_NOT_INITIALIZED => status::INITIALIZATION_ERROR,
        CUDA_ERROR_DEINITIALIZED => status::CUDART_UNLOADING,
        CUDA_ERROR_PROFILER_DISABLED => status::PROFILER_DISABLED,
        CUDA_ERROR_PROFILER_NOT_INITIALIZED => status::PROFILER_NOT_INITIALIZED,
        CUDA_ERROR_PROFILER_ALREADY_STARTED => status::PROFILER_ALREADY_STARTED,
        CUDA_ERROR_PROFILER_ALREADY_STOPPED => status::PROFILER_ALREADY_STOPPED,
        CUDA_ERROR_STUB_LIBRARY => status::STUB_LIBRARY,
        CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER => status::CALL_REQUIRES_NEWER_DRIVER,
        CUDA_ERROR_DEVICE_UNAVAILABLE => status::DEVICES_UNAVAILABLE,
        CUDA_ERROR_NO_DEVICE => status::NO_DEVICE,
        CUDA_ERROR_INVALID_DEVICE => status::INVALID_DEVICE,
        CUDA_ERROR_DEVICE_NOT_LICENSED => status::DEVICE_NOT_LICENSED,
        CUDA_ERROR_INVALID_IMAGE => status::INVALID_KERNEL_IMAGE,
        CUDA_ERROR_INVALID_CONTEXT => status::DEVICE_UNINITIALIZED,
        CUDA_ERROR_CONTEXT_ALREADY_CURRENT => status::UNKNOWN,
        CUDA_ERROR_MAP_FAILED => status::MAP_BUFFER_OBJECT_FAILED,
        CUDA_ERROR_UNMAP_FAILED => status::UNMAP_BUFFER_OBJECT_FAILED,
        CUDA_ERROR_ARRAY_IS_MAPPED => status::ARRAY_IS_MAPPED,
        CUDA_ERROR_ALREADY_MAPPED => status::ALREADY_MAPPED,
        CUDA_ERROR_NO_BINARY_FOR_GPU => status::NO_KERNEL_IMAGE_FOR_DEVICE,
        CUDA_ERROR_ALREADY_ACQUIRED => status::ALREADY_ACQUIRED,
        CUDA_ERROR_NOT_MAPPED => status::NOT_MAPPED,
        CUDA_ERROR_NOT_MAPPED_AS_ARRAY => status::NOT_MAPPED_AS_ARRAY,
        CUDA_ERROR_NOT_MAPPED_AS_POINTER => status::NOT_MAPPED_AS_POINTER,
        CUDA_ERROR_ECC_UNCORRECTABLE => status::ECCUNCORRECTABLE,
        CUDA_ERROR_UNSUPPORTED_LIMIT => status::UNSUPPORTED_LIMIT,
        CUDA_ERROR_CONTEXT_ALREADY_IN_USE => status::DEVICE_ALREADY_IN_USE,
        CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => status::PEER_ACCESS_UNSUPPORTED,
        CUDA_ERROR_INVALID_PTX => status::INVALID_PTX,
        CUDA_ERROR_INVALID_GRAPHICS_CONTEXT => status::INVALID_GRAPHICS_CONTEXT,
        CUDA_ERROR_NVLINK_UNCORRECTABLE => status::NVLINK_UNCORRECTABLE,
        CUDA_ERROR_JIT_COMPILER_NOT_FOUND => status::JIT_COMPILER_NOT_FOUND,
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION => status::UNSUPPORTED_PTX_VERSION,
        CUDA_ERROR_JIT_COMPILATION_DISABLED => status::JIT_COMPILATION_DISABLED,
        CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY => status::UNSUPPORTED_EXEC_AFFINITY,
        CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC => status::UNSUPPORTED_DEV_SIDE_SYNC,
        CUDA_ERROR_CONTAINED => status::CONTAINED,
        CUDA_ERROR_INVALID_SOURCE => status::INVALID_SOURCE,
        CUDA_ERROR_FILE_NOT_FOUND => status::FILE_NOT_FOUND,
        CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND => status::SHARED_OBJECT_SYMBOL_NOT_FOUND,
        CUDA_ERROR_SHARED_OBJECT_INIT_FAILED => status::SHARED_OBJECT_INIT_FAILED,
        CUDA_ERROR_OPERATING_SYSTEM => status::OPERATING_SYSTEM,
        CUDA_ERROR_INVALID_HANDLE => status::INVALID_RESOURCE_HANDLE,
        CUDA_ERROR_ILLEGAL_STATE => status::ILLEGAL_STATE,
        CUDA_ERROR_LOSSY_QUERY => status::LOSSY_QUERY,
        CUDA_ERROR_NOT_FOUND => status::SYMBOL_NOT_FOUND,
        CUDA_ERROR_NOT_READY => status::NOT_READY,
        CUDA_ERROR_ILLEGAL_ADDRESS => status::ILLEGAL_ADDRESS,
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => status::LAUNCH_OUT_OF_RESOURCES,
        CUDA_ERROR_LAUNCH_TIMEOUT => status::LAUNCH_TIMEOUT,
        CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING => status::LAUNCH_INCOMPATIBLE_TEXTURING,
        CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => status::PEER_ACCESS_ALREADY_ENABLED,
        CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => status::PEER_ACCESS_NOT_ENABLED,
        CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE => status::SET_ON_ACTIVE_PROCESS,
        CUDA_ERROR_CONTEXT_IS_DESTROYED => status::CONTEXT_IS_DESTROYED,
        CUDA_ERROR_ASSERT => status::ASSERT,
        CUDA_ERROR_TOO_MANY_PEERS => status::TOO_MANY_PEERS,
        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => status::HOST_MEMORY_ALREADY_REGISTERED,
        CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => status::HOST_MEMORY_NOT_REGISTERED,
        CUDA_ERROR_HARDWARE_STACK_ERROR => status::HARDWARE_STACK_ERROR,
        CUDA_ERROR_ILLEGAL_INSTRUCTION => status::ILLEGAL_INSTRUCTION,
        CUDA_ERROR_MISALIGNED_ADDRESS => status::MISALIGNED_ADDRESS,
        CUDA_ERROR_INVALID_ADDRESS_SPACE => status::INVALID_ADDRESS_SPACE,
        CUDA_ERROR_INVALID_PC => status::INVALID_PC,
        CUDA_ERROR_LAUNCH_FAILED => status::LAUNCH_FAILURE,
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => status::COOPERATIVE_LAUNCH_TOO_LARGE,
        CUDA_ERROR_TENSOR_MEMORY_LEAK => status::TENSOR_MEMORY_LEAK,
        CUDA_ERROR_NOT_PERMITTED => status::NOT_PERMITTED,
        CUDA_ERROR_NOT_SUPPORTED => status::NOT_SUPPORTED,
        CUDA_ERROR_SYSTEM_NOT_READY => status::SYSTEM_NOT_READY,
        CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => status::SYSTEM_DRIVER_MISMATCH,
        CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => status::COMPAT_NOT_SUPPORTED_ON_DEVICE,
        CUDA_ERROR_MPS_CONNECTION_FAILED => status::MPS_CONNECTION_FAILED,
        CUDA_ERROR_MPS_RPC_FAILURE => status::MPS_RPC_FAILURE,
        CUDA_ERROR_MPS_SERVER_NOT_READY => status::MPS_SERVER_NOT_READY,
        CUDA_ERROR_MPS_MAX_CLIENTS_REACHED => status::MPS_MAX_CLIENTS_REACHED,
        CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED => status::MPS_MAX_CONNECTIONS_REACHED,
        CUDA_ERROR_MPS_CLIENT_TERMINATED => status::MPS_CLIENT_TERMINATED,
        CUDA_ERROR_CDP_NOT_SUPPORTED => status::CDP_NOT_SUPPORTED,
        CUDA_ERROR_CDP_VERSION_MISMATCH => status::CDP_VERSION_MISMATCH,
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => status::STREAM_CAPTURE_UNSUPPORTED,
        CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => status::STREAM_CAPTURE_INVALIDATED,
        CUDA_ERROR_STREAM_CAPTURE_MERGE => status::STREAM_CAPTURE_MERGE,
        CUDA_ERROR_STREAM_CAPTURE_UNMATCHED => status::STREAM_CAPTURE_UNMATCHED,
        CUDA_ERROR_STREAM_CAPTURE_UNJOINED => status::STREAM_CAPTURE_UNJOINED,
        CUDA_ERROR_STREAM_CAPTURE_ISOLATION => status::STREAM_CAPTURE_ISOLATION,
        CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => status::STREAM_CAPTURE_IMPLICIT,
        CUDA_ERROR_CAPTURED_EVENT => status::CAPTURED_EVENT,
        CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD => status::STREAM_CAPTURE_WRONG_THREAD,
        CUDA_ERROR_TIMEOUT => status::TIMEOUT,
        CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => status::GRAPH_EXEC_UPDATE_FAILURE,
        CUDA_ERROR_EXTERNAL_DEVICE => status::EXTERNAL_DEVICE,
        CUDA_ERROR_INVALID_CLUSTER_SIZE => status::INVALID_CLUSTER_SIZE,
        CUDA_ERROR_FUNCTION_NOT_LOADED => status::FUNCTION_NOT_LOADED,
        CUDA_ERROR_INVALID_RESOURCE_TYPE => status::INVALID_RESOURCE_TYPE,
        CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION => status::INVALID_RESOURCE_CONFIGURATION,
        CUDA_ERROR_KEY_ROTATION => status::UNKNOWN,
        CUDA_ERROR_UNKNOWN => status::UNKNOWN,
    }
}

/// A failed driver result as an executor [`Status`].
pub fn to_status(r: CUresult) -> Status {
    match cuda_status(r) {
        status::SUCCESS => Status::UNKNOWN,
        s => Status(s),
    }
}

/// [`to_status`] for an entry point the driver may lack (`CUDA_ERROR_NOT_FOUND` from
/// [`super::ffi`]): missing, it answers not-supported.
pub fn optional_to_status(r: CUresult) -> Status {
    match r {
        CUresult::CUDA_ERROR_NOT_FOUND => Status::NOT_SUPPORTED,
        r => to_status(r),
    }
}

/// Why the CUDA executor cannot start. Each message names what is missing.
#[derive(Debug, Error)]
pub enum InitError {
    /// No driver library.
    #[error(
        "CUDA executor unavailable: libcuda.so.1 not found (no NVIDIA driver installed, or it is not on the library path)"
    )]
    NoLibrary,
    /// The library lacks an entry point we need.
    #[error(
        "CUDA executor unavailable: libcuda.so.1 lacks {symbol}: the NVIDIA driver is too old (CUDA {need_major}.{need_minor} or newer needed)",
        need_major = MIN_DRIVER_VERSION / 1000,
        need_minor = MIN_DRIVER_VERSION % 1000 / 10
    )]
    MissingSymbol {
        /// The missing entry point.
        symbol: &'static str,
    },
    /// The library found is the toolkit's link stub.
    #[error(
        "CUDA executor unavailable: the libcuda.so.1 found is the CUDA toolkit's stub library, not the NVIDIA driver"
    )]
    StubLibrary,
    /// The driver reports no device.
    #[error("CUDA executor unavailable: no CUDA device found ({0})")]
    NoDevice(&'static str),
    /// The requested device ordinal does not exist.
    #[error("CUDA executor unavailable: device {ordinal} requested, {count} found")]
    BadOrdinal {
        /// The ordinal asked for.
        ordinal: u32,
        /// Devices present.
        count: u32,
    },
    /// The driver's CUDA version is below what the executor needs.
    #[error(
        "CUDA executor unavailable: the NVIDIA driver supports CUDA {}.{}, CUDA {}.{} or newer needed",
        found / 1000, found % 1000 / 10, MIN_DRIVER_VERSION / 1000, MIN_DRIVER_VERSION % 1000 / 10
    )]
    DriverTooOld {
        /// `cuDriverGetVersion`.
        found: i32,
    },
    /// Any other driver failure during start-up.
    #[error("CUDA executor unavailable: {call} failed: {name}")]
    Driver {
        /// The driver call.
        call: &'static str,
        /// The error's name.
        name: &'static str,
    },
}

/// Oldest driver the executor runs on (`cuDriverGetVersion` value): CUDA 12.8 brought
/// `cuEventElapsedTime_v2`, the newest entry point the CUDA 13.0 bindings call.
pub const MIN_DRIVER_VERSION: i32 = 12080;

/// A driver's raw result as a `CUresult`: the code itself where the bindings know it,
/// `CUDA_ERROR_UNKNOWN` (logged once per code) for a code a newer driver added.
pub fn result(code: u32) -> CUresult {
    if let Some(&r) = ALL_RESULTS.iter().find(|&&r| r as u32 == code) {
        return r;
    }
    static SEEN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.contains(&code) && seen.len() < 64 {
        seen.push(code);
        log::warn!(
            "the driver returned result {code}, which this build does not know; reported as CUDA_ERROR_UNKNOWN"
        );
    }
    CUresult::CUDA_ERROR_UNKNOWN
}

/// Every `CUresult` of the CUDA 13.0 bindings.
pub const ALL_RESULTS: &[CUresult] = {
    use CUresult::*;
    &[
        CUDA_SUCCESS,
        CUDA_ERROR_INVALID_VALUE,
        CUDA_ERROR_OUT_OF_MEMORY,
        CUDA_ERROR_NOT_INITIALIZED,
        CUDA_ERROR_DEINITIALIZED,
        CUDA_ERROR_PROFILER_DISABLED,
        CUDA_ERROR_PROFILER_NOT_INITIALIZED,
        CUDA_ERROR_PROFILER_ALREADY_STARTED,
        CUDA_ERROR_PROFILER_ALREADY_STOPPED,
        CUDA_ERROR_STUB_LIBRARY,
        CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
        CUDA_ERROR_DEVICE_UNAVAILABLE,
        CUDA_ERROR_NO_DEVICE,
        CUDA_ERROR_INVALID_DEVICE,
        CUDA_ERROR_DEVICE_NOT_LICENSED,
        CUDA_ERROR_INVALID_IMAGE,
        CUDA_ERROR_INVALID_CONTEXT,
        CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
        CUDA_ERROR_MAP_FAILED,
        CUDA_ERROR_UNMAP_FAILED,
        CUDA_ERROR_ARRAY_IS_MAPPED,
        CUDA_ERROR_ALREADY_MAPPED,
        CUDA_ERROR_NO_BINARY_FOR_GPU,
        CUDA_ERROR_ALREADY_ACQUIRED,
        CUDA_ERROR_NOT_MAPPED,
        CUDA_ERROR_NOT_MAPPED_AS_ARRAY,
        CUDA_ERROR_NOT_MAPPED_AS_POINTER,
        CUDA_ERROR_ECC_UNCORRECTABLE,
        CUDA_ERROR_UNSUPPORTED_LIMIT,
        CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
        CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
        CUDA_ERROR_INVALID_PTX,
        CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
        CUDA_ERROR_NVLINK_UNCORRECTABLE,
        CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        CUDA_ERROR_JIT_COMPILATION_DISABLED,
        CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
        CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
        CUDA_ERROR_CONTAINED,
        CUDA_ERROR_INVALID_SOURCE,
        CUDA_ERROR_FILE_NOT_FOUND,
        CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
        CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
        CUDA_ERROR_OPERATING_SYSTEM,
        CUDA_ERROR_INVALID_HANDLE,
        CUDA_ERROR_ILLEGAL_STATE,
        CUDA_ERROR_LOSSY_QUERY,
        CUDA_ERROR_NOT_FOUND,
        CUDA_ERROR_NOT_READY,
        CUDA_ERROR_ILLEGAL_ADDRESS,
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        CUDA_ERROR_LAUNCH_TIMEOUT,
        CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
        CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
        CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
        CUDA_ERROR_CONTEXT_IS_DESTROYED,
        CUDA_ERROR_ASSERT,
        CUDA_ERROR_TOO_MANY_PEERS,
        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
        CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUDA_ERROR_MISALIGNED_ADDRESS,
        CUDA_ERROR_INVALID_ADDRESS_SPACE,
        CUDA_ERROR_INVALID_PC,
        CUDA_ERROR_LAUNCH_FAILED,
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
        CUDA_ERROR_TENSOR_MEMORY_LEAK,
        CUDA_ERROR_NOT_PERMITTED,
        CUDA_ERROR_NOT_SUPPORTED,
        CUDA_ERROR_SYSTEM_NOT_READY,
        CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
        CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
        CUDA_ERROR_MPS_CONNECTION_FAILED,
        CUDA_ERROR_MPS_RPC_FAILURE,
        CUDA_ERROR_MPS_SERVER_NOT_READY,
        CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
        CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
        CUDA_ERROR_MPS_CLIENT_TERMINATED,
        CUDA_ERROR_CDP_NOT_SUPPORTED,
        CUDA_ERROR_CDP_VERSION_MISMATCH,
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        CUDA_ERROR_STREAM_CAPTURE_MERGE,
        CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
        CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
        CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
        CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
        CUDA_ERROR_CAPTURED_EVENT,
        CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
        CUDA_ERROR_TIMEOUT,
        CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
        CUDA_ERROR_EXTERNAL_DEVICE,
        CUDA_ERROR_INVALID_CLUSTER_SIZE,
        CUDA_ERROR_FUNCTION_NOT_LOADED,
        CUDA_ERROR_INVALID_RESOURCE_TYPE,
        CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
        CUDA_ERROR_KEY_ROTATION,
        CUDA_ERROR_UNKNOWN,
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw results become `CUresult`s without ever holding a value the enum lacks.
    #[test]
    fn raw_results_are_checked_before_they_become_enums() {
        for &r in ALL_RESULTS {
            assert_eq!(result(r as u32), r);
        }
        // Codes a newer driver may add (CUDA 13.1+), and nonsense.
        for code in [226 + 1000, 930, 12345, u32::MAX] {
            assert_eq!(result(code), CUresult::CUDA_ERROR_UNKNOWN);
        }
    }

    #[test]
    fn numbering_matches_the_runtime_except_two() {
        for &r in ALL_RESULTS {
            let code = r as u32;
            let s = cuda_status(r);
            assert!(
                status::describe(s).is_some(),
                "{r:?} maps to {s}, which libcudart does not know"
            );
            match code {
                202 | 916 => assert_eq!(s, status::UNKNOWN, "{r:?}"),
                _ => assert_eq!(s, code, "{r:?}"),
            }
        }
        assert_eq!(ALL_RESULTS.len(), 101);
    }

    #[test]
    fn meanings_line_up() {
        use CUresult::*;
        assert_eq!(
            cuda_status(CUDA_ERROR_OUT_OF_MEMORY),
            status::MEMORY_ALLOCATION
        );
        assert_eq!(
            cuda_status(CUDA_ERROR_INVALID_HANDLE),
            status::INVALID_RESOURCE_HANDLE
        );
        assert_eq!(cuda_status(CUDA_ERROR_NOT_READY), status::NOT_READY);
        assert_eq!(
            cuda_status(CUDA_ERROR_INVALID_IMAGE),
            status::INVALID_KERNEL_IMAGE
        );
        assert_eq!(
            cuda_status(CUDA_ERROR_NO_BINARY_FOR_GPU),
            status::NO_KERNEL_IMAGE_FOR_DEVICE
        );
        assert_eq!(
            cuda_status(CUDA_ERROR_INVALID_CONTEXT),
            status::DEVICE_UNINITIALIZED
        );
        assert_eq!(
            cuda_status(CUDA_ERROR_LAUNCH_FAILED),
            status::LAUNCH_FAILURE
        );
        assert_eq!(cuda_status(CUDA_ERROR_NOT_FOUND), status::SYMBOL_NOT_FOUND);
        assert_eq!(to_status(CUDA_SUCCESS), Status::UNKNOWN);
    }

    #[test]
    fn sticky_driver_errors_stay_sticky() {
        use CUresult::*;
        for r in [
            CUDA_ERROR_ILLEGAL_ADDRESS,
            CUDA_ERROR_LAUNCH_FAILED,
            CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUDA_ERROR_MISALIGNED_ADDRESS,
            CUDA_ERROR_INVALID_ADDRESS_SPACE,
            CUDA_ERROR_INVALID_PC,
            CUDA_ERROR_ASSERT,
            CUDA_ERROR_LAUNCH_TIMEOUT,
            CUDA_ERROR_ECC_UNCORRECTABLE,
        ] {
            assert!(status::is_sticky(to_status(r).code()), "{r:?}");
        }
        assert!(!status::is_sticky(to_status(CUDA_ERROR_NOT_READY).code()));
        assert!(!status::is_sticky(
            to_status(CUDA_ERROR_INVALID_VALUE).code()
        ));
    }

    #[test]
    fn init_errors_name_what_is_missing() {
        let m = InitError::NoLibrary.to_string();
        assert!(m.contains("libcuda.so.1 not found"), "{m}");
        let m = InitError::DriverTooOld { found: 12040 }.to_string();
        assert!(m.contains("CUDA 12.4") && m.contains("12.8"), "{m}");
        let m = InitError::MissingSymbol {
            symbol: "cuEventElapsedTime_v2",
        }
        .to_string();
        assert!(
            m.contains("cuEventElapsedTime_v2") && m.contains("too old"),
            "{m}"
        );
        assert!(
            InitError::NoDevice("CUDA_ERROR_NO_DEVICE")
                .to_string()
                .contains("no CUDA device")
        );
    }
}
