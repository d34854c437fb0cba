// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What every CPU cuBLAS routine shares: one call's view of the heap ([`Ctx`]: its scalars
//! in either pointer mode, its scalar result, device pointer arrays), the statuses a call
//! fails with, the compute types, and size helpers.

use std::ffi::c_int;

use vcuda_protocol::blas::OP_N;
use vcuda_protocol::lib::{BLAS_DEVICE_POINTERS, BLAS_NOT_SUPPORTED};
use vcuda_protocol::{BlasCallReq, status};

use super::elem::Elem;
use crate::executor::cpu::memory::DeviceHeap;
use crate::executor::{ExecResult, Status};

pub(super) const FAULT: Status = Status(status::ILLEGAL_ADDRESS);
pub(super) const MISALIGNED: Status = Status(status::MISALIGNED_ADDRESS);
pub(super) const UNSUPPORTED: Status = Status(BLAS_NOT_SUPPORTED);

/// `cublasComputeType_t` values.
pub(super) mod compute {
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

/// One call's view of the heap.
pub(super) struct Ctx<'a> {
    pub(super) heap: &'a mut DeviceHeap,
    pub(super) r: &'a BlasCallReq,
}

pub(super) fn int(v: i64) -> c_int {
    // `check::validate` bounds every size, leading dimension and stride by `i32::MAX`.
    v.clamp(i64::from(c_int::MIN), i64::from(c_int::MAX)) as c_int
}

/// Rows and columns of the stored `op(X)` of an `rows x cols` result.
pub(super) fn stored(t: u32, rows: i64, cols: i64) -> (i64, i64) {
    if t == OP_N {
        (rows, cols)
    } else {
        (cols, rows)
    }
}

impl Ctx<'_> {
    pub(super) fn device_ptrs(&self) -> bool {
        self.r.flags & BLAS_DEVICE_POINTERS != 0
    }

    /// A scalar argument of `size` bytes: the value in host pointer mode, read from device
    /// memory in device pointer mode.
    pub(super) fn scalar_bytes(&self, field: &[u8; 16], size: u64) -> ExecResult<[u8; 16]> {
        if !self.device_ptrs() {
            return Ok(*field);
        }
        let addr = u64::from_le_bytes(field[..8].try_into().unwrap_or_default());
        let mut out = [0u8; 16];
        let src = self.heap.bytes(addr, size).map_err(|_| FAULT)?;
        out[..src.len()].copy_from_slice(src);
        Ok(out)
    }

    pub(super) fn scalar<T: Elem>(&self, field: &[u8; 16]) -> ExecResult<T> {
        self.scalar_bytes(field, T::SIZE).map(|b| T::load(&b))
    }

    /// Delivers a scalar result: in the reply (host mode) or to `result` (device mode).
    pub(super) fn result(&mut self, bytes: &[u8]) -> ExecResult<[u8; 16]> {
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
    pub(super) fn pointer_array(&self, addr: u64, n: i64) -> ExecResult<Vec<u64>> {
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
