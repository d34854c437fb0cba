// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Operand extents: how many elements a strided vector or a column-major matrix with a
//! leading dimension spans, where the matrices of a strided batch start, and the check of
//! such an extent against the session's device memory (one allocation, aligned) that
//! yields the raw pointer handed to OpenBLAS.
//!
//! Every BLAS operand of the CPU executor is checked here and nowhere else; the extents
//! themselves are `vcuda_protocol::region`'s, shared with the CUDA executor.

use std::ptr::NonNull;

use vcuda_protocol::region;

use super::call::{Ctx, FAULT, MISALIGNED};
use super::elem::Elem;
use crate::executor::ExecResult;

/// Elements spanned by a strided vector ([`region::vector_extent`]); an extent beyond the
/// address space faults.
pub(super) fn vec_extent(n: i64, inc: i64) -> ExecResult<u64> {
    region::vector_extent(n, inc).ok_or(FAULT)
}

/// Elements spanned by a column-major matrix ([`region::matrix_extent`]); an extent beyond
/// the address space faults.
pub(super) fn mat_extent(rows: i64, cols: i64, ld: i64) -> ExecResult<u64> {
    region::matrix_extent(rows, cols, ld).ok_or(FAULT)
}

/// `base + index * stride` elements of `size` bytes, as a device address.
pub(super) fn offset(base: u64, index: i64, stride: i64, size: u64) -> ExecResult<u64> {
    let off = i128::from(index) * i128::from(stride) * i128::from(size);
    u64::try_from(i128::from(base) + off).map_err(|_| FAULT)
}

impl Ctx<'_> {
    /// The host address of `elems` elements of `size` bytes at device address `addr`,
    /// checked to lie in one allocation and to be aligned to `align`.
    pub(super) fn raw(&self, addr: u64, elems: u64, size: u64, align: u64) -> ExecResult<*mut u8> {
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

    /// `elems` elements of type `T` at `addr`, checked as [`Ctx::raw`] does.
    pub(super) fn ptr<T: Elem>(&self, addr: u64, elems: u64) -> ExecResult<*mut T> {
        self.raw(addr, elems, T::SIZE, T::ALIGN).map(|p| p.cast())
    }

    /// A vector of `n` elements `inc` apart at `addr`, its whole extent checked.
    pub(super) fn vector<T: Elem>(&self, addr: u64, n: i64, inc: i64) -> ExecResult<*mut T> {
        self.ptr(addr, vec_extent(n, inc)?)
    }

    /// A column-major `rows x cols` matrix with leading dimension `ld` at `addr`, its whole
    /// extent checked.
    pub(super) fn matrix<T: Elem>(
        &self,
        addr: u64,
        rows: i64,
        cols: i64,
        ld: i64,
    ) -> ExecResult<*mut T> {
        self.ptr(addr, mat_extent(rows, cols, ld)?)
    }
}
