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
//! The modules: [`extent`] checks operands against device memory, [`elem`] binds each
//! element type to its CBLAS and LAPACK routines, [`level1`], [`level2`] and [`level3`]
//! run the BLAS levels, [`lapack`] the batched LU routines and [`gemm_ex`] the
//! mixed-precision GEMM.

mod call;
mod elem;
mod extent;
mod gemm_ex;
mod lapack;
mod lazy;
mod level1;
mod level2;
mod level3;

use std::collections::HashSet;

use vcuda_protocol::BlasCallReq;
use vcuda_protocol::blas as check;
use vcuda_protocol::lib::{BLAS_NOT_INITIALIZED, dtype, func};

use super::memory::DeviceHeap;
use crate::executor::{ExecResult, Status};

use call::{Ctx, UNSUPPORTED};
use elem::Elem;
pub use lazy::{C32, C64};

/// The session's cuBLAS handles. The CPU needs no per-handle state: the guest sends the
/// stream, pointer mode and math mode with every call.
#[derive(Debug, Default)]
pub struct Blas {
    handles: HashSet<u64>,
    next: u64,
}

impl Blas {
    /// A new handle; fails when OpenBLAS cannot be loaded (see [`lazy`]).
    pub fn create(&mut self) -> ExecResult<u64> {
        if !lazy::available() {
            return Err(Status(BLAS_NOT_INITIALIZED));
        }
        self.next += 1;
        let h = 0xb1a5_0000_0000 | self.next;
        self.handles.insert(h);
        Ok(h)
    }

    /// Destroys a handle.
    pub fn destroy(&mut self, h: u64) -> ExecResult<()> {
        if self.handles.remove(&h) {
            Ok(())
        } else {
            Err(Status(BLAS_NOT_INITIALIZED))
        }
    }

    /// The live handles and the counter behind the next (a saved session's).
    pub fn state(&self) -> (Vec<u64>, u64) {
        let mut h: Vec<u64> = self.handles.iter().copied().collect();
        h.sort_unstable();
        (h, self.next)
    }

    /// Takes saved handles (see [`Blas::state`]) into this session, which has none;
    /// `false` if one is not a handle this counter could have made.
    pub fn restore(&mut self, handles: &[u64], next: u64) -> bool {
        const TAG: u64 = 0xb1a5_0000_0000;
        let ok = self.handles.is_empty()
            && next < 1 << 32
            && handles.len() <= (next as usize)
            && handles
                .iter()
                .all(|&h| h & !0xffff_ffff == TAG && (1..=next).contains(&(h & 0xffff_ffff)));
        if ok {
            self.handles = handles.iter().copied().collect();
            self.next = next;
        }
        ok && self.handles.len() == handles.len()
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
            return gemm_ex::gemm_ex(&mut cx).map(|()| [0; 16]);
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

/// Runs a request whose element type is `T`.
fn run<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let done = |()| [0u8; 16];
    match cx.r.func {
        func::ASUM | func::NRM2 => level1::asum_nrm2::<T>(cx),
        func::IAMAX | func::IAMIN => level1::iamax_iamin::<T>(cx),
        func::DOT | func::DOTC => level1::dot::<T>(cx),
        func::AXPY | func::COPY | func::SWAP | func::ROT => level1::two_vectors::<T>(cx).map(done),
        func::SCAL => level1::scal::<T>(cx).map(done),
        func::GEMV => level2::gemv::<T>(cx).map(done),
        func::GER => level2::ger::<T>(cx).map(done),
        func::SYMV => level2::symv::<T>(cx).map(done),
        func::TRSV => level2::trsv::<T>(cx).map(done),
        func::GEMM | func::GEMM_BATCHED => level3::gemm::<T>(cx).map(done),
        func::SYMM => level3::symm::<T>(cx).map(done),
        func::SYRK => level3::syrk::<T>(cx).map(done),
        func::TRSM => level3::trsm::<T>(cx).map(done),
        func::GEAM => level3::geam::<T>(cx).map(done),
        func::GETRF_BATCHED => lapack::getrf_batched::<T>(cx).map(done),
        func::GETRS_BATCHED => lapack::getrs_batched::<T>(cx),
        _ => Err(UNSUPPORTED),
    }
}

#[cfg(test)]
mod tests;
