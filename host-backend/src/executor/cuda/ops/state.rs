// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's live migration ([`StateOps`]): not built yet. Loading a session on
//! a GPU needs every allocation re-created at its old device address (reserving and mapping
//! the same ranges with the driver's virtual memory calls) and modules reloaded from their
//! images; until then both directions refuse, naming why.

use crate::executor::cuda::CudaExecutor;
use std::sync::Arc;

use crate::executor::{Images, ModuleImage, StateOps};
use crate::migrate::precopy::ChunkRead;
use crate::migrate::state::ExecState;
use crate::migrate::{Known, MigrateError};

/// What the refusal names.
const WHY: &str = "a session of the CUDA executor (only the CPU executor's sessions move)";

impl StateOps for CudaExecutor {
    fn save_state(
        &mut self,
        _: Option<Known<'_>>,
    ) -> Result<(ExecState, Vec<Arc<ModuleImage>>), MigrateError> {
        Err(MigrateError::Unsupported(WHY.into()))
    }

    fn load_state(&mut self, _state: ExecState, _images: &Images) -> Result<(), MigrateError> {
        Err(MigrateError::Unsupported(WHY.into()))
    }

    fn link_state(&mut self) -> Result<(), MigrateError> {
        Err(MigrateError::Unsupported(WHY.into()))
    }

    fn precopy_block(&mut self, _: Option<(u64, u32)>, _: Known<'_>) -> Option<ChunkRead> {
        None
    }
}
