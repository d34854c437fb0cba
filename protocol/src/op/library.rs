// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS and cuRAND requests and replies (their constants are in [`super::lib`]).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

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
    /// operation reads is documented with its [`lib::func`](super::lib::func) code; the rest
    /// are zero.
    BlasCallReq, 256 {
        /// cuBLAS handle.
        handle: u64,
        /// Stream handle (from the handle's `cublasSetStream`).
        stream: u64,
        /// A [`lib::func`](super::lib::func) code.
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
        /// A [`lib::set`](super::lib::set) code.
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
        /// Device address of the output (ignored with
        /// [`lib::RAND_TO_HOST`](super::lib::RAND_TO_HOST)).
        dst: u64,
        /// Number of elements.
        n: u64,
        /// A [`lib::dist`](super::lib::dist) code.
        dist: u32,
        /// `lib::RAND_TO_HOST`.
        flags: u32,
        /// Mean (normal, log-normal) or lambda (Poisson).
        mean: f64,
        /// Standard deviation (normal, log-normal).
        stddev: f64,
    }
);
