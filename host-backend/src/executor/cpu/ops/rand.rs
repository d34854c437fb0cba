// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's cuRAND calls ([`RandOps`]): cuRAND's generators (`rand/`).

use vcuda_protocol::{RandGenerateReq, RandSetReq, lib};

use crate::data::DataSegs;
use crate::executor::cpu::CpuExecutor;
use crate::executor::{ExecResult, RandOps, Status};

impl RandOps for CpuExecutor {
    fn rand_create(&mut self, rng_type: u32, flags: u32) -> ExecResult<u64> {
        self.rand.create(rng_type, flags & lib::RAND_HOST != 0)
    }

    fn rand_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.rand.destroy(handle)
    }

    fn rand_set(&mut self, req: &RandSetReq) -> ExecResult<()> {
        self.rand.set(req.handle, req.what, req.value)
    }

    fn rand_generate(&mut self, req: &RandGenerateReq, out: &DataSegs<'_>) -> ExecResult<u64> {
        self.check_stream(req.stream)
            .map_err(|_| Status(lib::RAND_LAUNCH_FAILURE))?;
        let to_host = req.flags & lib::RAND_TO_HOST != 0;
        if self.rand.is_host(req.handle)? != to_host {
            return Err(Status(lib::RAND_TYPE_ERROR));
        }
        let len = lib::dist::elem_size(req.dist)
            .and_then(|e| e.checked_mul(req.n))
            .ok_or(Status(lib::RAND_TYPE_ERROR))?;
        // Check the destination before advancing the generator.
        if !to_host {
            self.heap
                .bytes_mut(req.dst, len)
                .map_err(|_| Status(vcuda_protocol::status::ILLEGAL_ADDRESS))?;
        }
        let bytes = self.rand.generate(req)?;
        if to_host {
            out.write_at(0, &bytes)
                .map_err(|_| Status(lib::RAND_LAUNCH_FAILURE))?;
            Ok(bytes.len() as u64)
        } else {
            let dst = self
                .heap
                .bytes_mut(req.dst, len)
                .map_err(|_| Status(vcuda_protocol::status::ILLEGAL_ADDRESS))?;
            dst.copy_from_slice(&bytes);
            Ok(0)
        }
    }
}
