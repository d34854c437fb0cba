// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The library's internal errors: [`Error`] (a CUDA runtime error) and the cuBLAS and cuRAND
//! statuses ([`BlasError`], [`RandError`]), with their conversions into the C status types.
//!
//! This module depends on nothing else in the crate, so every other module can use it. It
//! defines the C status types too ([`crate::ffi`] re-exports them with the other C types):
//! all are `u32`, and 0 is success in each.

use vcuda_protocol::lib::{
    BLAS_EXECUTION_FAILED, BLAS_INVALID_VALUE, BLAS_NOT_INITIALIZED, BLAS_NOT_SUPPORTED,
    RAND_ALLOCATION_FAILED, RAND_INITIALIZATION_FAILED, RAND_LAUNCH_FAILURE,
    RAND_LENGTH_NOT_MULTIPLE, RAND_NOT_INITIALIZED, RAND_OUT_OF_RANGE, RAND_TYPE_ERROR,
};
use vcuda_protocol::status;

/// `cudaError_t`.
pub type cudaError_t = u32;
/// `cublasStatus_t`.
pub type cublasStatus_t = u32;
/// `curandStatus_t`.
pub type curandStatus_t = u32;

/// A CUDA runtime error (a non-zero `cudaError_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Error(pub cudaError_t);

impl Error {
    /// `cudaErrorInvalidValue`.
    pub const INVALID_VALUE: Error = Error(status::INVALID_VALUE);
    /// `cudaErrorInvalidDevice`.
    pub const INVALID_DEVICE: Error = Error(status::INVALID_DEVICE);
    /// `cudaErrorInvalidResourceHandle`.
    pub const INVALID_HANDLE: Error = Error(status::INVALID_RESOURCE_HANDLE);
    /// `cudaErrorInvalidDeviceFunction`.
    pub const INVALID_DEVICE_FUNCTION: Error = Error(status::INVALID_DEVICE_FUNCTION);
    /// `cudaErrorInvalidConfiguration`.
    pub const INVALID_CONFIGURATION: Error = Error(status::INVALID_CONFIGURATION);
    /// `cudaErrorInvalidSymbol`.
    pub const INVALID_SYMBOL: Error = Error(status::INVALID_SYMBOL);
    /// `cudaErrorInvalidMemcpyDirection`.
    pub const INVALID_MEMCPY_DIRECTION: Error = Error(status::INVALID_MEMCPY_DIRECTION);
    /// `cudaErrorInvalidPitchValue`.
    pub const INVALID_PITCH: Error = Error(status::INVALID_PITCH_VALUE);
    /// `cudaErrorMemoryAllocation`.
    pub const MEMORY_ALLOCATION: Error = Error(status::MEMORY_ALLOCATION);
    /// `cudaErrorNotSupported`.
    pub const NOT_SUPPORTED: Error = Error(status::NOT_SUPPORTED);
    /// `cudaErrorNoDevice`.
    pub const NO_DEVICE: Error = Error(status::NO_DEVICE);
    /// `cudaErrorMissingConfiguration`.
    pub const MISSING_CONFIGURATION: Error = Error(status::MISSING_CONFIGURATION);
    /// `cudaErrorUnknown`.
    pub const UNKNOWN: Error = Error(status::UNKNOWN);
    /// `cudaErrorOperatingSystem`.
    pub const OPERATING_SYSTEM: Error = Error(status::OPERATING_SYSTEM);
}

/// Results of the library's internals.
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for cudaError_t {
    fn from(e: Error) -> cudaError_t {
        e.0
    }
}

/// A cuBLAS error (a non-zero `cublasStatus_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlasError(pub cublasStatus_t);

impl BlasError {
    /// `CUBLAS_STATUS_NOT_INITIALIZED`.
    pub const NOT_INITIALIZED: BlasError = BlasError(BLAS_NOT_INITIALIZED);
    /// `CUBLAS_STATUS_INVALID_VALUE`.
    pub const INVALID_VALUE: BlasError = BlasError(BLAS_INVALID_VALUE);
    /// `CUBLAS_STATUS_MAPPING_ERROR`.
    pub const MAPPING_ERROR: BlasError = BlasError(11);
    /// `CUBLAS_STATUS_EXECUTION_FAILED`.
    pub const EXECUTION_FAILED: BlasError = BlasError(BLAS_EXECUTION_FAILED);
    /// `CUBLAS_STATUS_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: BlasError = BlasError(BLAS_NOT_SUPPORTED);
}

/// A reply status as a cuBLAS error: library statuses pass through; a CUDA error (a memory
/// fault, a lost backend, a pending asynchronous error) means the operation could not run.
impl From<Error> for BlasError {
    fn from(e: Error) -> BlasError {
        match e.0 {
            1 | 3 | 7 | 8 | 11 | 13 | 14 | 15 | 16 => BlasError(e.0),
            _ => BlasError::EXECUTION_FAILED,
        }
    }
}

impl From<BlasError> for cublasStatus_t {
    fn from(e: BlasError) -> cublasStatus_t {
        e.0
    }
}

/// A cuRAND error (a non-zero `curandStatus_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RandError(pub curandStatus_t);

impl RandError {
    /// `CURAND_STATUS_NOT_INITIALIZED`.
    pub const NOT_INITIALIZED: RandError = RandError(RAND_NOT_INITIALIZED);
    /// `CURAND_STATUS_ALLOCATION_FAILED`.
    pub const ALLOCATION_FAILED: RandError = RandError(RAND_ALLOCATION_FAILED);
    /// `CURAND_STATUS_TYPE_ERROR`.
    pub const TYPE_ERROR: RandError = RandError(RAND_TYPE_ERROR);
    /// `CURAND_STATUS_OUT_OF_RANGE`.
    pub const OUT_OF_RANGE: RandError = RandError(RAND_OUT_OF_RANGE);
    /// `CURAND_STATUS_LENGTH_NOT_MULTIPLE`.
    pub const LENGTH_NOT_MULTIPLE: RandError = RandError(RAND_LENGTH_NOT_MULTIPLE);
    /// `CURAND_STATUS_LAUNCH_FAILURE`.
    pub const LAUNCH_FAILURE: RandError = RandError(RAND_LAUNCH_FAILURE);
    /// `CURAND_STATUS_PREEXISTING_FAILURE`.
    pub const PREEXISTING_FAILURE: RandError = RandError(202);
    /// `CURAND_STATUS_INITIALIZATION_FAILED`.
    pub const INITIALIZATION_FAILED: RandError = RandError(RAND_INITIALIZATION_FAILED);
}

/// A reply status as a cuRAND error: library statuses pass through; a CUDA error means the
/// generator's work could not run.
impl From<Error> for RandError {
    fn from(e: Error) -> RandError {
        match e.0 {
            100..=106 | 201..=204 | 999 => RandError(e.0),
            _ => RandError::LAUNCH_FAILURE,
        }
    }
}

impl From<RandError> for curandStatus_t {
    fn from(e: RandError) -> curandStatus_t {
        e.0
    }
}

/// An nvJitLink error (a non-zero `nvJitLinkResult`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct JitLinkError(pub u32);

impl JitLinkError {
    /// `NVJITLINK_ERROR_UNRECOGNIZED_OPTION`.
    pub const UNRECOGNIZED_OPTION: JitLinkError = JitLinkError(1);
    /// `NVJITLINK_ERROR_MISSING_ARCH`.
    pub const MISSING_ARCH: JitLinkError = JitLinkError(2);
    /// `NVJITLINK_ERROR_INVALID_INPUT`.
    pub const INVALID_INPUT: JitLinkError = JitLinkError(3);
    /// `NVJITLINK_ERROR_INTERNAL`.
    pub const INTERNAL: JitLinkError = JitLinkError(6);
    /// `NVJITLINK_ERROR_UNRECOGNIZED_INPUT`.
    pub const UNRECOGNIZED_INPUT: JitLinkError = JitLinkError(8);
    /// `NVJITLINK_ERROR_FINALIZE`.
    pub const FINALIZE: JitLinkError = JitLinkError(9);
    /// `NVJITLINK_ERROR_NULL_INPUT`.
    pub const NULL_INPUT: JitLinkError = JitLinkError(10);
    /// `NVJITLINK_ERROR_LTO_NOT_ENABLED`.
    pub const LTO_NOT_ENABLED: JitLinkError = JitLinkError(18);
}

impl From<JitLinkError> for u32 {
    fn from(e: JitLinkError) -> u32 {
        e.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_statuses_pass_through_and_cuda_errors_map() {
        for s in [1, 3, 7, 8, 11, 13, 14, 15, 16] {
            assert_eq!(cublasStatus_t::from(BlasError::from(Error(s))), s);
        }
        for e in [0, 2, 100, 700, 999] {
            assert_eq!(BlasError::from(Error(e)), BlasError::EXECUTION_FAILED);
        }
        for s in (100..=106).chain(201..=204).chain([999]) {
            assert_eq!(curandStatus_t::from(RandError::from(Error(s))), s);
        }
        for e in [1, 99, 107, 200, 205, 700] {
            assert_eq!(RandError::from(Error(e)), RandError::LAUNCH_FAILURE);
        }
        assert_eq!(cudaError_t::from(Error::UNKNOWN), status::UNKNOWN);
    }
}

/// A CUDA driver API error (a non-zero `CUresult`).
///
/// The driver and the runtime number their errors alike (`CUDA_ERROR_OUT_OF_MEMORY` = 2 =
/// `cudaErrorMemoryAllocation`, ...), so a runtime [`Error`] converts by value, except for
/// the few codes only the runtime has, which become what the driver reports in their place.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CuError(pub u32);

impl CuError {
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub const INVALID_VALUE: CuError = CuError(1);
    /// `CUDA_ERROR_NOT_INITIALIZED`.
    pub const NOT_INITIALIZED: CuError = CuError(3);
    /// `CUDA_ERROR_NO_DEVICE`.
    pub const NO_DEVICE: CuError = CuError(100);
    /// `CUDA_ERROR_INVALID_DEVICE`.
    pub const INVALID_DEVICE: CuError = CuError(101);
    /// `CUDA_ERROR_INVALID_IMAGE`.
    pub const INVALID_IMAGE: CuError = CuError(200);
    /// `CUDA_ERROR_INVALID_CONTEXT`.
    pub const INVALID_CONTEXT: CuError = CuError(201);
    /// `CUDA_ERROR_NO_BINARY_FOR_GPU`.
    pub const NO_BINARY_FOR_GPU: CuError = CuError(209);
    /// `CUDA_ERROR_INVALID_HANDLE`.
    pub const INVALID_HANDLE: CuError = CuError(400);
    /// `CUDA_ERROR_NOT_FOUND`.
    pub const NOT_FOUND: CuError = CuError(500);
    /// `CUDA_ERROR_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: CuError = CuError(801);
}

impl From<Error> for CuError {
    fn from(e: Error) -> CuError {
        CuError(match e.0 {
            // The runtime's own codes for what the driver calls an invalid value
            // (configuration, pitch, device pointer, copy direction) or a name not found
            // (device function, symbol).
            status::INVALID_CONFIGURATION
            | status::INVALID_PITCH_VALUE
            | 17
            | status::INVALID_MEMCPY_DIRECTION => 1,
            status::INVALID_DEVICE_FUNCTION | status::INVALID_SYMBOL => 500,
            c if crate::cu_names::name(c).is_some() => c,
            c if c < 100 => 1,
            _ => 999,
        })
    }
}

impl From<CuError> for u32 {
    fn from(e: CuError) -> u32 {
        e.0
    }
}
