// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's live migration ([`StateOps`]): the session's device memory, modules,
//! streams, events, limits, arrays and texture/surface objects, the VMM API's objects, IPC
//! memory and event handles, cuBLAS handles and cuRAND generators, saved as plain data
//! ([`crate::migrate::state::CpuState`]) and re-created under the same handles and at the
//! same device addresses.

use std::collections::HashSet;
use std::sync::Arc;

use std::time::{Duration, Instant};

use crate::executor::cpu::module::ModulesState;
use crate::executor::cpu::{
    CpuExecutor, EVENT_DISABLE_TIMING, EVENT_FLAGS, EVENT_INTERPROCESS, Event,
    MAX_STREAMS_OR_EVENTS, STREAM_NON_BLOCKING, Stream,
};
use crate::executor::{Images, ModuleImage, StateOps};
use crate::migrate::precopy::ChunkRead;
use crate::migrate::state::{CpuState, EventState, ExecState, IpcState, StreamState};
use crate::migrate::{Known, MigrateError};

/// The first handle [`CpuExecutor::new_handle`] counts from.
const HANDLE_BASE: u64 = 0x5ca1_0000;
/// What it counts by.
const HANDLE_STEP: u64 = 0x10;

impl StateOps for CpuExecutor {
    fn link_state(&mut self) -> Result<(), MigrateError> {
        self.heap.link_imports()
    }

    fn precopy_block(&mut self, after: Option<(u64, u32)>, known: Known<'_>) -> Option<ChunkRead> {
        self.heap.precopy_block(after, known)
    }

    fn save_state(
        &mut self,
        known: Option<Known<'_>>,
    ) -> Result<(ExecState, Vec<Arc<ModuleImage>>), MigrateError> {
        let (range, next_addr, allocs) = self.heap.save_state(known)?;
        let textures = self.textures.save_state(&self.heap)?;
        let (modules, images) = self.modules.save_state();
        let now = Instant::now();
        let mut streams: Vec<StreamState> = self
            .streams
            .iter()
            .map(|(&handle, s)| StreamState {
                handle,
                flags: s._flags,
                priority: s._priority,
            })
            .collect();
        streams.sort_unstable_by_key(|s| s.handle);
        let mut events: Vec<EventState> = self
            .events
            .iter()
            .map(|(&handle, e)| EventState {
                handle,
                flags: e.flags,
                recorded_ago_ns: e
                    .recorded
                    .map(|t| u64::try_from(now.duration_since(t).as_nanos()).unwrap_or(u64::MAX)),
            })
            .collect();
        events.sort_unstable_by_key(|e| e.handle);
        let l = &self.limits;
        let state = ExecState::Cpu(CpuState {
            range,
            next_addr,
            allocs,
            streams,
            events,
            modules: modules.modules,
            functions: modules.functions,
            malloc_heap: modules.malloc_heap,
            limits: vec![
                l.stack_size,
                l.printf_fifo,
                l.malloc_heap,
                l.sync_depth,
                l.pending_launches,
                l.l2_fetch,
                l.l2_persisting,
            ],
            next_handle: self.next_handle,
            blas: self.blas.state(),
            rand: self.rand.state(),
            stdout: modules.stdout,
            textures,
            vmm: self.heap.save_vmm(),
            ipc: IpcState {
                events: self.ipc_events.save(),
                ..self.heap.save_ipc()?
            },
        });
        Ok((state, images))
    }

    fn load_state(&mut self, state: ExecState, images: &Images) -> Result<(), MigrateError> {
        let ExecState::Cpu(mut s) = state else {
            return Err(MigrateError::invalid("a session of another executor"));
        };
        if !self.streams.is_empty() || !self.events.is_empty() {
            return Err(MigrateError::invalid("loading into a session in use"));
        }
        // Stream, event, module and function handles all come from one counter.
        let next = s.next_handle;
        if next < HANDLE_BASE || !(next - HANDLE_BASE).is_multiple_of(HANDLE_STEP) {
            return Err(MigrateError::invalid("handle counter"));
        }
        let mut seen = HashSet::new();
        let mut handle = |h: u64, what: &str| {
            let ok = h > HANDLE_BASE
                && h <= next
                && (h - HANDLE_BASE).is_multiple_of(HANDLE_STEP)
                && seen.insert(h);
            if ok {
                Ok(())
            } else {
                Err(MigrateError::invalid(format_args!("{what} handle {h:#x}")))
            }
        };
        for m in &s.modules {
            handle(m.handle, "module")?;
        }
        for f in &s.functions {
            handle(f.handle, "function")?;
        }
        if s.streams.len() > MAX_STREAMS_OR_EVENTS || s.events.len() > MAX_STREAMS_OR_EVENTS {
            return Err(MigrateError::invalid("too many streams or events"));
        }
        for st in &s.streams {
            handle(st.handle, "stream")?;
            if st.flags & !STREAM_NON_BLOCKING != 0 || !(-5..=0).contains(&st.priority) {
                return Err(MigrateError::invalid("stream flags"));
            }
        }
        let now = Instant::now();
        for e in &s.events {
            handle(e.handle, "event")?;
            if e.flags & !EVENT_FLAGS != 0
                || (e.flags & EVENT_INTERPROCESS != 0 && e.flags & EVENT_DISABLE_TIMING == 0)
            {
                return Err(MigrateError::invalid("event flags"));
            }
        }
        let t = &s.textures;
        for h in t.arrays.iter().map(|a| a.handle) {
            handle(h, "array")?;
        }
        for m in &t.mipmapped {
            handle(m.handle, "mipmapped array")?;
            for &(_, h) in &m.levels {
                handle(h, "array")?;
            }
        }
        // (Object handles are numbers of their own, checked as they load.)
        let [stack, fifo, malloc, depth, pending, l2_fetch, l2_persist] = s.limits[..] else {
            return Err(MigrateError::invalid("limits"));
        };
        self.heap.load_state((s.range, s.next_addr, s.allocs))?;
        self.heap.load_vmm(s.vmm)?;
        let ipc_events = std::mem::take(&mut s.ipc.events);
        self.heap.load_ipc(s.ipc)?;
        self.modules.load_state(
            ModulesState {
                modules: s.modules,
                functions: s.functions,
                malloc_heap: s.malloc_heap,
                stdout: s.stdout,
            },
            images,
            &self.heap,
        )?;
        self.textures.load_state(s.textures, &self.heap)?;
        if !self.blas.restore(&s.blas.0, s.blas.1) {
            return Err(MigrateError::invalid("cuBLAS handles"));
        }
        if !self.rand.restore(&s.rand.0, s.rand.1) {
            return Err(MigrateError::invalid("cuRAND generators"));
        }
        for st in s.streams {
            let stream = Stream {
                _flags: st.flags,
                _priority: st.priority,
            };
            self.streams.insert(st.handle, stream);
        }
        for e in s.events {
            // A stamp older than this process's clock reaches is the oldest it can tell.
            let recorded = e
                .recorded_ago_ns
                .map(|ns| now.checked_sub(Duration::from_nanos(ns)).unwrap_or(now));
            self.events.insert(
                e.handle,
                Event {
                    flags: e.flags,
                    recorded,
                },
            );
        }
        let events = &self.events;
        self.ipc_events.load(ipc_events, &self.heap, |e| {
            events
                .get(&e)
                .is_some_and(|x| x.flags & EVENT_INTERPROCESS != 0)
        })?;
        let l = &mut self.limits;
        (l.stack_size, l.printf_fifo, l.malloc_heap, l.sync_depth) = (stack, fifo, malloc, depth);
        (l.pending_launches, l.l2_fetch, l.l2_persisting) = (pending, l2_fetch, l2_persist);
        self.next_handle = next;
        Ok(())
    }
}
