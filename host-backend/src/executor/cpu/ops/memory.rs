// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's device memory calls ([`MemoryOps`]): allocations in the session's
//! heap (`memory::DeviceHeap`), copies and memsets row by row over its spans.

use vcuda_protocol::region::{self, Region};
use vcuda_protocol::{MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq};

use crate::data::DataSegs;
use crate::executor::cpu::{AllocKind, CpuExecutor};
use crate::executor::{ExecResult, MemoryOps, Status};

impl MemoryOps for CpuExecutor {
    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        self.heap.alloc(size, AllocKind::User)
    }

    fn free(&mut self, ptr: u64) -> ExecResult<()> {
        self.heap.free(ptr, AllocKind::User)
    }

    fn memcpy_htod(&mut self, r: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let rows = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        for (i, addr) in rows.rows() {
            for (at, n) in self.heap.spans(addr, r.width)? {
                let dst = self.heap.bytes_mut(at, n)?;
                src.read_at(i * r.width + (at - addr), dst)
                    .map_err(|_| Status::INVALID_VALUE)?;
            }
        }
        Ok(())
    }

    fn memcpy_dtoh(&mut self, r: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let rows = Region::new(r.src, r.spitch, r.width, r.height)?;
        for (i, addr) in rows.rows() {
            for (at, n) in self.heap.spans(addr, r.width)? {
                let src = self.heap.bytes(at, n)?;
                dst.write_at(i * r.width + (at - addr), src)
                    .map_err(|_| Status::INVALID_VALUE)?;
            }
        }
        Ok(())
    }

    fn memcpy_dtod(&mut self, r: &MemcpyDtoDReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let d = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        let s = Region::new(r.src, r.spitch, r.width, r.height)?;
        for ((_, da), (_, sa)) in d.rows().zip(s.rows()) {
            self.heap.copy(da, sa, r.width)?;
        }
        Ok(())
    }

    fn memset(&mut self, r: &MemsetReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        let es = u64::from(r.elem_size);
        let row_bytes = region::memset_row_bytes(r.width, es)?;
        let rows = Region::new(r.dst, r.pitch, row_bytes, r.height)?;
        let pattern = r.value.to_le_bytes();
        for (_, addr) in rows.rows() {
            if es > 1 && addr % es != 0 {
                return Err(Status::INVALID_VALUE);
            }
            for (at, n) in self.heap.spans(addr, row_bytes)? {
                let bytes = self.heap.bytes_mut(at, n)?;
                match es {
                    1 => bytes.fill(pattern[0]),
                    _ => bytes
                        .chunks_exact_mut(es as usize)
                        .for_each(|c| c.copy_from_slice(&pattern[..es as usize])),
                }
            }
        }
        Ok(())
    }
}
