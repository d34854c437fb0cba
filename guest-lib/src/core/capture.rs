// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream capture: `cudaStreamBeginCapture` .. `cudaStreamEndCapture`.
//!
//! While a stream captures, the work enqueued on it (kernel launches, `cudaMemcpyAsync`,
//! `cudaMemcpy2DAsync`, `cudaMemsetAsync`, `cudaMemset2DAsync`, `cudaLaunchHostFunc`, and
//! the `_ptsz` variants) is not run: it becomes a node of the capture's graph
//! ([`super::graph`]) that depends on the stream's current dependency set, and the set
//! becomes that node. `cudaEventRecord` on a capturing stream makes the event carry the
//! stream's set; `cudaStreamWaitEvent` on such an event makes the waiting stream join the
//! capture (or adds the event's set to its own). `cudaEventRecordWithFlags(...External)` and
//! `cudaStreamWaitEvent(..., cudaEventWaitExternal)` capture event record and wait nodes.
//!
//! What CUDA forbids during capture fails as in CUDA, invalidating the capture where CUDA
//! does (`cudaStreamEndCapture` then returns `cudaErrorStreamCaptureInvalidated`):
//! - other work on a capturing stream (synchronize, query, callbacks, stream-ordered
//!   allocation, symbol copies, cuBLAS and cuRAND, launching a graph):
//!   `cudaErrorStreamCaptureUnsupported`;
//! - "potentially unsafe" calls (`cudaMalloc`, `cudaMallocPitch`, `cudaFree`, synchronous
//!   copies and memsets) from a thread whose capture mode forbids them
//!   (`cudaThreadExchangeStreamCaptureMode`): `cudaErrorStreamCaptureUnsupported`;
//! - the legacy stream (synchronous copies included) while a blocking stream captures:
//!   `cudaErrorStreamCaptureImplicit`;
//! - `cudaDeviceSynchronize`: `cudaErrorStreamCaptureUnsupported`;
//! - querying, synchronizing or timing an event recorded in a capture:
//!   `cudaErrorCapturedEvent` (the capture goes on).

use crate::client::{self, Client};
use crate::core::graph::{self, Kind};
use crate::core::handle::resolve;
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use crate::state;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;
use vcuda_protocol::status;

/// `cudaStreamCaptureModeGlobal`.
pub(crate) const MODE_GLOBAL: u32 = 0;
/// `cudaStreamCaptureModeRelaxed`.
pub(crate) const MODE_RELAXED: u32 = 2;
/// `cudaStreamCaptureStatusActive`.
pub(crate) const STATUS_ACTIVE: u32 = 1;
/// `cudaStreamCaptureStatusInvalidated`.
pub(crate) const STATUS_INVALIDATED: u32 = 2;
/// `cudaStreamSetCaptureDependencies`.
pub(crate) const SET_DEPENDENCIES: u32 = 1;
/// `cudaEventWaitExternal`.
pub(crate) const WAIT_EXTERNAL: u32 = 1;
/// `cudaStreamNonBlocking`.
pub(crate) const NON_BLOCKING: u32 = 1;

pub(crate) const UNSUPPORTED: Error = Error(status::STREAM_CAPTURE_UNSUPPORTED);
pub(crate) const INVALIDATED: Error = Error(status::STREAM_CAPTURE_INVALIDATED);

/// One capture sequence.
pub(crate) struct Capture {
    /// The graph it builds.
    pub(crate) graph: u64,
    /// The stream it began on (and must end on).
    pub(crate) origin: u64,
    /// Its `cudaStreamCaptureMode`.
    pub(crate) mode: u32,
    /// The thread that began it.
    pub(crate) thread: ThreadId,
    pub(crate) invalidated: bool,
    /// Each stream taking part, with the nodes its next work depends on.
    pub(crate) streams: HashMap<u64, Vec<u64>>,
    /// The graph is the program's (`cudaStreamBeginCaptureToGraph`): kept if the capture
    /// fails.
    pub(crate) into_existing: bool,
}

/// Node handles and zeroed `cudaGraphEdgeData` (8 bytes each).
pub(crate) type InfoArrays = (Box<[usize]>, Box<[u64]>);

#[derive(Default)]
pub(crate) struct State {
    pub(crate) next_id: u64,
    pub(crate) captures: HashMap<u64, Capture>,
    /// Capturing stream -> its capture.
    pub(crate) streams: HashMap<u64, u64>,
    /// Event recorded in a capture -> (the capture, the nodes it stands for).
    pub(crate) events: HashMap<u64, (u64, Vec<u64>)>,
    /// The dependency arrays `cudaStreamGetCaptureInfo` handed out, per stream (node
    /// handles, then zeroed `cudaGraphEdgeData`), valid until the stream's next capture call.
    pub(crate) info: HashMap<u64, InfoArrays>,
}

impl State {
    pub(crate) fn capture(&mut self, id: u64) -> Result<&mut Capture> {
        self.captures.get_mut(&id).ok_or(Error::UNKNOWN)
    }

    pub(crate) fn invalidate(&mut self, id: u64) {
        if let Some(c) = self.captures.get_mut(&id) {
            c.invalidated = true;
        }
    }

    /// Ends capture `id` on every stream taking part.
    pub(crate) fn end(&mut self, id: u64) -> Option<Capture> {
        let cap = self.captures.remove(&id)?;
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
        self.streams.retain(|_, c| *c != id);
        self.events.retain(|_, (c, _)| *c != id);
        for s in cap.streams.keys() {
            self.info.remove(s);
        }
        Some(cap)
    }
}

pub(crate) static STATE: Mutex<Option<State>> = Mutex::new(None);
/// How many captures are under way: the common case (none) takes no lock.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The thread's `cudaStreamCaptureMode` (`cudaThreadExchangeStreamCaptureMode`).
    pub(crate) static MODE: Cell<u32> = const { Cell::new(MODE_GLOBAL) };
}

pub(crate) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(State::default))
}

/// Whether backend stream `stream` is capturing.
pub(crate) fn capturing(stream: u64) -> bool {
    any() && with(|s| s.streams.contains_key(&stream))
}

pub(crate) fn any() -> bool {
    ACTIVE.load(Ordering::Relaxed) > 0
}

/// If `stream` is capturing, adds the node `make` returns to its graph, after the stream's
/// dependency set (which becomes the node), and returns `true`; `false` if the stream is
/// not capturing (the caller runs the work). `make` must not call CUDA entry points.
pub(crate) fn add(stream: u64, make: impl FnOnce() -> Result<Kind>) -> Result<bool> {
    if !any() {
        return Ok(false);
    }
    with(|s| {
        let Some(&id) = s.streams.get(&stream) else {
            return Ok(false);
        };
        let cap = s.capture(id)?;
        if cap.invalidated {
            return Err(INVALIDATED);
        }
        let deps = cap.streams.get(&stream).cloned().unwrap_or_default();
        let node = graph::with(|r| r.add(cap.graph, make()?, &deps))?;
        cap.streams.insert(stream, vec![node]);
        s.info.remove(&stream);
        Ok(true)
    })
}

/// For work that cannot be captured: fails on a capturing stream, invalidating its
/// capture, and on the legacy stream while a blocking stream captures.
pub(crate) fn check_uncaptured(c: &Client, stream: u64) -> Result<()> {
    if !any() {
        return Ok(());
    }
    if stream == 0 {
        return check_legacy(c);
    }
    with(|s| match s.streams.get(&stream) {
        Some(&id) => {
            s.invalidate(id);
            Err(UNSUPPORTED)
        }
        None => Ok(()),
    })
}

/// The captures the legacy stream would implicitly wait for: those with a blocking stream
/// of the current device.
pub(crate) fn blocking_captures(c: &Client, s: &State) -> Vec<u64> {
    let device = state::device();
    let streams = c.streams.lock().unwrap_or_else(|e| e.into_inner());
    s.streams
        .iter()
        .filter(|(h, _)| {
            // A stream the library did not create is a per-thread default stream: blocking.
            streams
                .get(h)
                .is_none_or(|i| i.flags & NON_BLOCKING == 0 && i.device == device)
        })
        .map(|(_, &id)| id)
        .collect()
}

/// Work on the legacy stream: fails with `cudaErrorStreamCaptureImplicit`, invalidating
/// them, while blocking streams capture.
pub(crate) fn check_legacy(c: &Client) -> Result<()> {
    if !any() {
        return Ok(());
    }
    with(|s| {
        let ids = blocking_captures(c, s);
        if ids.is_empty() {
            return Ok(());
        }
        for id in ids {
            s.invalidate(id);
        }
        Err(Error(status::STREAM_CAPTURE_IMPLICIT))
    })
}

/// A "potentially unsafe" call (`cudaMalloc`, `cudaFree`): fails with
/// `cudaErrorStreamCaptureUnsupported`, invalidating the captures that forbid it, where
/// the thread's capture mode says so (see `cudaThreadExchangeStreamCaptureMode`).
pub(crate) fn check_unsafe() -> Result<()> {
    if !any() {
        return Ok(());
    }
    let (me, mode) = (std::thread::current().id(), MODE.with(Cell::get));
    with(|s| {
        let ids: Vec<u64> = s
            .captures
            .iter()
            .filter(|(_, c)| {
                let mine = c.thread == me && c.mode != MODE_RELAXED;
                match mode {
                    MODE_GLOBAL => mine || (c.thread != me && c.mode == MODE_GLOBAL),
                    MODE_RELAXED => false,
                    _ => mine,
                }
            })
            .map(|(&id, _)| id)
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        for id in ids {
            s.invalidate(id);
        }
        Err(UNSUPPORTED)
    })
}

/// A synchronous copy or memset (legacy-stream work that the caller waits for): while a
/// blocking stream captures it is implicit synchronization with it
/// (`cudaErrorStreamCaptureImplicit`, in every capture mode); beside a non-blocking
/// stream's capture it is allowed, even in global mode (NVIDIA's runtime on an H100).
pub(crate) fn check_legacy_sync(c: &Client) -> Result<()> {
    check_legacy(c)
}

/// `cudaDeviceSynchronize` while anything captures: fails, invalidating the captures.
pub(crate) fn check_device_sync() -> Result<()> {
    if !any() {
        return Ok(());
    }
    with(|s| {
        if s.captures.is_empty() {
            return Ok(());
        }
        for c in s.captures.values_mut() {
            c.invalidated = true;
        }
        Err(UNSUPPORTED)
    })
}

/// Querying or waiting for an event recorded in a capture: `cudaErrorCapturedEvent`.
pub(crate) fn check_event(event: u64) -> Result<()> {
    if any() && with(|s| s.events.contains_key(&event)) {
        return Err(Error(status::CAPTURED_EVENT));
    }
    Ok(())
}

/// `cudaEventRecord` of `event` on `stream`: `true` when the stream captures (the event
/// now stands for the stream's dependency set, or, `external`, an event record node is
/// captured); `false` when the caller records it.
pub(crate) fn record_event(event: u64, stream: u64, external: bool) -> Result<bool> {
    if !any() {
        return Ok(false);
    }
    if external && add(stream, || Ok(Kind::EventRecord(event)))? {
        return Ok(true);
    }
    with(|s| {
        let Some(&id) = s.streams.get(&stream) else {
            s.events.remove(&event);
            return Ok(false);
        };
        let cap = s.capture(id)?;
        if cap.invalidated {
            return Err(INVALIDATED);
        }
        let deps = cap.streams.get(&stream).cloned().unwrap_or_default();
        s.events.insert(event, (id, deps));
        Ok(true)
    })
}

/// `cudaStreamWaitEvent(stream, event)`: `true` when handled here (the stream joins the
/// event's capture, or, capturing, depends on the event's nodes too, or captures an event
/// wait node for `cudaEventWaitExternal`); `false` when the caller posts the wait.
pub(crate) fn wait_event(stream: u64, event: u64, flags: u32) -> Result<bool> {
    if !any() {
        return Ok(false);
    }
    let external = with(|s| -> Result<Option<bool>> {
        let ev = s.events.get(&event).cloned();
        match (s.streams.get(&stream).copied(), ev) {
            (None, None) => Ok(Some(false)),
            (None, Some((id, nodes))) => {
                let cap = s.capture(id)?;
                cap.streams.insert(stream, nodes);
                let invalidated = cap.invalidated;
                s.streams.insert(stream, id);
                if invalidated {
                    return Err(INVALIDATED);
                }
                Ok(Some(true))
            }
            (Some(id), Some((eid, nodes))) if id == eid => {
                let cap = s.capture(id)?;
                if cap.invalidated {
                    return Err(INVALIDATED);
                }
                let deps = cap.streams.entry(stream).or_default();
                for n in nodes {
                    if !deps.contains(&n) {
                        deps.push(n);
                    }
                }
                s.info.remove(&stream);
                Ok(Some(true))
            }
            (Some(id), Some((eid, _))) => {
                s.invalidate(id);
                s.invalidate(eid);
                Err(Error(status::STREAM_CAPTURE_MERGE))
            }
            (Some(_), None) if flags & WAIT_EXTERNAL != 0 => Ok(None),
            (Some(id), None) => {
                // A dependency on work outside the capture.
                s.invalidate(id);
                Err(Error(status::STREAM_CAPTURE_ISOLATION))
            }
        }
    })?;
    match external {
        Some(done) => Ok(done),
        None => add(stream, || Ok(Kind::EventWait(event))),
    }
}

/// `cudaStreamBeginCapture`.
pub(crate) fn begin(stream: cudaStream_t, mode: u32, ptsz: bool) -> Result<()> {
    begin_into(stream, mode, ptsz, None)
}

/// `cudaStreamBeginCapture`, or with `into` (a graph of the program's and the nodes the
/// first captured work depends on) `cudaStreamBeginCaptureToGraph`.
pub(crate) fn begin_into(
    stream: cudaStream_t,
    mode: u32,
    ptsz: bool,
    into: Option<(u64, Vec<u64>)>,
) -> Result<()> {
    let c = client::client()?;
    let h = resolve(c, stream, ptsz)?;
    if h == 0 {
        return Err(UNSUPPORTED);
    }
    if mode > MODE_RELAXED {
        return Err(Error::INVALID_VALUE);
    }
    if let Some((g, deps)) = &into {
        graph::with(|r| {
            r.graph(*g)?;
            deps.iter().try_for_each(|d| match r.node(*d) {
                Ok(n) if n.graph == *g => Ok(()),
                _ => Err(Error::INVALID_VALUE),
            })
        })?;
    }
    with(|s| {
        if s.streams.contains_key(&h) {
            return Err(graph::ILLEGAL_STATE);
        }
        s.next_id += 1;
        let id = s.next_id;
        let into_existing = into.is_some();
        let (graph, deps) = into.unwrap_or_else(|| (graph::create(), Vec::new()));
        let cap = Capture {
            graph,
            origin: h,
            mode,
            thread: std::thread::current().id(),
            invalidated: false,
            streams: HashMap::from([(h, deps)]),
            into_existing,
        };
        s.captures.insert(id, cap);
        s.streams.insert(h, id);
        ACTIVE.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

/// Whether `cudaStreamEndCapture` failing with `e` also sets the program's graph to null (as
/// CUDA does for an invalidated or unjoined capture, whose graph is gone).
pub(crate) fn end_clears_graph(e: Error) -> bool {
    e == INVALIDATED || e.0 == status::STREAM_CAPTURE_UNJOINED
}

/// `cudaStreamEndCapture`: the captured graph. `out_is_null`: the program gave no place for
/// it (`cudaErrorInvalidValue`, the capture goes on). On an error for which
/// [`end_clears_graph`] holds, the caller sets the program's graph to null.
pub(crate) fn end(stream: cudaStream_t, out_is_null: bool, ptsz: bool) -> Result<u64> {
    let c = client::client()?;
    let h = resolve(c, stream, ptsz)?;
    if out_is_null {
        return Err(Error::INVALID_VALUE);
    }
    with(|s| {
        let id = *s.streams.get(&h).ok_or(graph::ILLEGAL_STATE)?;
        let cap = s.capture(id)?;
        if cap.origin != h {
            return Err(Error(status::STREAM_CAPTURE_UNMATCHED));
        }
        if cap.mode != MODE_RELAXED && cap.thread != std::thread::current().id() {
            return Err(Error(status::STREAM_CAPTURE_WRONG_THREAD));
        }
        let cap = s.end(id).ok_or(Error::UNKNOWN)?;
        if cap.invalidated {
            if !cap.into_existing {
                graph::destroy(cap.graph);
            }
            return Err(INVALIDATED);
        }
        // Every stream that joined must have been joined back into the origin stream.
        let tail = cap.streams.get(&h).cloned().unwrap_or_default();
        let joined = graph::with(|r| {
            let seen = r.ancestors(&tail);
            cap.streams.values().flatten().all(|n| seen.contains(n))
        });
        if !joined {
            if !cap.into_existing {
                graph::destroy(cap.graph);
            }
            return Err(Error(status::STREAM_CAPTURE_UNJOINED));
        }
        Ok(cap.graph)
    })
}

/// The capture status of a stream, `(status, capture id, graph)`; fails for the legacy
/// stream while a blocking stream captures.
pub(crate) fn status_of(c: &Client, stream: cudaStream_t, ptsz: bool) -> Result<(u32, u64, u64)> {
    let h = resolve(c, stream, ptsz)?;
    if !any() {
        return Ok((0, 0, 0));
    }
    with(|s| {
        if h == 0 {
            if blocking_captures(c, s).is_empty() {
                return Ok((0, 0, 0));
            }
            return Err(Error(status::STREAM_CAPTURE_IMPLICIT));
        }
        Ok(match s.streams.get(&h) {
            None => (0, 0, 0),
            Some(&id) => {
                let cap = s.capture(id)?;
                let st = if cap.invalidated {
                    STATUS_INVALIDATED
                } else {
                    STATUS_ACTIVE
                };
                (st, id, cap.graph)
            }
        })
    })
}

/// What `cudaStreamGetCaptureInfo` reports of a stream. The arrays stay valid until the
/// stream's next capture call, as CUDA keeps its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CaptureInfo {
    /// `cudaStreamCaptureStatus`.
    pub status: u32,
    /// The capture's id (active captures only, as the rest).
    pub id: u64,
    /// The graph being captured into.
    pub graph: u64,
    /// The nodes the stream's next captured work depends on: an array of `n` handles.
    pub deps: *const usize,
    /// Their edge data: `n` default (zero) `cudaGraphEdgeData`.
    pub edges: *const u64,
    /// The arrays' length.
    pub n: usize,
}

/// `cudaStreamGetCaptureInfo` (every form): the stream's capture state.
pub(crate) fn info(stream: cudaStream_t, ptsz: bool) -> Result<CaptureInfo> {
    let c = client::client()?;
    let (status, id, graph) = status_of(c, stream, ptsz)?;
    let h = resolve(c, stream, ptsz)?;
    let mut i = CaptureInfo {
        status,
        id,
        graph,
        deps: std::ptr::null(),
        edges: std::ptr::null(),
        n: 0,
    };
    if status == STATUS_ACTIVE {
        (i.deps, i.edges, i.n) = with(|s| {
            let nodes = s
                .captures
                .get(&id)
                .and_then(|cap| cap.streams.get(&h))
                .cloned()
                .unwrap_or_default();
            let arrays = (
                nodes.iter().map(|&n| n as usize).collect::<Box<[usize]>>(),
                vec![0u64; nodes.len()].into_boxed_slice(),
            );
            // Kept until the stream's next capture call, as CUDA keeps its arrays.
            let kept = s.info.entry(h).insert_entry(arrays);
            let (d, e) = kept.get();
            (d.as_ptr(), e.as_ptr(), nodes.len())
        });
    }
    Ok(i)
}

/// `cudaStreamUpdateCaptureDependencies`: `nodes` gives the program's node array (checked
/// after the stream and `flags`, as CUDA does).
pub(crate) fn update_deps(
    stream: cudaStream_t,
    nodes: impl FnOnce() -> Result<Vec<u64>>,
    flags: u32,
    ptsz: bool,
) -> Result<()> {
    let c = client::client()?;
    let h = resolve(c, stream, ptsz)?;
    if flags > SET_DEPENDENCIES {
        return Err(Error::INVALID_VALUE);
    }
    let nodes = nodes()?;
    with(|s| {
        let id = *s.streams.get(&h).ok_or(graph::ILLEGAL_STATE)?;
        let cap = s.capture(id)?;
        let g = cap.graph;
        let ok = graph::with(|r| nodes.iter().all(|n| r.node(*n).is_ok_and(|x| x.graph == g)));
        if !ok {
            return Err(Error::INVALID_VALUE);
        }
        let set = cap.streams.entry(h).or_default();
        if flags == SET_DEPENDENCIES {
            set.clear();
        }
        for n in nodes {
            if !set.contains(&n) {
                set.push(n);
            }
        }
        s.info.remove(&h);
        Ok(())
    })
}

/// `cudaThreadExchangeStreamCaptureMode`: sets the calling thread's capture mode to `want`
/// and returns the one it had.
pub(crate) fn exchange_mode(want: u32) -> Result<u32> {
    if want > MODE_RELAXED {
        return Err(Error::INVALID_VALUE);
    }
    Ok(MODE.with(|m| m.replace(want)))
}

/// The backend handle for a `cudaStream_t`, for work that cannot be captured into a graph.
/// `per_thread_default`: the `_ptsz` variants, where stream 0 means the calling thread's
/// default stream.
///
/// Fails on a capturing stream (`cudaErrorStreamCaptureUnsupported`, invalidating its
/// capture) and on the legacy stream while a blocking stream captures
/// (`cudaErrorStreamCaptureImplicit`), as CUDA does (see the module documentation).
pub fn stream_handle(c: &Client, s: cudaStream_t, per_thread_default: bool) -> Result<u64> {
    let h = resolve(c, s, per_thread_default)?;
    check_uncaptured(c, h)?;
    Ok(h)
}

/// The backend handle for a `cudaStream_t`, for work that a capturing stream records into
/// its graph (the caller asks [`add`]). Fails on the legacy stream while a
/// blocking stream captures.
pub fn capture_stream_handle(c: &Client, s: cudaStream_t, per_thread_default: bool) -> Result<u64> {
    let h = resolve(c, s, per_thread_default)?;
    if h == 0 {
        check_legacy(c)?;
    }
    Ok(h)
}
