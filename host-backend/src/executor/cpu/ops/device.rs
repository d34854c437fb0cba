// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's device and context calls ([`DeviceOps`]): one device, limits kept per
//! session, a reset that frees everything the session holds.

use vcuda_protocol::DeviceInfo;

use crate::executor::cpu::{CpuExecutor, DRIVER_VERSION, Limits, texture};
use crate::executor::{Cancel, DeviceOps, ExecResult};

impl DeviceOps for CpuExecutor {
    fn set_cancel(&mut self, cancel: Cancel) {
        self.modules.cancel = Some(cancel);
    }

    fn set_address_range(&mut self, base: u64, len: u64) {
        self.heap.set_range(base, len);
    }

    fn device_count(&self) -> u32 {
        1
    }

    fn driver_version(&self) -> u32 {
        DRIVER_VERSION
    }

    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo> {
        self.check_device(device)?;
        Ok(CpuExecutor::device_info(self))
    }

    fn device_synchronize(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)
    }

    fn device_reset(&mut self, device: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.modules.clear(&mut self.heap);
        self.modules.drop_malloc_heap();
        self.heap.clear();
        self.streams.clear();
        self.events.clear();
        self.ipc_events.clear();
        self.limits = Limits::default();
        self.blas.clear();
        self.rand.clear();
        self.textures = texture::Textures::default();
        Ok(())
    }

    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)> {
        self.check_device(device)?;
        Ok(self.heap.info())
    }

    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()> {
        self.check_device(device)?;
        *self.limits.slot(limit)? = value;
        Ok(())
    }

    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        Ok(*self.limits.slot(limit)?)
    }

    fn take_stdout(&mut self) -> Vec<u8> {
        self.modules.take_stdout()
    }

    fn memory_charged(&self) -> (u64, u64) {
        (self.heap.charged(), self.heap.info().1)
    }
}
