// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules on the CPU executor: PTX taken from fat binaries, kernels and variables.
//!
//! (Placeholder until the fatbin and PTX crates land: modules load, but have no kernels.)

use std::collections::HashMap;
use std::sync::Arc;

use vcuda_protocol::LaunchReq;

use super::memory::DeviceHeap;
use crate::executor::{ExecResult, FunctionInfo, ModuleImage, Status};

/// Parsed PTX modules shared by all sessions, keyed by image hash.
#[derive(Debug, Default)]
pub struct PtxCache {}

/// A session's loaded modules.
#[derive(Debug)]
pub struct Modules {
    _cache: Arc<PtxCache>,
    _threads: usize,
    loaded: HashMap<u64, Arc<ModuleImage>>,
    stdout: Vec<u8>,
}

impl Modules {
    pub fn new(cache: Arc<PtxCache>, threads: usize) -> Self {
        Self {
            _cache: cache,
            _threads: threads,
            loaded: HashMap::new(),
            stdout: Vec::new(),
        }
    }

    pub fn clear(&mut self, _heap: &mut DeviceHeap) {
        self.loaded.clear();
    }

    pub fn load(
        &mut self,
        handle: u64,
        image: &Arc<ModuleImage>,
        _heap: &mut DeviceHeap,
    ) -> ExecResult<()> {
        self.loaded.insert(handle, image.clone());
        Ok(())
    }

    pub fn unload(&mut self, module: u64, _heap: &mut DeviceHeap) -> ExecResult<()> {
        self.loaded
            .remove(&module)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    pub fn function(&mut self, module: u64, _name: &str, _handle: u64) -> ExecResult<FunctionInfo> {
        self.loaded.get(&module).ok_or(Status::INVALID_HANDLE)?;
        Err(Status::INVALID_DEVICE_FUNCTION)
    }

    pub fn symbol(&mut self, module: u64, _name: &str) -> ExecResult<(u64, u64)> {
        self.loaded.get(&module).ok_or(Status::INVALID_HANDLE)?;
        Err(Status::INVALID_SYMBOL)
    }

    pub fn launch(
        &mut self,
        _req: &LaunchReq,
        _params: &[u8],
        _heap: &DeviceHeap,
    ) -> ExecResult<()> {
        Err(Status::INVALID_DEVICE_FUNCTION)
    }

    pub fn set_attribute(&mut self, _function: u64, _attr: u32, _value: i32) -> ExecResult<()> {
        Err(Status::INVALID_DEVICE_FUNCTION)
    }

    pub fn take_stdout(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.stdout)
    }
}
