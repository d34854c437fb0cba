// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`CudaFactory`] as an [`ExecutorFactory`]: a session per [`CudaExecutor`], and guest RAM
//! pinned for the device as the vhost-user frontend shares it.

use vcuda_protocol::ExecutorKind;

use super::CudaExecutor;
use super::device::CudaFactory;
use crate::executor::{ExecResult, Executor, ExecutorFactory, Tenant};

impl CudaFactory {
    /// A new session's executor, as its concrete type.
    pub fn new_executor(&self) -> ExecResult<CudaExecutor> {
        CudaExecutor::new(self.shared.clone())
    }
}

impl ExecutorFactory for CudaFactory {
    fn pageable_access(&self) -> bool {
        self.shared.pageable
    }

    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Cuda
    }

    fn new_session(&self, _tenant: Tenant) -> ExecResult<Box<dyn Executor>> {
        Ok(Box::new(self.new_executor()?))
    }

    fn guest_memory_changed(&self, regions: &[(usize, usize)]) {
        // Without the opt-in, only an empty table (the connection's end) is applied, which
        // unpins nothing because nothing was pinned.
        if self.shared.config.register_guest_memory || regions.is_empty() {
            self.shared.set_guest_memory(regions);
        }
    }
}
