// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving and loading a session's modules and function handles (live migration,
//! [`crate::migrate`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use vcuda_ptx::KernelId;

use super::{
    Function, MAX_FUNCTIONS, MAX_LOADED_IMAGE_BYTES, MAX_MODULES, MAX_SHARED_OPTIN, Modules,
};
use crate::executor::cpu::malloc::MallocHeap;
use crate::executor::cpu::memory::{AllocKind, DeviceHeap};
use crate::executor::{Images, ModuleImage};
use crate::migrate::MigrateError;
use crate::migrate::state::{FunctionState, MallocHeapState, ModuleState};

/// What a session's modules save: modules, functions, the device `malloc` heap and unsent
/// `printf` output.
pub struct ModulesState {
    /// Loaded modules.
    pub modules: Vec<ModuleState>,
    /// Function handles.
    pub functions: Vec<FunctionState>,
    /// The device heap of device-side `malloc`.
    pub malloc_heap: Option<MallocHeapState>,
    /// Device `printf` output not yet taken.
    pub stdout: Vec<u8>,
}

impl Modules {
    /// The modules' state, and the images they were loaded from.
    pub fn save_state(&mut self) -> (ModulesState, Vec<Arc<ModuleImage>>) {
        let mut images: HashMap<[u8; 32], Arc<ModuleImage>> = HashMap::new();
        let mut modules: Vec<ModuleState> = self
            .loaded
            .iter()
            .map(|(&handle, m)| {
                images.insert(m.image.hash, m.image.clone());
                ModuleState {
                    handle,
                    image: m.image.hash,
                    addrs: m.addrs.clone(),
                    allocs: m.allocs.clone(),
                }
            })
            .collect();
        modules.sort_unstable_by_key(|m| m.handle);
        let mut functions: Vec<FunctionState> = self
            .functions
            .iter()
            .map(|(&handle, f)| FunctionState {
                handle,
                module: f.module,
                kernel: f.kernel.0,
                max_dynamic_shared: f.max_dynamic_shared,
                carveout: f.carveout,
            })
            .collect();
        functions.sort_unstable_by_key(|f| f.handle);
        let malloc = self.malloc.get_mut().unwrap_or_else(|e| e.into_inner());
        let malloc_heap = malloc.as_ref().map(|h| {
            let ((base, size), used) = h.state();
            MallocHeapState { base, size, used }
        });
        let state = ModulesState {
            modules,
            functions,
            malloc_heap,
            // Kept: the session goes on here if the migration fails.
            stdout: self
                .stdout
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        };
        (state, images.into_values().collect())
    }

    /// Loads saved modules into this session, whose heap already holds the saved device
    /// memory: each module is parsed from its image again (not initialized: its variables'
    /// contents came with the heap) and must own exactly the variable storage it had.
    pub fn load_state(
        &mut self,
        state: ModulesState,
        images: &Images,
        heap: &DeviceHeap,
    ) -> Result<(), MigrateError> {
        if !self.loaded.is_empty() || !self.functions.is_empty() {
            return Err(MigrateError::invalid("loading into a session with modules"));
        }
        if state.modules.len() > MAX_MODULES || state.functions.len() > MAX_FUNCTIONS {
            return Err(MigrateError::invalid("too many modules or functions"));
        }
        // Every variable's storage is owned once: by one module, or as the malloc heap.
        let mut owned = HashSet::new();
        for m in state.modules {
            let bad =
                |what: &str| MigrateError::invalid(format_args!("module {:#x}: {what}", m.handle));
            let image = images.get(&m.image).ok_or_else(|| bad("no image"))?;
            let ptx = self
                .cache
                .get(self.tenant, image)
                .map_err(|e| bad(&format!("image does not load: {e}")))?;
            let globals = ptx.globals();
            if m.handle == 0
                || self.loaded.contains_key(&m.handle)
                || m.addrs.len() != globals.len()
                || m.allocs.len() != globals.len()
            {
                return Err(bad("handle or variables"));
            }
            for (i, g) in globals.iter().enumerate() {
                let (addr, alloc) = (m.addrs[i], m.allocs[i]);
                // A managed variable may have moved to mapped host memory (`bind`), which
                // the session maps again once the guest's memory is there: any address
                // does, as every access is resolved through the heap.
                let ok = if g.is_extern {
                    addr == 0 && alloc == 0
                } else {
                    (addr == alloc || (g.managed && addr != 0))
                        && heap.allocation(alloc) == Some((g.size.max(1), AllocKind::Symbol))
                        && owned.insert(alloc)
                };
                if !ok {
                    return Err(bad(&format!("variable {}", g.name)));
                }
            }
            self.loaded_bytes = self.loaded_bytes.saturating_add(image.bytes.len() as u64);
            if self.loaded_bytes > MAX_LOADED_IMAGE_BYTES {
                return Err(MigrateError::invalid("too many bytes of modules"));
            }
            self.insert_loaded(m.handle, image.clone(), ptx, m.addrs, m.allocs);
        }
        for f in state.functions {
            let kernels = self.loaded.get(&f.module).map(|m| m.kernels);
            let ok = f.handle != 0
                && kernels.is_some_and(|n| (f.kernel as usize) < n)
                && f.max_dynamic_shared <= MAX_SHARED_OPTIN
                && (-1..=100).contains(&f.carveout)
                && !self.functions.contains_key(&f.handle)
                && self
                    .by_kernel
                    .insert((f.module, f.kernel), f.handle)
                    .is_none();
            if !ok {
                return Err(MigrateError::invalid(format_args!(
                    "function {:#x}",
                    f.handle
                )));
            }
            self.functions.insert(
                f.handle,
                Function {
                    module: f.module,
                    kernel: KernelId(f.kernel),
                    max_dynamic_shared: f.max_dynamic_shared,
                    carveout: f.carveout,
                },
            );
        }
        if let Some(h) = state.malloc_heap {
            let bad = || MigrateError::invalid("device malloc heap");
            if heap.allocation(h.base) != Some((h.size, AllocKind::Symbol)) || !owned.insert(h.base)
            {
                return Err(bad());
            }
            let restored = MallocHeap::restore(h.base, h.size, &h.used).ok_or_else(bad)?;
            *self.malloc.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(restored);
        }
        if heap.symbol_allocations().any(|a| !owned.contains(&a)) {
            return Err(MigrateError::invalid("variable storage no module owns"));
        }
        let room = crate::executor::MAX_STDOUT_BUFFER;
        let mut out = state.stdout;
        out.truncate(room);
        *self.stdout.get_mut().unwrap_or_else(|e| e.into_inner()) = out;
        Ok(())
    }
}
