// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's cuBLAS calls ([`BlasOps`]), on OpenBLAS and LAPACK (`blas/`).

use vcuda_protocol::{BlasCallReq, lib};

use crate::executor::cpu::CpuExecutor;
use crate::executor::{BlasOps, ExecResult, Status};

impl BlasOps for CpuExecutor {
    fn blas_create(&mut self, device: u32) -> ExecResult<u64> {
        self.check_device(device)
            .map_err(|_| Status(lib::BLAS_INVALID_VALUE))?;
        self.blas.create()
    }

    fn blas_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.blas.destroy(handle)
    }

    fn blas_call(&mut self, req: &BlasCallReq) -> ExecResult<[u8; 16]> {
        self.check_stream(req.stream)
            .map_err(|_| Status(lib::BLAS_EXECUTION_FAILED))?;
        self.blas.call(&mut self.heap, req)
    }
}
