// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS on the GPU: the real library, called through its result layer
//! ([`super::cublas_result`], over `lib_ffi`'s `u32`-returning entry points; cudarc's
//! `cublas` types).
//!
//! One cuBLAS handle per guest handle, created in the session's context. Every call binds
//! the context, sets the handle's stream (the guest's stream of the call, mapped through
//! the session's stream table), pointer mode and math mode, and checks the full extent of
//! every operand (vectors, matrices, device scalars and results) against the session's
//! allocations before cuBLAS sees a pointer, as the CPU executor does.
//!
//! Routines: every level-1 routine (through the `*Ex` entry points, for all four types),
//! GEMM, strided-batched GEMM and their `Ex` forms (every type combination cuBLAS
//! accepts), and GEMV, GER, SYMV, TRSV, SYMM, SYRK, TRSM and GEAM in single and double
//! precision. Complex level-2/3 routines, pointer-array batches (their pointers live in
//! device memory and would need reading back to be checked) and batched LU answer
//! `CUBLAS_STATUS_NOT_SUPPORTED` here for now.
//!
//! libcublas is loaded at run time: without it, `blas_create` answers
//! `CUBLAS_STATUS_NOT_SUPPORTED` and nothing else is reachable (an entry point the library
//! lacks answers the same). A status this build does not know is reported as
//! `CUBLAS_STATUS_INTERNAL_ERROR`.

use std::ffi::{c_int, c_void};

use cudarc::cublas::sys as cb;
use log::warn;
use vcuda_protocol::blas::{self as check, OP_C, OP_N, OP_T};
use vcuda_protocol::lib::{
    BLAS_DEVICE_POINTERS, BLAS_EXECUTION_FAILED, BLAS_NOT_INITIALIZED, BLAS_NOT_SUPPORTED, dtype,
    func,
};
use vcuda_protocol::region::{matrix_extent, vector_extent};
use vcuda_protocol::{BlasCallReq, status};

use super::CudaExecutor;
use super::cublas_result::{self as cublas, BlasResult};
use super::state::Handle;
use crate::executor::{ExecResult, Status};

#[path = "blas_gemm.rs"]
mod gemm;

const UNSUPPORTED: Status = Status(BLAS_NOT_SUPPORTED);
const FAULT: Status = Status(status::ILLEGAL_ADDRESS);

/// A cuBLAS result as the session's (a status this build does not know is already
/// `CUBLAS_STATUS_INTERNAL_ERROR`).
fn ok(r: BlasResult<()>) -> ExecResult<()> {
    r.map_err(|s| Status(s as u32))
}

fn op(v: u32) -> cb::cublasOperation_t {
    match v {
        OP_T => cb::cublasOperation_t::CUBLAS_OP_T,
        OP_C => cb::cublasOperation_t::CUBLAS_OP_C,
        _ => cb::cublasOperation_t::CUBLAS_OP_N,
    }
}

fn fill(v: u32) -> cb::cublasFillMode_t {
    if v == check::FILL_UPPER {
        cb::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
    } else {
        cb::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
    }
}

fn side(v: u32) -> cb::cublasSideMode_t {
    if v == check::SIDE_RIGHT {
        cb::cublasSideMode_t::CUBLAS_SIDE_RIGHT
    } else {
        cb::cublasSideMode_t::CUBLAS_SIDE_LEFT
    }
}

fn diag(v: u32) -> cb::cublasDiagType_t {
    if v == check::DIAG_UNIT {
        cb::cublasDiagType_t::CUBLAS_DIAG_UNIT
    } else {
        cb::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT
    }
}

fn data_type(v: u32) -> ExecResult<cb::cudaDataType> {
    use cb::cudaDataType::*;
    Ok(match v {
        dtype::R_32F => CUDA_R_32F,
        dtype::R_64F => CUDA_R_64F,
        dtype::R_16F => CUDA_R_16F,
        dtype::C_32F => CUDA_C_32F,
        dtype::C_64F => CUDA_C_64F,
        6 => CUDA_C_16F,
        dtype::R_16BF => CUDA_R_16BF,
        15 => CUDA_C_16BF,
        3 => CUDA_R_8I,
        10 => CUDA_R_32I,
        _ => return Err(UNSUPPORTED),
    })
}

fn compute_type(v: u32) -> ExecResult<cb::cublasComputeType_t> {
    use cb::cublasComputeType_t::*;
    Ok(match v {
        64 => CUBLAS_COMPUTE_16F,
        65 => CUBLAS_COMPUTE_16F_PEDANTIC,
        68 => CUBLAS_COMPUTE_32F,
        69 => CUBLAS_COMPUTE_32F_PEDANTIC,
        74 => CUBLAS_COMPUTE_32F_FAST_16F,
        75 => CUBLAS_COMPUTE_32F_FAST_16BF,
        77 => CUBLAS_COMPUTE_32F_FAST_TF32,
        78 => CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
        70 => CUBLAS_COMPUTE_64F,
        71 => CUBLAS_COMPUTE_64F_PEDANTIC,
        72 => CUBLAS_COMPUTE_32I,
        73 => CUBLAS_COMPUTE_32I_PEDANTIC,
        _ => return Err(UNSUPPORTED),
    })
}

fn math_mode(v: u32) -> cb::cublasMath_t {
    use cb::cublasMath_t::*;
    match v & 0xf {
        1 => CUBLAS_TENSOR_OP_MATH,
        2 => CUBLAS_PEDANTIC_MATH,
        3 => CUBLAS_TF32_TENSOR_OP_MATH,
        4 => CUBLAS_FP32_EMULATED_BF16X9_MATH,
        _ => CUBLAS_DEFAULT_MATH,
    }
}

/// Bytes of an element of a `cudaDataType` the plain routines use.
fn size_of_type(t: u32) -> Option<u64> {
    match t {
        dtype::R_16F | dtype::R_16BF => Some(2),
        dtype::R_32F | 6 | 15 | 10 => Some(4),
        dtype::R_64F | dtype::C_32F => Some(8),
        dtype::C_64F => Some(16),
        3 => Some(1),
        _ => None,
    }
}

/// The real type of a type's `asum`/`nrm2` results.
fn real_of(t: u32) -> u32 {
    match t {
        dtype::C_32F => dtype::R_32F,
        dtype::C_64F => dtype::R_64F,
        t => t,
    }
}

fn int(v: i64) -> c_int {
    // `check::validate` bounds sizes, leading dimensions and strides by `i32::MAX`.
    v.clamp(i64::from(c_int::MIN), i64::from(c_int::MAX)) as c_int
}

impl CudaExecutor {
    /// Checks `elems` elements of `size` bytes at `addr` (nothing to check when empty).
    fn blas_range(&self, addr: u64, elems: u64, size: u64) -> ExecResult<()> {
        if elems == 0 {
            return Ok(());
        }
        let len = elems.checked_mul(size).ok_or(FAULT)?;
        self.check_device_range(addr, len).map_err(|_| FAULT)
    }

    pub(super) fn blas_create_impl(&mut self) -> ExecResult<u64> {
        let n = self
            .blas
            .next
            .checked_add(1)
            .filter(|&n| n < 1 << 32)
            .ok_or(Status::MEMORY_ALLOCATION)?;
        let id = 0xb1a5_0000_0000 | n;
        self.blas_create_at(id)?;
        self.blas.next = n;
        Ok(id)
    }

    /// Creates a cuBLAS handle known to the guest as `id` (a new one, or one of a loaded
    /// session).
    pub(super) fn blas_create_at(&mut self, id: u64) -> ExecResult<()> {
        if !cublas::present() {
            return Err(UNSUPPORTED);
        }
        if self.blas.map.contains_key(&id) {
            return Err(Status::INVALID_VALUE);
        }
        self.cu_context()?;
        let h = cublas::create().map_err(|s| Status(s as u32))?;
        self.blas.map.insert(
            id,
            Handle {
                raw: h as usize,
                stream: None,
            },
        );
        Ok(())
    }

    pub(super) fn blas_destroy_impl(&mut self, handle: u64) -> ExecResult<()> {
        let h = self
            .blas
            .map
            .remove(&handle)
            .ok_or(Status(BLAS_NOT_INITIALIZED))?;
        self.cu_context()?;
        // SAFETY: a handle we created in this context and remove from the table here.
        ok(unsafe { cublas::destroy(h.raw as cb::cublasHandle_t) })
    }

    /// Destroys every handle (before the context goes away).
    pub(super) fn blas_release(&mut self) {
        if self.blas.map.is_empty() {
            return;
        }
        let bound = self.cu_context().is_ok();
        for (_, h) in self.blas.map.drain() {
            if bound {
                // SAFETY: our handle, destroyed once, with its context current.
                if let Err(s) = unsafe { cublas::destroy(h.raw as cb::cublasHandle_t) } {
                    warn!("cublasDestroy: {s:?}");
                }
            }
        }
    }

    pub(super) fn blas_call_impl(&mut self, r: &BlasCallReq) -> ExecResult<[u8; 16]> {
        let handle = *self
            .blas
            .map
            .get(&r.handle)
            .ok_or(Status(BLAS_NOT_INITIALIZED))?;
        let h = handle.raw as cb::cublasHandle_t;
        check::validate(r).map_err(Status)?;
        let stream = self
            .cu_stream(r.stream)
            .map_err(|_| Status(BLAS_EXECUTION_FAILED))?;
        self.cu_context()?;
        if handle.stream != Some(stream as usize) {
            // SAFETY: our handle with its context current; the stream belongs to the session.
            ok(unsafe { cublas::set_stream(h, stream.cast()) })?;
            if let Some(e) = self.blas.map.get_mut(&r.handle) {
                e.stream = Some(stream as usize);
            }
        }
        let device = r.flags & BLAS_DEVICE_POINTERS != 0;
        let mode = if device {
            cb::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE
        } else {
            cb::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST
        };
        // SAFETY: our handle with its context current; the modes are by value.
        unsafe {
            ok(cublas::set_pointer_mode(h, mode))?;
            ok(cublas::set_math_mode(h, math_mode(r.math_mode)))?;
        }
        let mut call = Call {
            exec: self,
            r,
            h,
            device,
            result: [0; 16],
        };
        call.run()?;
        Ok(call.result)
    }
}

/// One call being checked and run.
struct Call<'a> {
    exec: &'a CudaExecutor,
    r: &'a BlasCallReq,
    h: cb::cublasHandle_t,
    device: bool,
    /// A host-pointer-mode result.
    result: [u8; 16],
}

impl Call<'_> {
    /// A scalar argument of `size` bytes: a pointer to its value in the request (host
    /// mode), or its checked device address.
    fn scalar(&self, field: &[u8; 16], size: u64) -> ExecResult<*const c_void> {
        if self.device {
            let addr = u64::from_le_bytes(field[..8].try_into().unwrap_or_default());
            self.exec.blas_range(addr, 1, size)?;
            Ok(addr as *const c_void)
        } else {
            Ok(field.as_ptr().cast())
        }
    }

    /// Where a result of `size` bytes goes: the local buffer or the checked device address.
    fn out(&mut self, size: u64) -> ExecResult<*mut c_void> {
        if self.device {
            self.exec.blas_range(self.r.result, 1, size)?;
            Ok(self.r.result as *mut c_void)
        } else {
            Ok(self.result.as_mut_ptr().cast())
        }
    }

    fn vector(&self, addr: u64, n: i64, inc: i64, size: u64) -> ExecResult<*mut c_void> {
        self.exec
            .blas_range(addr, vector_extent(n, inc).ok_or(FAULT)?, size)?;
        Ok(addr as *mut c_void)
    }

    fn matrix(
        &self,
        addr: u64,
        rows: i64,
        cols: i64,
        ld: i64,
        size: u64,
    ) -> ExecResult<*mut c_void> {
        self.exec
            .blas_range(addr, matrix_extent(rows, cols, ld).ok_or(FAULT)?, size)?;
        Ok(addr as *mut c_void)
    }

    fn run(&mut self) -> ExecResult<()> {
        let r = *self.r;
        let size = size_of_type(r.type_a).ok_or(UNSUPPORTED)?;
        let (t, h) = (data_type(r.type_a)?, self.h);
        let (n, ix, iy) = (int(r.n), int(r.incx), int(r.incy));
        match r.func {
            func::ASUM | func::NRM2 | func::IAMAX | func::IAMIN => {
                let empty = r.n <= 0 || r.incx <= 0;
                let x = if empty {
                    std::ptr::null_mut()
                } else {
                    self.vector(r.x, r.n, r.incx, size)?
                };
                let (rt, rsize) = match r.func {
                    func::IAMAX | func::IAMIN => (dtype::R_32F, 4),
                    _ => {
                        let rt = real_of(r.type_a);
                        (rt, size_of_type(rt).ok_or(UNSUPPORTED)?)
                    }
                };
                let out = self.out(rsize)?;
                if empty {
                    // cuBLAS answers 0 without reading x.
                    if !self.device {
                        return Ok(());
                    }
                }
                let rt = data_type(rt)?;
                // SAFETY: every pointer was checked to cover what the routine touches;
                // the handle's context is current.
                ok(unsafe {
                    match r.func {
                        func::ASUM => cublas::asum_ex(h, n, x, t, ix, out, rt, rt),
                        func::NRM2 => cublas::nrm2_ex(h, n, x, t, ix, out, rt, rt),
                        func::IAMAX => cublas::iamax_ex(h, n, x, t, ix, out.cast()),
                        _ => cublas::iamin_ex(h, n, x, t, ix, out.cast()),
                    }
                })
            }
            func::DOT | func::DOTC => {
                let x = self.vector(r.x, r.n, r.incx, size)?;
                let y = self.vector(r.y, r.n, r.incy, size)?;
                let out = self.out(size)?;
                // SAFETY: `x` and `y` were checked (`self.vector`) to cover `n` elements at their
                // strides in this session's memory, `out` is a checked device address or this
                // call's result buffer, and the handle's context is current.
                ok(unsafe {
                    if r.func == func::DOT {
                        cublas::dot_ex(h, n, x, t, ix, y, t, iy, out, t, t)
                    } else {
                        cublas::dotc_ex(h, n, x, t, ix, y, t, iy, out, t, t)
                    }
                })
            }
            func::AXPY | func::COPY | func::SWAP | func::ROT => {
                if r.n <= 0 {
                    return Ok(());
                }
                let x = self.vector(r.x, r.n, r.incx, size)?;
                let y = self.vector(r.y, r.n, r.incy, size)?;
                let (a, s) = match r.func {
                    func::AXPY => (self.scalar(&r.alpha, size)?, std::ptr::null()),
                    func::ROT if check::is_complex(r.type_a) => return Err(UNSUPPORTED),
                    func::ROT => (self.scalar(&r.alpha, size)?, self.scalar(&r.beta, size)?),
                    _ => (std::ptr::null(), std::ptr::null()),
                };
                // SAFETY: both vectors and the scalars the routine reads were checked
                // above; the handle's context is current.
                ok(unsafe {
                    match r.func {
                        func::AXPY => cublas::axpy_ex(h, n, a, t, x, t, ix, y, t, iy, t),
                        func::COPY => cublas::copy_ex(h, n, x, t, ix, y, t, iy),
                        func::SWAP => cublas::swap_ex(h, n, x, t, ix, y, t, iy),
                        _ => cublas::rot_ex(h, n, x, t, ix, y, t, iy, a, s, t, t),
                    }
                })
            }
            func::SCAL => {
                if r.n <= 0 || r.incx <= 0 {
                    return Ok(());
                }
                let x = self.vector(r.x, r.n, r.incx, size)?;
                // csscal / zdscal: a real scalar of the vector's precision.
                let at = if check::is_complex(r.type_a) && !check::is_complex(r.type_b) {
                    real_of(r.type_a)
                } else {
                    r.type_a
                };
                let a = self.scalar(&r.alpha, size_of_type(at).ok_or(UNSUPPORTED)?)?;
                // SAFETY: `x` was checked (`self.vector`) to cover `n` elements `incx` apart; `a` is
                // a checked device address or the request's scalar bytes of type `at`; the
                // handle's context is current.
                ok(unsafe { cublas::scal_ex(h, n, a, data_type(at)?, x, t, ix, t) })
            }
            func::GEMV => {
                let (xl, yl) = if r.trans_a == OP_N {
                    (r.n, r.m)
                } else {
                    (r.m, r.n)
                };
                let a = self.matrix(r.a, r.m, r.n, r.lda, size)?;
                let x = self.vector(r.x, xl, r.incx, size)?;
                let y = self.vector(r.y, yl, r.incy, size)?;
                let al = self.scalar(&r.alpha, size)?;
                let be = self.scalar(&r.beta, size)?;
                let (m, lda, ta) = (int(r.m), int(r.lda), op(r.trans_a));
                // SAFETY: `A` (m x n, lda), `x` and `y` (their op-dependent lengths) were checked
                // just above; the scalars are checked device addresses or the request's bytes;
                // the element type matches the routine; the handle's context is current.
                ok(unsafe {
                    match r.type_a {
                        dtype::R_32F => cublas::sgemv(
                            h,
                            ta,
                            m,
                            n,
                            al.cast(),
                            a.cast(),
                            lda,
                            x.cast(),
                            ix,
                            be.cast(),
                            y.cast(),
                            iy,
                        ),
                        dtype::R_64F => cublas::dgemv(
                            h,
                            ta,
                            m,
                            n,
                            al.cast(),
                            a.cast(),
                            lda,
                            x.cast(),
                            ix,
                            be.cast(),
                            y.cast(),
                            iy,
                        ),
                        _ => return Err(UNSUPPORTED),
                    }
                })
            }
            func::GEMM | func::GEMM_BATCHED => self.gemm(),
            func::GETRF_BATCHED | func::GETRS_BATCHED => {
                self.result = self.exec.blas_lu(self.r, self.h)?;
                Ok(())
            }
            func::GER
            | func::SYMV
            | func::TRSV
            | func::SYMM
            | func::SYRK
            | func::TRSM
            | func::GEAM => match r.type_a {
                dtype::R_32F => self.level23::<f32>(),
                dtype::R_64F => self.level23::<f64>(),
                _ => Err(UNSUPPORTED),
            },
            _ => Err(UNSUPPORTED),
        }
    }

    /// GER, SYMV, TRSV, SYMM, SYRK, TRSM and GEAM in single or double precision.
    fn level23<T: Real>(&mut self) -> ExecResult<()> {
        let r = *self.r;
        let sz = size_of::<T>() as u64;
        let h = self.h;
        let (m, n, k) = (int(r.m), int(r.n), int(r.k));
        let (lda, ldb, ldc) = (int(r.lda), int(r.ldb), int(r.ldc));
        let (ix, iy) = (int(r.incx), int(r.incy));
        let al = || self.scalar(&r.alpha, sz).map(|p| p.cast::<T>());
        let be = || self.scalar(&r.beta, sz).map(|p| p.cast::<T>());
        let ka = if r.side == check::SIDE_LEFT { r.m } else { r.n };
        // SAFETY (every arm): each operand's full extent was checked just before, the
        // scalars are checked device addresses or our request's bytes, the element type
        // matches the routine, and the handle's context is current.
        match r.func {
            func::GER => {
                let x = self.vector(r.x, r.m, r.incx, sz)?.cast::<T>();
                let y = self.vector(r.y, r.n, r.incy, sz)?.cast::<T>();
                let a = self.matrix(r.a, r.m, r.n, r.lda, sz)?.cast::<T>();
                let al = al()?;
                // SAFETY: `x` (m), `y` (n) and `A` (m x n, lda) were checked just above; `al` is a
                // checked scalar of type `T`; the handle's context is current.
                ok(unsafe { T::ger(h, m, n, al, x, ix, y, iy, a, lda) })
            }
            func::SYMV => {
                let a = self.matrix(r.a, r.n, r.n, r.lda, sz)?.cast::<T>();
                let x = self.vector(r.x, r.n, r.incx, sz)?.cast::<T>();
                let y = self.vector(r.y, r.n, r.incy, sz)?.cast::<T>();
                let (al, be) = (al()?, be()?);
                // SAFETY: `A` (n x n, lda), `x` and `y` (n each) were checked just above; the
                // scalars are checked; the handle's context is current.
                ok(unsafe { T::symv(h, fill(r.uplo), n, al, a, lda, x, ix, be, y, iy) })
            }
            func::TRSV => {
                let a = self.matrix(r.a, r.n, r.n, r.lda, sz)?.cast::<T>();
                let x = self.vector(r.x, r.n, r.incx, sz)?.cast::<T>();
                let (u, t, d) = (fill(r.uplo), op(r.trans_a), diag(r.diag));
                // SAFETY: `A` (n x n, lda) and `x` (n, incx) were checked just above; the handle's
                // context is current.
                ok(unsafe { T::trsv(h, u, t, d, n, a, lda, x, ix) })
            }
            func::SYMM => {
                let a = self.matrix(r.a, ka, ka, r.lda, sz)?.cast::<T>();
                let b = self.matrix(r.b, r.m, r.n, r.ldb, sz)?.cast::<T>();
                let c = self.matrix(r.c, r.m, r.n, r.ldc, sz)?.cast::<T>();
                let (al, be) = (al()?, be()?);
                let (sd, u) = (side(r.side), fill(r.uplo));
                // SAFETY: `A` (ka x ka, lda), `B` and `C` (m x n, ldb/ldc) were checked just above;
                // the scalars are checked; the handle's context is current.
                ok(unsafe { T::symm(h, sd, u, m, n, al, a, lda, b, ldb, be, c, ldc) })
            }
            func::SYRK => {
                let (ar, ac) = if r.trans_a == OP_N {
                    (r.n, r.k)
                } else {
                    (r.k, r.n)
                };
                let a = self.matrix(r.a, ar, ac, r.lda, sz)?.cast::<T>();
                let c = self.matrix(r.c, r.n, r.n, r.ldc, sz)?.cast::<T>();
                let (al, be) = (al()?, be()?);
                let (u, t) = (fill(r.uplo), op(r.trans_a));
                // SAFETY: `A` (ar x ac, lda) and `C` (n x n, ldc) were checked just above; the
                // scalars are checked; the handle's context is current.
                ok(unsafe { T::syrk(h, u, t, n, k, al, a, lda, be, c, ldc) })
            }
            func::TRSM => {
                let a = self.matrix(r.a, ka, ka, r.lda, sz)?.cast::<T>();
                let b = self.matrix(r.b, r.m, r.n, r.ldb, sz)?.cast::<T>();
                let al = al()?;
                let (sd, u, t, d) = (side(r.side), fill(r.uplo), op(r.trans_a), diag(r.diag));
                // SAFETY: `A` (ka x ka, lda) and `B` (m x n, ldb) were checked just above; `al` is
                // checked; the handle's context is current.
                ok(unsafe { T::trsm(h, sd, u, t, d, m, n, al, a, lda, b, ldb) })
            }
            _ => {
                // GEAM: A and B are both checked (cuBLAS may read them whatever the
                // scalars are in device pointer mode).
                let (ar, ac) = if r.trans_a == OP_N {
                    (r.m, r.n)
                } else {
                    (r.n, r.m)
                };
                let (br, bc) = if r.trans_b == OP_N {
                    (r.m, r.n)
                } else {
                    (r.n, r.m)
                };
                let a = self.matrix(r.a, ar, ac, r.lda, sz)?.cast::<T>();
                let b = self.matrix(r.b, br, bc, r.ldb, sz)?.cast::<T>();
                let c = self.matrix(r.c, r.m, r.n, r.ldc, sz)?.cast::<T>();
                let (al, be) = (al()?, be()?);
                let (ta, tb) = (op(r.trans_a), op(r.trans_b));
                // SAFETY: `A` and `B` (their op-dependent shapes) and `C` (m x n) were checked just
                // above; the scalars are checked; the handle's context is current.
                ok(unsafe { T::geam(h, ta, tb, m, n, al, a, lda, be, b, ldb, c, ldc) })
            }
        }
    }
}

/// The typed cuBLAS routines of one real precision (each returns the raw status).
trait Real: Sized {
    #[allow(clippy::too_many_arguments)]
    unsafe fn ger(
        h: cb::cublasHandle_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        x: *const Self,
        incx: c_int,
        y: *const Self,
        incy: c_int,
        a: *mut Self,
        lda: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn symv(
        h: cb::cublasHandle_t,
        uplo: cb::cublasFillMode_t,
        n: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        x: *const Self,
        incx: c_int,
        beta: *const Self,
        y: *mut Self,
        incy: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsv(
        h: cb::cublasHandle_t,
        uplo: cb::cublasFillMode_t,
        trans: cb::cublasOperation_t,
        diag: cb::cublasDiagType_t,
        n: c_int,
        a: *const Self,
        lda: c_int,
        x: *mut Self,
        incx: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn symm(
        h: cb::cublasHandle_t,
        side: cb::cublasSideMode_t,
        uplo: cb::cublasFillMode_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        b: *const Self,
        ldb: c_int,
        beta: *const Self,
        c: *mut Self,
        ldc: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn syrk(
        h: cb::cublasHandle_t,
        uplo: cb::cublasFillMode_t,
        trans: cb::cublasOperation_t,
        n: c_int,
        k: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        beta: *const Self,
        c: *mut Self,
        ldc: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsm(
        h: cb::cublasHandle_t,
        side: cb::cublasSideMode_t,
        uplo: cb::cublasFillMode_t,
        trans: cb::cublasOperation_t,
        diag: cb::cublasDiagType_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        b: *mut Self,
        ldb: c_int,
    ) -> BlasResult<()>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn geam(
        h: cb::cublasHandle_t,
        ta: cb::cublasOperation_t,
        tb: cb::cublasOperation_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        beta: *const Self,
        b: *const Self,
        ldb: c_int,
        c: *mut Self,
        ldc: c_int,
    ) -> BlasResult<()>;
}

macro_rules! real {
    ($t:ty, $ger:ident, $symv:ident, $trsv:ident, $symm:ident, $syrk:ident, $trsm:ident, $geam:ident) => {
        impl Real for $t {
            unsafe fn ger(
                h: cb::cublasHandle_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                x: *const Self,
                incx: c_int,
                y: *const Self,
                incy: c_int,
                a: *mut Self,
                lda: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract (checked operands, current context).
                unsafe { cublas::$ger(h, m, n, alpha, x, incx, y, incy, a, lda) }
            }
            unsafe fn symv(
                h: cb::cublasHandle_t,
                uplo: cb::cublasFillMode_t,
                n: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                x: *const Self,
                incx: c_int,
                beta: *const Self,
                y: *mut Self,
                incy: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$symv(h, uplo, n, alpha, a, lda, x, incx, beta, y, incy) }
            }
            unsafe fn trsv(
                h: cb::cublasHandle_t,
                uplo: cb::cublasFillMode_t,
                trans: cb::cublasOperation_t,
                diag: cb::cublasDiagType_t,
                n: c_int,
                a: *const Self,
                lda: c_int,
                x: *mut Self,
                incx: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$trsv(h, uplo, trans, diag, n, a, lda, x, incx) }
            }
            unsafe fn symm(
                h: cb::cublasHandle_t,
                side: cb::cublasSideMode_t,
                uplo: cb::cublasFillMode_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                b: *const Self,
                ldb: c_int,
                beta: *const Self,
                c: *mut Self,
                ldc: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$symm(h, side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc) }
            }
            unsafe fn syrk(
                h: cb::cublasHandle_t,
                uplo: cb::cublasFillMode_t,
                trans: cb::cublasOperation_t,
                n: c_int,
                k: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                beta: *const Self,
                c: *mut Self,
                ldc: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$syrk(h, uplo, trans, n, k, alpha, a, lda, beta, c, ldc) }
            }
            unsafe fn trsm(
                h: cb::cublasHandle_t,
                side: cb::cublasSideMode_t,
                uplo: cb::cublasFillMode_t,
                trans: cb::cublasOperation_t,
                diag: cb::cublasDiagType_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                b: *mut Self,
                ldb: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$trsm(h, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb) }
            }
            unsafe fn geam(
                h: cb::cublasHandle_t,
                ta: cb::cublasOperation_t,
                tb: cb::cublasOperation_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                beta: *const Self,
                b: *const Self,
                ldb: c_int,
                c: *mut Self,
                ldc: c_int,
            ) -> BlasResult<()> {
                // SAFETY: the caller's contract for this trait method: every operand pointer covers
                // what the routine reads and writes (checked against the session's
                // allocations), the scalars are valid, the handle's context is current.
                unsafe { cublas::$geam(h, ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc) }
            }
        }
    };
}

real!(f32, sger, ssymv, strsv, ssymm, ssyrk, strsm, sgeam);
real!(f64, dger, dsymv, dtrsv, dsymm, dsyrk, dtrsm, dgeam);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_values_map_to_cublas_enums_or_fail() {
        assert_eq!(
            data_type(dtype::R_16F).ok(),
            Some(cb::cudaDataType::CUDA_R_16F)
        );
        assert_eq!(data_type(99).err(), Some(UNSUPPORTED));
        assert_eq!(
            compute_type(77).ok(),
            Some(cb::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32)
        );
        assert_eq!(compute_type(0).err(), Some(UNSUPPORTED));
        assert_eq!(op(7), cb::cublasOperation_t::CUBLAS_OP_N);
        assert_eq!(
            math_mode(3 | 16),
            cb::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        );
    }

    #[test]
    fn extents_cover_strided_operands() {
        assert_eq!(vector_extent(0, 5), Some(0));
        assert_eq!(vector_extent(4, -3), Some(10));
        assert_eq!(matrix_extent(3, 2, 5), Some(8));
        assert_eq!(matrix_extent(0, 2, 5), Some(0));
        assert_eq!(real_of(dtype::C_64F), dtype::R_64F);
        assert_eq!(size_of_type(dtype::C_32F), Some(8));
    }
}
