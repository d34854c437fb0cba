// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS on the CPU executor: CBLAS and LAPACK (the system OpenBLAS, Debian package
//! `libopenblas-dev`) run on the session's simulated device memory.
//!
//! Every operand is resolved against the session's [`DeviceHeap`] before anything runs:
//! the full extent an operation may touch (`(n - 1) * |inc| + 1` elements of a vector,
//! `(cols - 1) * ld + rows` of a column-major matrix, every matrix of a batch) must lie in
//! one allocation and be aligned to its element, or the call fails with
//! `cudaErrorIllegalAddress` / `cudaErrorMisalignedAddress`, as a faulting kernel would.
//! Only then do raw pointers into the heap reach OpenBLAS; no Rust reference to device
//! memory is alive meanwhile, so aliased operands (which cuBLAS allows for some routines)
//! are fine.
//!
//! Scalars follow the handle's pointer mode: host mode carries values in the request,
//! device mode carries device addresses, and reductions write their result to device
//! memory. Semantics follow cuBLAS: reductions of `n <= 0` (or `incx <= 0`) give 0,
//! `iamax`/`iamin` are 1-based, `beta == 0` never reads C.
//!
//! Layout: this module resolves operands ([`Ctx`]) and dispatches; `elem` (the [`Elem`]
//! trait, real types) and `complex` bind the CBLAS/LAPACK routines per element type;
//! `level` runs levels 1 to 3, GEMM and GEAM; `lapack` the batched LU routines; `ex` the
//! mixed-precision `GemmEx` combinations.

use std::collections::HashSet;
use std::ffi::{c_char, c_int};
use std::ptr::NonNull;

use cblas_sys::*;
use half::f16;
use vcuda_protocol::blas::{self as check, OP_C, OP_N, OP_T};
use vcuda_protocol::lib::{
    BLAS_DEVICE_POINTERS, BLAS_EXECUTION_FAILED, BLAS_NOT_INITIALIZED, BLAS_NOT_SUPPORTED, dtype,
    func,
};
use vcuda_protocol::{BlasCallReq, region, status};

use super::memory::DeviceHeap;
use crate::executor::{ExecResult, Status};

// The CBLAS and LAPACK symbols `cblas-sys` and `lapack-sys` declare come from OpenBLAS.
#[link(name = "openblas")]
unsafe extern "C" {}

const FAULT: Status = Status(status::ILLEGAL_ADDRESS);
const MISALIGNED: Status = Status(status::MISALIGNED_ADDRESS);
const UNSUPPORTED: Status = Status(BLAS_NOT_SUPPORTED);

/// `cublasComputeType_t` values.
mod compute {
    pub const C16F: u32 = 64;
    pub const C16F_PEDANTIC: u32 = 65;
    pub const C32F: u32 = 68;
    pub const C32F_PEDANTIC: u32 = 69;
    pub const C64F: u32 = 70;
    pub const C64F_PEDANTIC: u32 = 71;
    pub const C32F_FAST_16F: u32 = 74;
    pub const C32F_FAST_16BF: u32 = 75;
    pub const C32F_FAST_TF32: u32 = 77;
    pub const C32F_EMULATED_16BFX9: u32 = 78;
}

/// The session's cuBLAS handles. The CPU needs no per-handle state: the guest sends the
/// stream, pointer mode and math mode with every call.
#[derive(Debug, Default)]
pub struct Blas {
    handles: HashSet<u64>,
    next: u64,
}

impl Blas {
    /// A new handle.
    pub fn create(&mut self) -> u64 {
        self.next += 1;
        let h = 0xb1a5_0000_0000 | self.next;
        self.handles.insert(h);
        h
    }

    /// Destroys a handle.
    pub fn destroy(&mut self, h: u64) -> ExecResult<()> {
        if self.handles.remove(&h) {
            Ok(())
        } else {
            Err(Status(BLAS_NOT_INITIALIZED))
        }
    }

    /// Forgets every handle (`cudaDeviceReset`).
    pub fn clear(&mut self) {
        self.handles.clear();
    }

    /// Runs one operation.
    pub fn call(&self, heap: &mut DeviceHeap, r: &BlasCallReq) -> ExecResult<[u8; 16]> {
        if !self.handles.contains(&r.handle) {
            return Err(Status(BLAS_NOT_INITIALIZED));
        }
        check::validate(r).map_err(Status)?;
        let mut cx = Ctx { heap, r };
        if matches!(r.func, func::GEMM | func::GEMM_BATCHED) && is_ex(r) {
            return gemm_ex(&mut cx).map(|()| [0; 16]);
        }
        match r.type_a {
            dtype::R_32F => run::<f32>(&mut cx),
            dtype::R_64F => run::<f64>(&mut cx),
            dtype::C_32F => run::<C32>(&mut cx),
            dtype::C_64F => run::<C64>(&mut cx),
            _ => Err(UNSUPPORTED),
        }
    }
}

/// Whether a GEMM request is a `cublasGemmEx`-style one with mixed types.
fn is_ex(r: &BlasCallReq) -> bool {
    r.compute != 0 || r.type_a != r.type_b || r.type_a != r.type_c
}

/// One call's view of the heap.
struct Ctx<'a> {
    heap: &'a mut DeviceHeap,
    r: &'a BlasCallReq,
}

/// Elements spanned by a strided vector ([`region::vector_extent`]); an extent beyond the
/// address space faults.
fn vec_extent(n: i64, inc: i64) -> ExecResult<u64> {
    region::vector_extent(n, inc).ok_or(FAULT)
}

/// Elements spanned by a column-major matrix ([`region::matrix_extent`]); an extent beyond
/// the address space faults.
fn mat_extent(rows: i64, cols: i64, ld: i64) -> ExecResult<u64> {
    region::matrix_extent(rows, cols, ld).ok_or(FAULT)
}

/// `base + index * stride` elements of `size` bytes, as a device address.
fn offset(base: u64, index: i64, stride: i64, size: u64) -> ExecResult<u64> {
    let off = i128::from(index) * i128::from(stride) * i128::from(size);
    u64::try_from(i128::from(base) + off).map_err(|_| FAULT)
}

fn int(v: i64) -> c_int {
    // `check::validate` bounds every size, leading dimension and stride by `i32::MAX`.
    v.clamp(i64::from(c_int::MIN), i64::from(c_int::MAX)) as c_int
}

impl Ctx<'_> {
    fn device_ptrs(&self) -> bool {
        self.r.flags & BLAS_DEVICE_POINTERS != 0
    }

    /// The host address of `elems` elements of `size` bytes at device address `addr`,
    /// checked to lie in one allocation and to be aligned to `align`.
    fn raw(&self, addr: u64, elems: u64, size: u64, align: u64) -> ExecResult<*mut u8> {
        if elems == 0 {
            return Ok(NonNull::<u64>::dangling().as_ptr().cast());
        }
        if !addr.is_multiple_of(align) {
            return Err(MISALIGNED);
        }
        let bytes = elems.checked_mul(size).ok_or(FAULT)?;
        let a = self.heap.resolve(addr).ok_or(FAULT)?;
        let off = addr - a.base;
        match off.checked_add(bytes) {
            // SAFETY: `off + bytes <= a.len`, so the pointer stays inside the allocation.
            Some(end) if end <= a.len => Ok(unsafe { a.host.add(off as usize) }),
            _ => Err(FAULT),
        }
    }

    fn ptr<T: Elem>(&self, addr: u64, elems: u64) -> ExecResult<*mut T> {
        self.raw(addr, elems, T::SIZE, T::ALIGN).map(|p| p.cast())
    }

    fn vector<T: Elem>(&self, addr: u64, n: i64, inc: i64) -> ExecResult<*mut T> {
        self.ptr(addr, vec_extent(n, inc)?)
    }

    fn matrix<T: Elem>(&self, addr: u64, rows: i64, cols: i64, ld: i64) -> ExecResult<*mut T> {
        self.ptr(addr, mat_extent(rows, cols, ld)?)
    }

    /// A scalar argument of `size` bytes: the value in host pointer mode, read from device
    /// memory in device pointer mode.
    fn scalar_bytes(&self, field: &[u8; 16], size: u64) -> ExecResult<[u8; 16]> {
        if !self.device_ptrs() {
            return Ok(*field);
        }
        let addr = u64::from_le_bytes(field[..8].try_into().unwrap_or_default());
        let mut out = [0u8; 16];
        let src = self.heap.bytes(addr, size).map_err(|_| FAULT)?;
        out[..src.len()].copy_from_slice(src);
        Ok(out)
    }

    fn scalar<T: Elem>(&self, field: &[u8; 16]) -> ExecResult<T> {
        self.scalar_bytes(field, T::SIZE).map(|b| T::load(&b))
    }

    /// Delivers a scalar result: in the reply (host mode) or to `result` (device mode).
    fn result(&mut self, bytes: &[u8]) -> ExecResult<[u8; 16]> {
        let mut out = [0u8; 16];
        if self.device_ptrs() {
            let dst = self
                .heap
                .bytes_mut(self.r.result, bytes.len() as u64)
                .map_err(|_| FAULT)?;
            dst.copy_from_slice(bytes);
        } else {
            out[..bytes.len()].copy_from_slice(bytes);
        }
        Ok(out)
    }

    /// Reads `n` device pointers from the device array at `addr`.
    fn pointer_array(&self, addr: u64, n: i64) -> ExecResult<Vec<u64>> {
        let n = u64::try_from(n).map_err(|_| FAULT)?;
        let bytes = self
            .heap
            .bytes(addr, n.checked_mul(8).ok_or(FAULT)?)
            .map_err(|_| FAULT)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect())
    }
}

fn trans(t: u32) -> CBLAS_TRANSPOSE {
    match t {
        OP_T => CblasTrans,
        OP_C => CblasConjTrans,
        _ => CblasNoTrans,
    }
}

fn uplo(u: u32) -> CBLAS_UPLO {
    if u == check::FILL_UPPER {
        CblasUpper
    } else {
        CblasLower
    }
}

fn side(s: u32) -> CBLAS_SIDE {
    if s == check::SIDE_RIGHT {
        CblasRight
    } else {
        CblasLeft
    }
}

fn diag(d: u32) -> CBLAS_DIAG {
    if d == check::DIAG_UNIT {
        CblasUnit
    } else {
        CblasNonUnit
    }
}

mod complex;
mod elem;
mod ex;
mod lapack;
mod level;
#[cfg(test)]
mod tests;

use self::elem::*;
use self::ex::*;
use self::lapack::*;
use self::level::*;
