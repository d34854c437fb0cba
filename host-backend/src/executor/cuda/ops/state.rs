// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's live migration ([`StateOps`]): a session of a backend started with
//! `--cuda-migratable`, whose `cudaMalloc` memory lies at addresses it chose (`fixed`),
//! saves its device memory, module handles (with the variables of their images), function
//! handles, streams, events, cuBLAS handles and cuRAND generators as plain data
//! ([`crate::migrate::state::CudaState`]); loading reserves the same address range, puts
//! every allocation back at its address and makes every object again under its handle.
//! Graphs are the session's descriptions, instantiated again by the session.
//!
//! Module variables are placed by the driver: a variable whose address the guest asked for
//! must land at the same address on the destination (checked; the load fails otherwise),
//! the others get their contents back wherever they land. A generator is made again from
//! its type, seed, ordering, dimensions and offset (the outputs drawn so far), which puts
//! it where it was; a Mersenne Twister takes no offset, so it repeats the calls it took
//! (`rand_log.rs`). Arrays move with their texels, texture and surface objects with their
//! numbers (`textures.rs`), the VMM API's reservations at their addresses and physical
//! allocations under their handles with their contents (`vmm.rs`). Host memory mapped for
//! kernels is the guest's own pages: the session maps it again, at the same addresses
//! (held since the load), once the destination maps the guest's memory
//! (`session/pending.rs`), and this executor registers it again as `MapHostMemory` did.
//! What does not move yet fails the save, naming it: Mersenne Twisters that took more
//! calls than a load repeats, IPC, and sessions of a backend without
//! `--cuda-migratable` that hold device memory.

mod errors;
mod textures;
mod vmm;

use errors::failed;
use textures::ArraysToLoad;

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::Arc;

use serde_bytes::ByteBuf;
use vcuda_protocol::lib::set;
use vcuda_protocol::{RandSetReq, STREAM_LEGACY};

use crate::executor::cuda::allocs::Owner;
use crate::executor::cuda::error::to_status;
use crate::executor::cuda::handles;
use crate::executor::cuda::rand::{self, RAND_TAG};
use crate::executor::cuda::rand_log;
use crate::executor::cuda::{CudaExecutor, driver, pages};
use crate::executor::{Images, ModuleImage, StateOps, Status};
use crate::migrate::precopy::ChunkRead;
use crate::migrate::state::{
    ALLOC_USER, AllocState, CudaFunctionState, CudaModuleState, CudaState, EventState, ExecState,
    GeneratorState, GlobalState, RandStep, StreamState,
};
use crate::migrate::{CHUNK, Known, MigrateError, compress, compress_known, decompress_into};

/// `cudaStreamNonBlocking`.
const STREAM_NON_BLOCKING: u32 = 1;
/// Event flags the guest may have given (blocking sync, disable timing, interprocess).
const EVENT_FLAGS: u32 = 0x7;
/// `cudaEventInterprocess`.
const EVENT_INTERPROCESS: u32 = 0x4;
/// Kept with an event's flags: the driver could not make it interprocess (`streams.rs`).
const NO_IPC: u32 = 1 << 31;
/// The tag of cuBLAS handles (`blas.rs`).
const BLAS_TAG: u64 = 0xb1a5_0000_0000;
/// Most streams, events, module handles and function handles a loaded session makes,
/// each.
const MAX_OBJECTS: usize = 1 << 16;
/// Most cuBLAS handles a loaded session makes (each holds device memory).
const MAX_BLAS: usize = 1024;
/// Blocks of device memory a load decompresses and copies at a time (64 MiB).
const LOAD_GROUP: usize = 16;
/// How long a save waits for the session's GPU work to finish.
const QUIESCE: std::time::Duration = std::time::Duration::from_secs(10);
/// Most bytes of one module variable carried.
const MAX_GLOBAL: u64 = 1 << 32;

fn unsupported(what: &str) -> MigrateError {
    MigrateError::Unsupported(format!("{what} on the CUDA executor"))
}

impl CudaExecutor {
    /// Copies `[addr, addr + len)` of device memory to the host (the device idle).
    fn read_device(&self, addr: u64, len: u64) -> Result<Vec<u8>, MigrateError> {
        let n = usize::try_from(len).map_err(|_| MigrateError::NoRoom("device memory".into()))?;
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` is writable for `n` bytes and only this copy touches it; pageable
        // memory makes the copy complete before the call returns; `[addr, addr + len)` is
        // device memory of the session's context (an allocation or a module variable of
        // it), current since the caller's `bind`; the legacy stream is always live.
        unsafe { driver::memcpy_dtoh(buf.as_mut_ptr(), addr, n, std::ptr::null_mut()) }
            .map_err(|e| failed("reading device memory", to_status(e)))?;
        Ok(buf)
    }

    /// Writes `bytes` to device memory at `addr` (the caller waits for the device after).
    fn write_device(&self, addr: u64, bytes: &[u8]) -> Result<(), MigrateError> {
        // SAFETY: `bytes` is pageable memory, consumed before the call returns;
        // `[addr, addr + len)` is device memory of the session's context (checked by the
        // caller: an allocation it placed, or a module variable the driver sized), current
        // since the caller's `bind`; the legacy stream is always live.
        unsafe { driver::memcpy_htod(addr, bytes.as_ptr(), bytes.len(), std::ptr::null_mut()) }
            .map_err(|e| failed("writing device memory", to_status(e)))
    }

    /// What cannot move yet, if the session holds any of it.
    fn refuse_unmovable(&self) -> Result<(), MigrateError> {
        if self.ctx.is_none() {
            return Err(unsupported("a session whose context was lost"));
        }
        if self.rand.map.values().any(|g| g.log.is_none()) {
            return Err(unsupported(&format!(
                "cuRAND Mersenne Twister generators that drew more than a move repeats \
                 (at most {} draws, {} numbers in all, {} MiB in one)",
                rand_log::MAX_DRAWS,
                rand_log::MAX_OUTPUTS,
                rand_log::MAX_DRAW_BYTES >> 20
            )));
        }
        if !self.ipc_opens.is_empty() || self.allocs.any_of(Owner::Ipc) {
            return Err(unsupported("memory opened through an IPC handle"));
        }
        if self
            .events
            .values()
            .any(|(_, f)| f & EVENT_INTERPROCESS != 0 && f & NO_IPC == 0)
        {
            return Err(unsupported("interprocess events"));
        }
        if !self.shared.config.migratable && self.allocs.users().next().is_some() {
            return Err(MigrateError::Unsupported(
                "device memory of a CUDA backend not started with --cuda-migratable (its \
                 addresses cannot be had again elsewhere)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The module handles, the first of each image with the image's variables.
    fn save_modules(&self) -> Result<(Vec<CudaModuleState>, Vec<Arc<ModuleImage>>), MigrateError> {
        let mut handles: Vec<(u64, [u8; 32])> =
            self.modules.iter().map(|(&h, &hash)| (h, hash)).collect();
        handles.sort_unstable();
        let mut done = HashSet::new();
        let (mut modules, mut images) = (Vec::new(), Vec::new());
        for (handle, hash) in handles {
            let mut globals = Vec::new();
            if done.insert(hash) {
                let m = self
                    .loaded
                    .get(&hash)
                    .ok_or_else(|| MigrateError::invalid("a module handle without its module"))?;
                images.push(m.image.clone());
                let mut names: Vec<String> = vcuda_fatbin::parse(&m.image.bytes)
                    .map(|fb| vcuda_fatbin::module_variables(&fb))
                    .unwrap_or_default();
                names.extend(m.seen.iter().cloned());
                names.sort_unstable();
                names.dedup();
                for name in names {
                    let Ok(cname) = CString::new(name.as_str()) else {
                        continue;
                    };
                    // Names the driver does not know (PTX-only names, a variable the
                    // compiler dropped) have nothing to carry.
                    let Ok((addr, len)) = m.module.global(&cname) else {
                        continue;
                    };
                    let len = len as u64;
                    if len == 0 {
                        continue;
                    }
                    if len > MAX_GLOBAL {
                        return Err(MigrateError::Unsupported(format!(
                            "module variable {name} of {len} bytes"
                        )));
                    }
                    let bytes = self.read_device(addr, len)?;
                    globals.push(GlobalState {
                        seen: m.seen.contains(&name),
                        name,
                        addr,
                        len,
                        data: compress(&bytes),
                    });
                }
            }
            modules.push(CudaModuleState {
                handle,
                image: hash,
                globals,
            });
        }
        Ok((modules, images))
    }

    /// Loads the module handles of a saved session, in handle order, and before each the
    /// arrays made before it (in `vcuda`'s own driver an array takes device addresses from
    /// where module variables go, so a variable whose address the guest knows lands where
    /// it was only if what was made before it is made before it again).
    fn load_modules(
        &mut self,
        modules: Vec<CudaModuleState>,
        next: u64,
        images: &Images,
        arrays: &mut ArraysToLoad,
    ) -> Result<(), MigrateError> {
        let mut carried = HashSet::new();
        for m in modules {
            self.load_arrays(arrays, Some(handles::counter(m.handle)))?;
            if !self.modules.expect(m.handle, next) {
                return Err(MigrateError::invalid(format_args!(
                    "module {:#x}",
                    m.handle
                )));
            }
            let image = images
                .get(&m.image)
                .ok_or_else(|| MigrateError::invalid("a module of an image not carried"))?
                .clone();
            let h = self
                .module_load_impl(image)
                .map_err(|st| failed("loading a module again", st))?;
            if h != m.handle {
                return Err(MigrateError::invalid(format_args!(
                    "module {:#x}",
                    m.handle
                )));
            }
            if m.globals.is_empty() {
                continue;
            }
            if !carried.insert(m.image) {
                return Err(MigrateError::invalid("an image's variables carried twice"));
            }
            for g in m.globals {
                self.load_global(m.image, g)?;
            }
        }
        Ok(())
    }

    /// Puts a module variable's contents back; one the guest knows the address of must be
    /// where it was.
    fn load_global(&mut self, hash: [u8; 32], g: GlobalState) -> Result<(), MigrateError> {
        let bad = || MigrateError::invalid(format_args!("module variable {}", g.name));
        let cname = CString::new(g.name.as_str()).map_err(|_| bad())?;
        let m = self.loaded.get_mut(&hash).ok_or_else(bad)?;
        let (addr, len) = m.module.global(&cname).map_err(|_| bad())?;
        if len as u64 != g.len || g.len > MAX_GLOBAL {
            return Err(bad());
        }
        if g.seen {
            if addr != g.addr {
                return Err(MigrateError::NoRoom(format!(
                    "module variable {} loads at {addr:#x} here, not at {:#x} where the guest \
                     knows it",
                    g.name, g.addr
                )));
            }
            m.seen.insert(g.name.clone());
        }
        let mut bytes = vec![0u8; len];
        decompress_into(&g.data, &mut bytes)?;
        self.write_device(addr, &bytes)?;
        if g.seen {
            self.allocs
                .insert(addr, g.len, Owner::Module(hash))
                .map_err(|_| bad())?;
        }
        Ok(())
    }

    /// Puts the saved allocations back at their addresses, with their contents.
    fn load_allocs(
        &mut self,
        range: (u64, u64),
        allocs: Vec<AllocState>,
    ) -> Result<(), MigrateError> {
        if allocs.is_empty() {
            return Ok(());
        }
        if !self.shared.config.migratable {
            return Err(MigrateError::NoRoom(
                "this CUDA backend was not started with --cuda-migratable".into(),
            ));
        }
        if self.fixed.is_some() {
            return Err(MigrateError::invalid("loading into a session in use"));
        }
        let (base, len) = range;
        if !base.is_multiple_of(pages::PAGE)
            || !len.is_multiple_of(pages::PAGE)
            || len == 0
            || len > pages::range_len(u64::MAX)
        {
            return Err(MigrateError::invalid("device address range"));
        }
        self.fixed_book(base, len).map_err(|_| {
            MigrateError::NoRoom(format!(
                "device addresses {base:#x}..{:#x} are taken on this host",
                base.saturating_add(len)
            ))
        })?;
        for a in allocs {
            let at = a.addr;
            let bad = || MigrateError::invalid(format_args!("allocation at {at:#x}"));
            let blocks = usize::try_from(a.len.div_ceil(CHUNK as u64)).map_err(|_| bad())?;
            if a.kind != ALLOC_USER || a.len == 0 || a.data.len() != blocks {
                return Err(bad());
            }
            let addr = self.fixed_alloc(a.len, Some(at)).map_err(|st| match st {
                Status::INVALID_VALUE => bad(),
                Status::MEMORY_ALLOCATION => MigrateError::NoRoom(format!(
                    "device memory for the allocation at {at:#x} ({} bytes)",
                    a.len
                )),
                st => failed("device memory", st),
            })?;
            self.allocs
                .insert(addr, a.len, Owner::User)
                .map_err(|_| bad())?;
            self.write_blocks(addr, a.len, &a.data)?;
        }
        Ok(())
    }

    /// Writes `len` bytes saved in blocks (`compress`'s) to device memory at `addr`, a
    /// group of blocks at a time: the host holds at most that much. The caller waits for
    /// the device after.
    fn write_blocks(&self, addr: u64, len: u64, data: &[ByteBuf]) -> Result<(), MigrateError> {
        if usize::try_from(len.div_ceil(CHUNK as u64)).ok() != Some(data.len()) {
            return Err(MigrateError::invalid(
                "device memory in the wrong number of blocks",
            ));
        }
        let mut buf = Vec::new();
        for (g, group) in data.chunks(LOAD_GROUP).enumerate() {
            let start = (g * LOAD_GROUP * CHUNK) as u64;
            let n = (len - start).min((LOAD_GROUP * CHUNK) as u64) as usize;
            buf.resize(n, 0);
            decompress_into(group, &mut buf)?;
            self.write_device(addr + start, &buf)?;
            // The copy consumed `buf` (pageable) before returning.
        }
        Ok(())
    }
}

impl CudaExecutor {
    /// Makes the saved generators again under their handles, each set as it was: ordering,
    /// seed (pseudo-random) or dimensions (quasi-random), then the offset, through the
    /// checks cuRAND makes; a Mersenne Twister repeats the calls it took (`rand_log.rs`).
    fn load_generators(
        &mut self,
        (gens, next): (Vec<GeneratorState>, u64),
        logs: Vec<(u64, Vec<RandStep>)>,
    ) -> Result<(), MigrateError> {
        if next >= 1 << 32 || gens.len() as u64 > next || logs.len() > gens.len() {
            return Err(MigrateError::invalid("cuRAND generator counter"));
        }
        let mut logs: HashMap<u64, Vec<RandStep>> = logs.into_iter().collect();
        for g in gens {
            let h = g.handle;
            let bad = || MigrateError::invalid(format_args!("cuRAND generator {h:#x}"));
            let n = h ^ RAND_TAG;
            if h & RAND_TAG != RAND_TAG || n == 0 || n > next {
                return Err(bad());
            }
            if rand::mersenne(g.rng_type) && g.offset != 0 {
                return Err(bad());
            }
            self.rand_create_at(h, g.rng_type, g.host)
                .map_err(|st| failed("a cuRAND generator", st))?;
            if rand::mersenne(g.rng_type) {
                let steps = logs.remove(&h).unwrap_or_default();
                self.rand_replay(h, &steps)
                    .map_err(|st| failed("repeating a cuRAND Mersenne Twister's calls", st))?;
                continue;
            }
            let mut sets = vec![(set::ORDERING, u64::from(g.ordering))];
            if rand::quasi(g.rng_type) {
                sets.push((set::DIMENSIONS, u64::from(g.dims)));
            } else {
                sets.push((set::SEED, g.seed));
            }
            if !rand::mersenne(g.rng_type) {
                sets.push((set::OFFSET, g.offset));
            }
            for (what, value) in sets {
                let req = RandSetReq {
                    handle: h,
                    what,
                    reserved: 0,
                    value,
                };
                self.rand_set_impl(&req)
                    .map_err(|st| failed("a cuRAND generator's setting", st))?;
            }
        }
        if !logs.is_empty() {
            return Err(MigrateError::invalid(
                "calls of a cuRAND generator that is no Mersenne Twister",
            ));
        }
        self.rand.next = next;
        Ok(())
    }
}

impl StateOps for CudaExecutor {
    fn save_state(
        &mut self,
        known: Option<Known<'_>>,
    ) -> Result<(ExecState, Vec<Arc<ModuleImage>>), MigrateError> {
        self.refuse_unmovable()?;
        self.bind()
            .map_err(|st| failed("the session's context", st))?;
        // Work still queued finishes first (the session takes no calls meanwhile), within a
        // bound: past it the save fails and the session runs on at the source, its work
        // untouched.
        let start = std::time::Instant::now();
        while !self.idle() {
            if start.elapsed() > QUIESCE {
                return Err(MigrateError::Unsupported(format!(
                    "a session whose GPU work still runs after {} s",
                    QUIESCE.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)
            .map_err(|st| failed("waiting for the session's GPU work", st))?;
        let mut allocs = Vec::new();
        for (addr, len) in self.allocs.users().collect::<Vec<_>>() {
            let bytes = self.read_device(addr, len)?;
            allocs.push(AllocState {
                addr,
                len,
                kind: ALLOC_USER,
                data: compress_known(&bytes, addr, known),
            });
        }
        let (modules, images) = self.save_modules()?;
        let mut functions: Vec<CudaFunctionState> = self
            .function_names
            .iter()
            .filter_map(|((module, name), &handle)| {
                let f = self.functions.get(handle).ok()?;
                Some(CudaFunctionState {
                    handle,
                    module: *module,
                    name: name.clone(),
                    max_dynamic_shared: f.info.attrs.max_dynamic_shared_size_bytes,
                    carveout: f.info.attrs.preferred_shmem_carveout,
                })
            })
            .collect();
        functions.sort_unstable_by_key(|f| f.handle);
        let mut streams: Vec<StreamState> = self
            .streams
            .iter()
            .map(|(&handle, _)| StreamState {
                handle,
                flags: if self.non_blocking.contains(&handle) {
                    STREAM_NON_BLOCKING
                } else {
                    0
                },
                priority: self.stream_priorities.get(&handle).copied().unwrap_or(0),
            })
            .collect();
        streams.sort_unstable_by_key(|s| s.handle);
        let mut events: Vec<EventState> = self
            .events
            .iter()
            .map(|(&handle, (_, flags))| EventState {
                handle,
                flags: flags & EVENT_FLAGS,
                recorded_ago_ns: None,
            })
            .collect();
        events.sort_unstable_by_key(|e| e.handle);
        let mut blas: Vec<u64> = self.blas.map.keys().copied().collect();
        blas.sort_unstable();
        let mut gens: Vec<GeneratorState> = self
            .rand
            .map
            .iter()
            .map(|(&handle, g)| GeneratorState {
                handle,
                rng_type: g.rng_type,
                host: g.host,
                seed: g.seed,
                offset: g.offset,
                dims: g.dims,
                ordering: g.ordering,
            })
            .collect();
        gens.sort_unstable_by_key(|g| g.handle);
        let mut rand_logs: Vec<(u64, Vec<RandStep>)> = self
            .rand
            .map
            .iter()
            .filter_map(|(&h, g)| Some((h, g.log.clone()?)))
            .filter(|(_, log)| !log.is_empty())
            .collect();
        rand_logs.sort_unstable_by_key(|(h, _)| *h);
        let (textures, texels, texture_next, modules_before) = self.save_textures()?;
        let vmm = self.save_vmm()?;
        let state = CudaState {
            range: self.fixed.as_ref().map_or((0, 0), |f| f.range()),
            allocs,
            streams,
            events,
            modules,
            functions,
            next: [
                self.streams.next_counter(),
                self.events.next_counter(),
                self.modules.next_counter(),
                self.functions.next_counter(),
            ],
            blas: (blas, self.blas.next),
            rand: (gens, self.rand.next),
            rand_logs,
            textures,
            texels,
            texture_next,
            modules_before,
            vmm,
        };
        Ok((ExecState::Cuda(state), images))
    }

    fn load_state(&mut self, state: ExecState, images: &Images) -> Result<(), MigrateError> {
        let ExecState::Cuda(s) = state else {
            return Err(MigrateError::invalid("a session of another executor"));
        };
        if self.streams.count() > 0
            || self.modules.count() > 0
            || self.allocs.count() > 0
            || !self.rand.map.is_empty()
            || self.textures.arrays.count() > 0
            || self.textures.mipmapped.count() > 0
            || !self.textures.objects.is_empty()
            || !self.vmm.is_empty()
        {
            return Err(MigrateError::invalid("loading into a session in use"));
        }
        self.bind()
            .map_err(|st| failed("the session's context", st))?;
        let [next_stream, next_event, next_module, next_function] = s.next;
        if s.streams.len() > MAX_OBJECTS
            || s.events.len() > MAX_OBJECTS
            || s.functions.len() > MAX_OBJECTS
            || s.modules.len() > MAX_OBJECTS
            || s.blas.0.len() > MAX_BLAS
            || s.rand.0.len() > MAX_OBJECTS
        {
            return Err(MigrateError::invalid("too many objects"));
        }
        self.load_allocs(s.range, s.allocs)?;
        self.load_vmm(s.vmm)?;
        let mut arrays = Self::arrays_to_load(
            (s.textures, s.texels, s.texture_next, s.modules_before),
            next_module,
        )?;
        self.load_modules(s.modules, next_module, images, &mut arrays)?;
        for f in s.functions {
            let bad = || MigrateError::invalid(format_args!("function {:#x}", f.handle));
            if !self.functions.expect(f.handle, next_function) {
                return Err(bad());
            }
            let info = self
                .function_get_impl(f.module, &f.name)
                .map_err(|st| failed("looking a kernel up again", st))?;
            if info.handle != f.handle {
                return Err(bad());
            }
            let a = &info.attrs;
            if f.max_dynamic_shared != a.max_dynamic_shared_size_bytes {
                self.func_set_attribute_impl(f.handle, 8, f.max_dynamic_shared)
                    .map_err(|st| failed("a kernel's attribute", st))?;
            }
            if f.carveout != a.preferred_shmem_carveout {
                self.func_set_attribute_impl(f.handle, 9, f.carveout)
                    .map_err(|st| failed("a kernel's attribute", st))?;
            }
        }
        for st in s.streams {
            if !self.streams.expect(st.handle, next_stream) || st.flags & !STREAM_NON_BLOCKING != 0
            {
                return Err(MigrateError::invalid(format_args!(
                    "stream {:#x}",
                    st.handle
                )));
            }
            let h = self
                .stream_create_impl(0, st.flags, st.priority)
                .map_err(|e| failed("a stream", e))?;
            if h != st.handle {
                return Err(MigrateError::invalid(format_args!(
                    "stream {:#x}",
                    st.handle
                )));
            }
        }
        for e in s.events {
            if !self.events.expect(e.handle, next_event) {
                return Err(MigrateError::invalid(format_args!("event {:#x}", e.handle)));
            }
            let h = self
                .event_create_impl(0, e.flags)
                .map_err(|st| failed("an event", st))?;
            if h != e.handle {
                return Err(MigrateError::invalid(format_args!("event {:#x}", e.handle)));
            }
            // Recorded now, so waits for it and timings against it work (a timing that
            // spans the move reads about 0).
            self.event_record_impl(h, STREAM_LEGACY, 0)
                .map_err(|st| failed("an event", st))?;
        }
        let (handles, next_blas) = s.blas;
        if next_blas >= 1 << 32 {
            return Err(MigrateError::invalid("cuBLAS handle counter"));
        }
        let mut seen = HashSet::new();
        for h in handles {
            let n = h ^ BLAS_TAG;
            if h & BLAS_TAG != BLAS_TAG
                || n == 0
                || n > next_blas
                || n >= 1 << 32
                || !seen.insert(h)
            {
                return Err(MigrateError::invalid(format_args!("cuBLAS handle {h:#x}")));
            }
            self.blas_create_at(h)
                .map_err(|st| failed("a cuBLAS handle", st))?;
        }
        self.blas.next = next_blas;
        self.load_generators(s.rand, s.rand_logs)?;
        self.finish_textures(arrays)?;
        let restored = self.streams.restore_next(next_stream)
            && self.events.restore_next(next_event)
            && self.modules.restore_next(next_module)
            && self.functions.restore_next(next_function);
        if !restored {
            return Err(MigrateError::invalid("handle counters"));
        }
        // The copies above read pageable memory, maybe not all on the device yet.
        let r = self.wait_device();
        self.settle(r)
            .map_err(|st| failed("loading device memory", st))
    }

    fn link_state(&mut self) -> Result<(), MigrateError> {
        Ok(())
    }

    fn precopy_block(&mut self, _: Option<(u64, u32)>, _: Known<'_>) -> Option<ChunkRead> {
        None
    }
}
