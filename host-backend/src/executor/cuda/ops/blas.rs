// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's cuBLAS calls ([`BlasOps`]), done in `blas.rs`.

use vcuda_protocol::BlasCallReq;

use crate::executor::cuda::CudaExecutor;
use crate::executor::{BlasOps, ExecResult, Status};

impl BlasOps for CudaExecutor {
    fn blas_create(&mut self, device: u32) -> ExecResult<u64> {
        self.check_device(device)
            .map_err(|_| Status(vcuda_protocol::lib::BLAS_INVALID_VALUE))?;
        self.blas_create_impl()
    }

    fn blas_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.blas_destroy_impl(handle)
    }

    fn blas_call(&mut self, req: &BlasCallReq) -> ExecResult<[u8; 16]> {
        self.blas_call_impl(req)
    }
}
