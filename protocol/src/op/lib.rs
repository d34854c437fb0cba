// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS and cuRAND: constants shared by the guest library and the executors.
//!
//! A library request's reply carries the library's status (`cublasStatus_t` for `Blas*`,
//! `curandStatus_t` for `Rand*`), except that a device memory fault is reported as
//! `cudaErrorIllegalAddress`, as the fault of a library kernel is on a GPU: the guest maps it
//! to `CUBLAS_STATUS_EXECUTION_FAILED` / `CURAND_STATUS_LAUNCH_FAILURE` for a call it waits
//! for, and it becomes the process's (sticky) CUDA error either way. The guest validates the
//! arguments of the requests it posts without waiting, so those fail only on memory faults.

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
    /// `CUDA_R_16BF`.
    pub const R_16BF: u32 = 14;
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
