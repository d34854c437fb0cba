// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's interprocess handles ([`IpcOps`]): memory through the heap's
//! export registry, events through `memory::IpcEvents`.

use crate::executor::cpu::{CpuExecutor, EVENT_DISABLE_TIMING, EVENT_INTERPROCESS, IpcEvents};
use crate::executor::{ExecResult, IpcOps, Status, StreamOps};

impl IpcOps for CpuExecutor {
    fn ipc_get_mem_handle(&mut self, ptr: u64) -> ExecResult<[u8; 64]> {
        self.heap.ipc_export(ptr)
    }

    fn ipc_open_mem_handle(&mut self, handle: &[u8; 64], flags: u32) -> ExecResult<(u64, u64)> {
        // cudaIpcMemLazyEnablePeerAccess is the only flag (one device: nothing to enable).
        if flags & !1 != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.heap.ipc_import(handle)
    }

    fn ipc_close_mem_handle(&mut self, ptr: u64) -> ExecResult<()> {
        self.heap.ipc_close(ptr)
    }

    fn ipc_get_event_handle(&mut self, event: u64) -> ExecResult<[u8; 64]> {
        let e = self.events.get(&event).ok_or(Status::INVALID_HANDLE)?;
        if e.flags & EVENT_INTERPROCESS == 0 {
            return Err(Status::INVALID_HANDLE);
        }
        self.ipc_events.export(event, &self.heap)
    }

    fn ipc_open_event_handle(&mut self, handle: &[u8; 64]) -> ExecResult<u64> {
        IpcEvents::check_open(handle, &self.heap)?;
        self.event_create(0, EVENT_DISABLE_TIMING | EVENT_INTERPROCESS)
    }
}
