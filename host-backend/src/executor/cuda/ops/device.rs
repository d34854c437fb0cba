// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's device and context calls ([`DeviceOps`]): the session's view of the
//! device, waits that stay cancellable, a reset that makes a new context, limits, and
//! captured device `printf` output (see "Device printf" in the [executor's
//! documentation](super::super)).

use std::sync::atomic::Ordering;

use vcuda_protocol::DeviceInfo;

use crate::executor::cuda::error::to_status;
use crate::executor::cuda::{CudaExecutor, cu_limit, driver, stderr_dump};
use crate::executor::{Cancel, DeviceOps, ExecResult, Status};

impl DeviceOps for CudaExecutor {
    fn set_cancel(&mut self, cancel: Cancel) {
        self.wait.set_cancel(cancel);
    }

    fn set_address_range(&mut self, _base: u64, _len: u64) {
        // Ignored: the driver picks device addresses (see "Handles and pointers" in the
        // module documentation).
    }

    fn device_count(&self) -> u32 {
        1
    }

    fn driver_version(&self) -> u32 {
        self.shared.driver.version as u32
    }

    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo> {
        self.check_device(device)?;
        Ok(self.shared.info)
    }

    fn device_synchronize(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.bind()?;
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)
    }

    fn device_reset(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.may_print = true;
        self.reset_context()
    }

    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)> {
        self.check_device(device)?;
        self.bind()?;
        // The session's view: its limit, and what it may still allocate of it.
        let (free, total) = driver::mem_get_info().map_err(to_status)?;
        let limit = self.shared.session_limit.min(total);
        let free = limit.saturating_sub(self.charged).min(free);
        Ok((free, limit))
    }

    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()> {
        self.check_device(device)?;
        let limit = cu_limit(limit)?;
        let value = usize::try_from(value).map_err(|_| Status::INVALID_VALUE)?;
        self.bind()?;
        driver::ctx_set_limit(limit, value).map_err(to_status)
    }

    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        let limit = cu_limit(limit)?;
        self.bind()?;
        driver::ctx_get_limit(limit)
            .map(|v| v as u64)
            .map_err(to_status)
    }

    fn memory_charged(&self) -> (u64, u64) {
        (self.charged, self.shared.session_limit)
    }

    fn take_stdout(&mut self) -> Vec<u8> {
        // See "Device printf" in the module documentation.
        let Some(capture) = self.shared.printf else {
            return Vec::new();
        };
        if !std::mem::take(&mut self.may_print) || !self.uses_printf {
            return Vec::new();
        }
        let out = capture.collect();
        if self.shared.sessions.load(Ordering::Relaxed) == 1 {
            out
        } else {
            stderr_dump(&out);
            Vec::new()
        }
    }
}
