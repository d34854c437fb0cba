// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS's batched LU routines (`getrfBatched`, `getrsBatched`) in single and double
//! precision, and the pointer arrays they and `gemmBatched` take, for `blas.rs`.
//!
//! Their matrices are given as arrays of device pointers in device memory. The executor
//! copies each array to the host, checks every matrix, pivot vector and info word against
//! the session's allocations, and only then lets cuBLAS read the same arrays.

use std::ffi::{c_int, c_void};

use cudarc::cublas::sys as cb;
use vcuda_protocol::BlasCallReq;
use vcuda_protocol::blas::{OP_C, OP_N, OP_T};
use vcuda_protocol::lib::{dtype, func};
use vcuda_protocol::region::matrix_extent;

use super::CudaExecutor;
use super::cublas_result::{self as cublas, BlasResult};
use super::driver;
use super::error::to_status;
use crate::executor::{ExecResult, Status};

/// Most matrices in one batched call.
const MAX_BATCH: i64 = 1 << 20;

const FAULT: Status = Status(vcuda_protocol::status::ILLEGAL_ADDRESS);
const UNSUPPORTED: Status = Status(vcuda_protocol::lib::BLAS_NOT_SUPPORTED);

fn int(v: i64) -> c_int {
    v.clamp(0, i64::from(c_int::MAX)) as c_int
}

/// A cuBLAS result as the session's (a status this build does not know is already
/// `CUBLAS_STATUS_INTERNAL_ERROR`).
fn ok(r: BlasResult<()>) -> ExecResult<()> {
    r.map_err(|s| Status(s as u32))
}

/// `addr + i * n * each`, checked.
fn nth(addr: u64, i: i64, n: i64, each: u64) -> ExecResult<u64> {
    (i as u64)
        .checked_mul(n as u64)
        .and_then(|k| k.checked_mul(each))
        .and_then(|o| addr.checked_add(o))
        .ok_or(FAULT)
}

impl CudaExecutor {
    /// The `batch` device pointers at `addr` (an array in the session's memory).
    pub(super) fn pointer_array(&self, addr: u64, batch: i64, stream: u64) -> ExecResult<Vec<u64>> {
        if !(0..=MAX_BATCH).contains(&batch) {
            return Err(Status::INVALID_VALUE);
        }
        let n = batch as usize;
        let mut v = vec![0u64; n];
        if n == 0 {
            return Ok(v);
        }
        self.check_device_range(addr, n as u64 * 8)
            .map_err(|_| FAULT)?;
        let s = self.cu_stream(stream)?;
        // SAFETY: `v` has room for the `n * 8` bytes and is not touched until the copy is
        // waited for below; the device range was checked against the session's allocations;
        // the context is current (the caller bound it) and `s` is the session's stream.
        unsafe { driver::memcpy_dtoh(v.as_mut_ptr().cast(), addr, n * 8, s) }.map_err(to_status)?;
        let query = || {
            // SAFETY: `s` is a live stream of the session (or null, the legacy stream).
            unsafe { driver::stream_query(s) }
        };
        self.wait.until(query).map_err(Status::from)?;
        Ok(v)
    }

    /// Checks `rows x cols` elements of `size` bytes with leading dimension `ld` at `addr`.
    fn lu_matrix(&self, addr: u64, rows: i64, cols: i64, ld: i64, size: u64) -> ExecResult<()> {
        let elems = matrix_extent(rows, cols, ld).ok_or(FAULT)?;
        if elems == 0 {
            return Ok(());
        }
        self.check_device_range(addr, elems.checked_mul(size).ok_or(FAULT)?)
            .map_err(|_| FAULT)
    }

    /// Runs a `GETRF_BATCHED` or `GETRS_BATCHED` request on handle `h` (bound to the
    /// request's stream, the context current); the reply's 16 bytes (getrs: its `info`).
    pub(super) fn blas_lu(&self, r: &BlasCallReq, h: cb::cublasHandle_t) -> ExecResult<[u8; 16]> {
        let size = match r.type_a {
            dtype::R_32F => 4,
            dtype::R_64F => 8,
            _ => return Err(UNSUPPORTED),
        };
        let mats = self.pointer_array(r.a, r.batch, r.stream)?;
        let mut result = [0u8; 16];
        if r.func == func::GETRF_BATCHED {
            for (i, &m) in mats.iter().enumerate() {
                self.lu_matrix(m, r.n, r.n, r.lda, size)?;
                if r.x != 0 {
                    self.lu_matrix(nth(r.x, i as i64, r.n, 4)?, r.n, 1, r.n.max(1), 4)?;
                }
                self.lu_matrix(nth(r.y, i as i64, 1, 4)?, 1, 1, 1, 4)?;
            }
            let (a, piv, info) = (
                r.a as *const *mut c_void,
                r.x as *mut c_int,
                r.y as *mut c_int,
            );
            // SAFETY: every matrix, pivot vector and info word the arrays name was checked
            // against the session's allocations above; the handle and context are live.
            ok(unsafe {
                match r.type_a {
                    dtype::R_32F => cublas::sgetrf_batched(
                        h,
                        int(r.n),
                        a.cast(),
                        int(r.lda),
                        piv,
                        info,
                        int(r.batch),
                    ),
                    _ => cublas::dgetrf_batched(
                        h,
                        int(r.n),
                        a.cast(),
                        int(r.lda),
                        piv,
                        info,
                        int(r.batch),
                    ),
                }
            })?;
            return Ok(result);
        }
        // getrs: op(A_i) X_i = B_i with the pivots at x (cuBLAS needs them).
        if r.x == 0 {
            return Err(UNSUPPORTED);
        }
        let bs = self.pointer_array(r.b, r.batch, r.stream)?;
        for (i, (&am, &bm)) in mats.iter().zip(&bs).enumerate() {
            self.lu_matrix(am, r.n, r.n, r.lda, size)?;
            self.lu_matrix(bm, r.n, r.k, r.ldb, size)?;
            self.lu_matrix(nth(r.x, i as i64, r.n, 4)?, r.n, 1, r.n.max(1), 4)?;
        }
        let trans = match r.trans_a {
            OP_N => cb::cublasOperation_t::CUBLAS_OP_N,
            OP_T => cb::cublasOperation_t::CUBLAS_OP_T,
            OP_C => cb::cublasOperation_t::CUBLAS_OP_C,
            _ => return Err(Status(vcuda_protocol::lib::BLAS_INVALID_VALUE)),
        };
        let mut info: c_int = 0;
        let (a, piv, b) = (
            r.a as *const *const c_void,
            r.x as *const c_int,
            r.b as *const *mut c_void,
        );
        // SAFETY: as for getrf: every matrix and pivot vector was checked above; `info` is a
        // host local, as cuBLAS's getrsBatched takes it.
        ok(unsafe {
            match r.type_a {
                dtype::R_32F => cublas::sgetrs_batched(
                    h,
                    trans,
                    int(r.n),
                    int(r.k),
                    a.cast(),
                    int(r.lda),
                    piv,
                    b.cast(),
                    int(r.ldb),
                    &mut info,
                    int(r.batch),
                ),
                _ => cublas::dgetrs_batched(
                    h,
                    trans,
                    int(r.n),
                    int(r.k),
                    a.cast(),
                    int(r.lda),
                    piv,
                    b.cast(),
                    int(r.ldb),
                    &mut info,
                    int(r.batch),
                ),
            }
        })?;
        result[..4].copy_from_slice(&info.to_le_bytes());
        Ok(result)
    }
}
