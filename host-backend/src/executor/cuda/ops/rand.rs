// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's cuRAND calls ([`RandOps`]), done in `rand.rs`.

use vcuda_protocol::{RandGenerateReq, RandSetReq};

use crate::data::DataSegs;
use crate::executor::cuda::CudaExecutor;
use crate::executor::{ExecResult, RandOps};

impl RandOps for CudaExecutor {
    fn rand_create(&mut self, rng_type: u32, flags: u32) -> ExecResult<u64> {
        self.rand_create_impl(rng_type, flags & vcuda_protocol::lib::RAND_HOST != 0)
    }

    fn rand_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.rand_destroy_impl(handle)
    }

    fn rand_set(&mut self, req: &RandSetReq) -> ExecResult<()> {
        self.rand_set_impl(req)
    }

    fn rand_generate(&mut self, req: &RandGenerateReq, out: &DataSegs<'_>) -> ExecResult<u64> {
        self.rand_generate_impl(req, out)
    }
}
