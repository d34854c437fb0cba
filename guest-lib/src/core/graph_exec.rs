// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Executable graphs: instantiation, parameter updates and launches.
//!
//! `cudaGraphInstantiate` checks the graph (a cycle fails) and flattens it into one
//! topological order of steps, child graphs inlined, each step a copy of its node's
//! parameters (the executable graph does not change when its graph does) with the earlier
//! steps it depends on.
//!
//! A launch of a graph of device work is one message: the backend gets the steps once
//! (`GraphCreate`, at the first launch or at `cudaGraphUpload`) and each `cudaGraphLaunch`
//! after that sends `GraphLaunch` (posted, no round trip). The CUDA executor makes the
//! steps a CUDA graph; the CPU executor replays them. See `graph_state::Remote` for which graphs go
//! and when the backend's copy is made again.
//!
//! Other graphs are replayed here: each step on the launch stream, in order, through the
//! same code as the call it stands for (kernels, device-side copies and memsets are
//! posted, copies from and to host memory go as `cudaMemcpyAsync` does, host nodes run as
//! `cudaLaunchHostFunc` does, event nodes record and wait on the stream), one message per
//! step. Since one stream runs them in a dependency order, every edge is honoured.
//!
//! `cudaGraphExecUpdate` accepts a graph of the same topology (the same node count, node
//! types and edges, nodes paired in the order they were added, child graphs alike) and
//! takes its parameters; anything else fails with `cudaErrorGraphExecUpdateFailure` and the
//! reason in `cudaGraphExecUpdateResultInfo`.

use crate::client::{self, Client};
use crate::core::capture::stream_handle;
use crate::core::graph::{Kind, Registry, cudaGraph_t, cudaGraphExec_t, cudaGraphNode_t, with};
use crate::core::graph_state::Exec;
use crate::core::graph_state::Remote;
use crate::core::graph_state::Shape;
use crate::core::graph_state::Step;
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::Arc;
use vcuda_protocol::{GraphCreateReq, GraphLaunchReq, HandleReq, ops, status};

/// `cudaGraphInstantiateFlagAutoFreeOnLaunch`.
pub(crate) const FLAG_AUTO_FREE_ON_LAUNCH: u64 = 1;
/// `cudaGraphInstantiateFlagUpload`.
pub(crate) const FLAG_UPLOAD: u64 = 2;
/// `cudaGraphInstantiateFlagDeviceLaunch`.
pub(crate) const FLAG_DEVICE_LAUNCH: u64 = 4;
/// `cudaGraphInstantiateFlagUseNodePriority`.
pub(crate) const FLAG_USE_NODE_PRIORITY: u64 = 8;

/// `cudaGraphExecUpdateResult`: `ErrorTopologyChanged`, `ErrorNodeTypeChanged`.
pub(crate) const UPDATE_TOPOLOGY_CHANGED: u32 = 2;
pub(crate) const UPDATE_NODE_TYPE_CHANGED: u32 = 3;
/// `cudaGraphExecUpdateErrorNotSupported`.
pub(crate) const UPDATE_NOT_SUPPORTED: u32 = 6;
/// `cudaGraphInstantiateInvalidStructure`.
pub(crate) const INSTANTIATE_INVALID_STRUCTURE: u32 = 2;

/// `cudaGraphExecUpdateResultInfo`.
#[repr(C)]
pub struct cudaGraphExecUpdateResultInfo {
    pub(crate) result: u32,
    pub(crate) error_node: cudaGraphNode_t,
    pub(crate) error_from_node: cudaGraphNode_t,
}

/// `cudaGraphInstantiateParams`.
#[repr(C)]
pub struct cudaGraphInstantiateParams {
    pub(crate) flags: u64,
    pub(crate) upload_stream: cudaStream_t,
    pub(crate) err_node_out: cudaGraphNode_t,
    pub(crate) result_out: u32,
}

pub(crate) fn shape(r: &Registry, g: u64) -> Result<Shape> {
    let nodes = &r.graph(g)?.nodes;
    let index: HashMap<u64, usize> = nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut v = Vec::with_capacity(nodes.len());
    for n in nodes {
        let node = r.node(*n)?;
        let mut deps = node
            .deps
            .iter()
            .map(|d| index.get(d).copied().ok_or(Error::INVALID_VALUE))
            .collect::<Result<Vec<usize>>>()?;
        deps.sort_unstable();
        let child = match node.kind {
            Kind::Child(c) => Some(shape(r, c)?),
            _ => None,
        };
        v.push((node.kind.type_code(), deps, child));
    }
    Ok(Shape(v))
}

/// Appends the steps of graph `g` in a topological order (ties in the order nodes were
/// added, so graphs of the same shape give the same order); fails on a cycle. Root nodes
/// depend on the steps `entry`. Records each child-graph node's shape and steps in
/// `children`. Returns the steps the graph ends with (those of its sink nodes; `entry` for
/// an empty graph).
pub(crate) fn flatten(
    r: &Registry,
    g: u64,
    s: &Shape,
    entry: &[u32],
    steps: &mut Vec<Step>,
    children: &mut HashMap<u64, (Shape, Vec<u64>)>,
) -> Result<Vec<u32>> {
    let nodes = &r.graph(g)?.nodes;
    let n = s.0.len();
    let mut indegree: Vec<usize> = s.0.iter().map(|(_, d, _)| d.len()).collect();
    let mut dependents = vec![Vec::new(); n];
    for (i, (_, deps, _)) in s.0.iter().enumerate() {
        for &d in deps {
            dependents[d].push(i);
        }
    }
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &j in &dependents[i] {
            indegree[j] -= 1;
            if indegree[j] == 0 {
                ready.push_back(j);
            }
        }
    }
    if order.len() != n {
        return Err(Error::INVALID_VALUE);
    }
    if n == 0 {
        return Ok(entry.to_vec());
    }
    // The step each node ends with.
    let mut exit = vec![0u32; n];
    for i in order {
        let id = nodes[i];
        let deps: Vec<u32> = if s.0[i].1.is_empty() {
            entry.to_vec()
        } else {
            s.0[i].1.iter().map(|&d| exit[d]).collect()
        };
        let kind = match &r.node(id)?.kind {
            Kind::Child(c) => {
                let cs = s.0[i].2.as_ref().ok_or(Error::INVALID_VALUE)?;
                let first = steps.len();
                let ends = flatten(r, *c, cs, &deps, steps, children)?;
                let origins = steps[first..].iter().map(|st| st.origin).collect();
                children.insert(id, (cs.clone(), origins));
                exit[i] = step_index(steps.len())?;
                steps.push(Step {
                    origin: id,
                    kind: Kind::Empty,
                    enabled: true,
                    deps: ends,
                });
                continue;
            }
            k => k.clone(),
        };
        exit[i] = step_index(steps.len())?;
        steps.push(Step {
            origin: id,
            kind,
            enabled: true,
            deps,
        });
    }
    Ok((0..n)
        .filter(|&i| dependents[i].is_empty())
        .map(|i| exit[i])
        .collect())
}

/// A step's index as the backend takes it (at most `MAX_GRAPH_NODES` steps are sent; more
/// are replayed).
pub(crate) fn step_index(i: usize) -> Result<u32> {
    u32::try_from(i).map_err(|_| Error::MEMORY_ALLOCATION)
}

/// The steps and shape of graph `g`.
pub(crate) fn compile(r: &Registry, g: u64) -> Result<(Vec<Step>, Shape)> {
    compile_with_children(r, g).map(|(steps, s, _)| (steps, s))
}

/// The steps and shape of graph `g`, and what each child-graph node became.
#[allow(clippy::type_complexity)]
pub(crate) fn compile_with_children(
    r: &Registry,
    g: u64,
) -> Result<(Vec<Step>, Shape, HashMap<u64, (Shape, Vec<u64>)>)> {
    let s = shape(r, g)?;
    let (mut steps, mut children) = (Vec::new(), HashMap::new());
    flatten(r, g, &s, &[], &mut steps, &mut children)?;
    Ok((steps, s, children))
}

pub(crate) fn instantiate(has_out: bool, g: cudaGraph_t, flags: u64, upload: bool) -> Result<u64> {
    let known =
        FLAG_AUTO_FREE_ON_LAUNCH | FLAG_UPLOAD | FLAG_DEVICE_LAUNCH | FLAG_USE_NODE_PRIORITY;
    if !has_out || flags & !known != 0 || (flags & FLAG_UPLOAD != 0 && !upload) {
        return Err(Error::INVALID_VALUE);
    }
    if flags & FLAG_DEVICE_LAUNCH != 0 {
        return Err(Error::NOT_SUPPORTED);
    }
    with(|r| {
        let (steps, shape, children) = compile_with_children(r, g as u64)?;
        if crate::core::graph::has_memory_nodes(r, g as u64)
            && r.execs.values().any(|e| e.graph == g as u64)
        {
            // One executable graph at a time for a graph with memory nodes, as in CUDA.
            return Err(Error::NOT_SUPPORTED);
        }
        let users = r.retain_graph_users(g as u64)?;
        for s in &steps {
            if let Kind::MemAlloc { ptr, .. } = s.kind {
                r.hold_graph_mem(ptr);
            }
        }
        let id = r.id();
        let exec = Exec {
            steps: Arc::new(steps),
            shape,
            flags,
            users,
            graph: g as u64,
            children,
            remote: Remote::default(),
        };
        r.execs.insert(id, exec);
        Ok(id)
    })
}

/// Why `new` cannot update an executable graph of shape `old`: `(result, node, from)`.
pub(crate) fn mismatch(r: &Registry, g: u64, old: &Shape, new: &Shape) -> (u32, u64, u64) {
    let nodes = r.graph(g).map(|x| x.nodes.clone()).unwrap_or_default();
    if old.0.len() != new.0.len() {
        return (UPDATE_TOPOLOGY_CHANGED, 0, 0);
    }
    for (i, (a, b)) in old.0.iter().zip(&new.0).enumerate() {
        let node = nodes.get(i).copied().unwrap_or(0);
        if a.0 != b.0 {
            return (UPDATE_NODE_TYPE_CHANGED, node, 0);
        }
        if a.1 != b.1 {
            let from =
                b.1.iter()
                    .chain(&a.1)
                    .find(|d| !(a.1.contains(d) && b.1.contains(d)));
            let from = from.and_then(|&d| nodes.get(d)).copied().unwrap_or(0);
            return (UPDATE_TOPOLOGY_CHANGED, node, from);
        }
        if a.2 != b.2 {
            return (UPDATE_TOPOLOGY_CHANGED, node, 0);
        }
    }
    (UPDATE_TOPOLOGY_CHANGED, 0, 0)
}

pub(crate) fn update(
    exec: cudaGraphExec_t,
    g: cudaGraph_t,
) -> Result<cudaGraphExecUpdateResultInfo> {
    let (result, node, from) = with(|r| {
        let (steps, new) = compile(r, g as u64)?;
        let e = r.execs.get(&(exec as u64)).ok_or(Error::INVALID_VALUE)?;
        if e.shape != new {
            return Ok(mismatch(r, g as u64, &e.shape, &new));
        }
        if steps
            .iter()
            .any(|s| matches!(s.kind, Kind::MemAlloc { .. } | Kind::MemFree(_)))
        {
            // As CUDA: graphs with memory nodes are not updated.
            return Ok((UPDATE_NOT_SUPPORTED, 0, 0));
        }
        // The same shape flattens in the same order: step i stands for the same node.
        let steps = steps
            .into_iter()
            .zip(e.steps.iter())
            .map(|(s, old)| Step {
                origin: old.origin,
                kind: s.kind,
                enabled: old.enabled,
                deps: old.deps.clone(),
            })
            .collect();
        // The new graph's user objects replace the old graph's.
        let users = r.retain_graph_users(g as u64)?;
        let e = r
            .execs
            .get_mut(&(exec as u64))
            .ok_or(Error::INVALID_VALUE)?;
        e.steps = Arc::new(steps);
        e.touch(&mut r.stale_graphs);
        let old = std::mem::replace(&mut e.users, users);
        r.release_users(old);
        Ok::<_, Error>((0, 0, 0))
    })?;
    Ok(cudaGraphExecUpdateResultInfo {
        result,
        error_node: node as cudaGraphNode_t,
        error_from_node: from as cudaGraphNode_t,
    })
}

/// What `cudaGraphExecUpdate` returns for the outcome `update` reported.
pub(crate) fn update_status(info: &cudaGraphExecUpdateResultInfo) -> Result<()> {
    if info.result == 0 {
        Ok(())
    } else {
        Err(Error(status::GRAPH_EXEC_UPDATE_FAILURE))
    }
}

/// Runs one step on backend stream `s`.
pub(crate) fn run(c: &Client, s: u64, kind: &Kind) -> Result<()> {
    match kind {
        Kind::Kernel(k) => {
            let cfg = (k.grid, k.block, k.shmem);
            match k.backend {
                Some(h) => crate::core::launch::post_handle(c, h, cfg, s, &k.params, k.shape()),
                None => crate::core::launch::post(c, k.func, cfg, s, &k.params, k.shape()),
            }
        }
        Kind::Memcpy(cp) => {
            for z in 0..cp.extent[2] {
                let (dst, src) = (cp.dst.at(0, z), cp.src.at(0, z));
                let (w, h) = (cp.extent[0], cp.extent[1]);
                crate::core::memory::copy_2d(
                    dst,
                    cp.dst.pitch,
                    src,
                    cp.src.pitch,
                    w,
                    h,
                    cp.kind,
                    Some(s),
                )?;
            }
            Ok(())
        }
        Kind::Memset(m) => crate::core::memory::memset_elems(
            c,
            m.dst,
            m.pitch,
            m.value,
            m.elem,
            m.width,
            m.height,
            Some(s),
        ),
        Kind::Host(h) => crate::core::misc::host_call(c, s, h.func, h.data as *mut c_void),
        Kind::EventRecord(e) => crate::core::stream::post_record(c, *e, s),
        Kind::EventWait(e) => crate::core::stream::post_wait(c, s, *e),
        // Graph memory stays reserved while the graph lives (see `graph_mem`).
        Kind::MemAlloc { ptr, .. } => {
            crate::core::graph_mem::mark(*ptr, true);
            Ok(())
        }
        Kind::MemFree(ptr) => {
            crate::core::graph_mem::mark(*ptr, false);
            Ok(())
        }
        Kind::Empty | Kind::Child(_) => Ok(()),
    }
}

/// The description of `steps` the backend takes (`GraphCreate`), or `None` if a step
/// cannot go (see [`Remote`]) or checking one fails (the replay reports that).
pub(crate) fn describe(c: &Client, steps: &[Step]) -> Option<Vec<u8>> {
    use vcuda_protocol::graph::{MAX_GRAPH_LEN, MAX_GRAPH_NODES, Node, NodeWork, encode_node};
    if steps.len() > MAX_GRAPH_NODES as usize {
        return None;
    }
    let mut out = Vec::new();
    for step in steps {
        let work = match &step.kind {
            _ if !step.enabled => NodeWork::Empty,
            Kind::Kernel(k) => {
                let req = crate::core::launch::graph_node(c, k).ok()?;
                match k.shape() {
                    crate::core::function::Shape::Cluster(d) => {
                        NodeWork::KernelCluster(req, k.params.to_vec(), d)
                    }
                    s => NodeWork::Kernel(
                        req,
                        k.params.to_vec(),
                        s == crate::core::function::Shape::Cooperative,
                    ),
                }
            }
            Kind::Memcpy(cp) if cp.extent.contains(&0) => NodeWork::Empty,
            Kind::Memcpy(cp) if cp.extent[2] == 1 => {
                let (d, s) = (cp.dst.at(0, 0), cp.src.at(0, 0));
                let (w, h) = (cp.extent[0], cp.extent[1]);
                let r = crate::core::memory::graph_copy(
                    c,
                    d,
                    cp.dst.pitch,
                    s,
                    cp.src.pitch,
                    w,
                    h,
                    cp.kind,
                );
                r.ok()??
            }
            Kind::Memset(m) if m.width == 0 || m.height == 0 => NodeWork::Empty,
            Kind::Memset(m) => {
                let r = crate::core::memory::graph_memset(
                    c,
                    m.dst,
                    m.pitch,
                    m.value,
                    m.elem,
                    (m.width, m.height),
                );
                NodeWork::Memset(r.ok()??)
            }
            Kind::EventRecord(e) => NodeWork::EventRecord(vcuda_protocol::EventRecordReq {
                event: *e,
                ..Default::default()
            }),
            Kind::EventWait(e) => NodeWork::EventWait(vcuda_protocol::StreamWaitEventReq {
                event: *e,
                ..Default::default()
            }),
            // Graph memory is the library's bookkeeping (done at launch, see `launch`).
            Kind::MemAlloc { .. } | Kind::MemFree(_) | Kind::Empty | Kind::Child(_) => {
                NodeWork::Empty
            }
            Kind::Memcpy(_) | Kind::Host(_) => return None,
        };
        let node = Node {
            work,
            deps: step.deps.clone(),
        };
        log::trace!("graph step {:?}", node);
        encode_node(&mut out, &node);
        if out.len() as u64 > MAX_GRAPH_LEN {
            return None;
        }
    }
    Some(out)
}

/// Destroys the backend's copies of graphs that changed or went.
pub(crate) fn drop_stale(c: &Client) {
    for h in with(|r| std::mem::take(&mut r.stale_graphs)) {
        // Nothing to report: a copy the backend lost (a reset) is gone anyway.
        let _ = c.internal(|| c.post::<ops::GraphDestroy>(&HandleReq { handle: h }));
    }
}

/// The backend's copy of `exec`'s steps, made now if it should be (see [`Remote`]), and
/// whether it is this caller's alone (not kept: the caller destroys it after its launch,
/// [`retire`]); `None`: replay the steps. `launching`: for a launch (an upload leaves the
/// changed mark).
pub(crate) fn remote(
    c: &Client,
    exec: u64,
    steps: &Arc<Vec<Step>>,
    launching: bool,
) -> Option<(u64, bool)> {
    // `VCUDA_GRAPH_WHOLE=0`: never (to compare).
    static WHOLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*WHOLE.get_or_init(|| std::env::var("VCUDA_GRAPH_WHOLE").as_deref() != Ok("0")) {
        return None;
    }
    let version = with(|r| {
        let e = r.execs.get_mut(&exec)?;
        let rm = &mut e.remote;
        if rm.handle.is_some() {
            return Some(Err(rm.handle));
        }
        if rm.changed && launching {
            rm.changed = false;
            return None;
        }
        (!rm.refused && !rm.changed).then_some(Ok(rm.version))
    })?;
    let version = match version {
        Err(handle) => return handle.map(|h| (h, false)),
        Ok(v) => v,
    };
    let made = describe(c, steps).and_then(|desc| {
        let req = GraphCreateReq {
            node_count: steps.len() as u32,
            reserved: 0,
            size: desc.len() as u64,
        };
        if req.size > c.max_request_data() {
            return None;
        }
        let segs: Vec<&[u8]> = if desc.is_empty() { vec![] } else { vec![&desc] };
        c.call_with::<ops::GraphCreate>(&req, &[], &segs, &mut [])
            .ok()
            .map(|r| r.handle)
    });
    match made {
        Some(h) => log::debug!(
            "executable graph {exec:#x}: {} steps sent whole as backend graph {h:#x}",
            steps.len()
        ),
        None => log::debug!("executable graph {exec:#x}: replayed step by step"),
    }
    let kept = with(|r| {
        let e = r.execs.get_mut(&exec)?;
        // Changed meanwhile, or another thread's launch made a copy first.
        if e.remote.version != version || e.remote.handle.is_some() {
            return None;
        }
        match made {
            Some(h) => e.remote.handle = Some(h),
            None => e.remote.refused = true,
        }
        Some(())
    });
    // Not kept: this launch uses the copy (made from the steps it would replay
    // otherwise); later ones do not.
    made.map(|h| (h, kept.is_none()))
}

/// Destroys a copy no executable graph keeps, at the next launch (after the launch that
/// used it was sent).
pub(crate) fn retire(handle: u64) {
    with(|r| r.stale_graphs.push(handle));
}

/// `cudaGraphLaunch`: sends the launch of the backend's copy, or replays the steps on
/// `stream`, in order. A capturing stream fails (`cudaErrorStreamCaptureUnsupported`):
/// graphs are not captured as child graphs.
pub(crate) fn launch(exec: cudaGraphExec_t, stream: cudaStream_t, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let steps = with(|r| r.execs.get(&(exec as u64)).map(|e| e.steps.clone()))
        .ok_or(Error::INVALID_VALUE)?;
    let s = stream_handle(c, stream, ptsz)?;
    drop_stale(c);
    if let Some((graph, alone)) = remote(c, exec as u64, &steps, true) {
        let marks = steps
            .iter()
            .filter(|st| matches!(st.kind, Kind::MemAlloc { .. } | Kind::MemFree(_)))
            .try_for_each(|st| run(c, s, &st.kind));
        let r =
            marks.and_then(|()| c.post::<ops::GraphLaunch>(&GraphLaunchReq { graph, stream: s }));
        if alone {
            retire(graph);
        }
        return r;
    }
    // The registry is not locked here: host nodes may call into CUDA.
    for step in steps.iter().filter(|s| s.enabled) {
        run(c, s, &step.kind)?;
    }
    Ok(())
}

/// `cudaGraphNodeSetEnabled` (`Some`) or `GetEnabled`: kernel, copy and memset nodes of an
/// executable graph can be turned off and on; a disabled node does nothing when launched.
pub(crate) fn enabled(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    set: Option<bool>,
) -> Result<bool> {
    with(|r| {
        let e = r
            .execs
            .get_mut(&(exec as u64))
            .ok_or(Error::INVALID_VALUE)?;
        let i = e
            .steps
            .iter()
            .position(|s| s.origin == node as u64)
            .ok_or(Error::INVALID_VALUE)?;
        if !matches!(
            e.steps[i].kind,
            Kind::Kernel(_) | Kind::Memcpy(_) | Kind::Memset(_)
        ) {
            return Err(Error::INVALID_VALUE);
        }
        if let Some(on) = set
            && e.steps[i].enabled != on
        {
            Arc::make_mut(&mut e.steps)[i].enabled = on;
            e.touch(&mut r.stale_graphs);
        }
        Ok(e.steps[i].enabled)
    })
}

/// `cudaGraphExecChildGraphNodeSetParams`: the steps of child-graph node `node` take the
/// parameters of `child`, which must have the same shape (and no memory nodes).
pub(crate) fn exec_child_set(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    child: cudaGraph_t,
) -> Result<()> {
    with(|r| {
        if crate::core::graph::has_memory_nodes(r, child as u64) {
            return Err(Error::NOT_SUPPORTED);
        }
        let (new_steps, new_shape) = compile(r, child as u64)?;
        let e = r
            .execs
            .get_mut(&(exec as u64))
            .ok_or(Error::INVALID_VALUE)?;
        // What the node's child was when instantiated (the graph may have changed since).
        let (old_shape, origins) = e.children.get(&(node as u64)).ok_or(Error::INVALID_VALUE)?;
        // A child of another shape: as NVIDIA's runtime (CUDA 13.0, measured).
        if *old_shape != new_shape {
            return Err(Error(status::GRAPH_EXEC_UPDATE_FAILURE));
        }
        // Found first, changed after: all or nothing.
        let at: Vec<usize> = origins
            .iter()
            .map(|o| e.steps.iter().position(|s| s.origin == *o))
            .collect::<Option<_>>()
            .ok_or(Error::INVALID_VALUE)?;
        let steps = Arc::make_mut(&mut e.steps);
        for (i, n) in at.into_iter().zip(new_steps) {
            steps[i].kind = n.kind;
        }
        e.touch(&mut r.stale_graphs);
        Ok(())
    })
}

/// Whether executable graph `exec` came from a graph holding `node` (an empty node has no
/// step to change): `Ok` if so.
pub(crate) fn exec_has_node(exec: cudaGraphExec_t, node: cudaGraphNode_t) -> Result<()> {
    with(|r| {
        let e = r.execs.get(&(exec as u64)).ok_or(Error::INVALID_VALUE)?;
        let mut g = r.node(node as u64)?.graph;
        // Up through child graphs to a top-level graph.
        while let Some(owner) = r.graph(g)?.owner_node() {
            g = r.node(owner)?.graph;
        }
        if g == e.graph {
            Ok(())
        } else {
            Err(Error::INVALID_VALUE)
        }
    })
}

/// Replaces the parameters of `node`'s step in `exec` (same node type only).
pub(crate) fn exec_set(
    exec: cudaGraphExec_t,
    node: cudaGraphNode_t,
    kind: Result<Kind>,
) -> Result<()> {
    let mut kind = kind?;
    with(|r| {
        let e = r
            .execs
            .get_mut(&(exec as u64))
            .ok_or(Error::INVALID_VALUE)?;
        let steps = Arc::make_mut(&mut e.steps);
        let step = steps
            .iter_mut()
            .find(|s| s.origin == node as u64)
            .ok_or(Error::INVALID_VALUE)?;
        if step.kind.type_code() != kind.type_code() {
            return Err(Error::INVALID_VALUE);
        }
        kind.keep_attributes_of(&step.kind);
        step.kind = kind;
        e.touch(&mut r.stale_graphs);
        Ok(())
    })
}

/// `cudaGraphUpload`: gives the backend its copy of the steps now, so the first launch is
/// one message too (a graph the backend cannot take is replayed, see [`Remote`]).
pub(crate) fn upload(exec: cudaGraphExec_t, stream: cudaStream_t, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    stream_handle(c, stream, ptsz)?;
    let steps = with(|r| r.execs.get(&(exec as u64)).map(|e| e.steps.clone()))
        .ok_or(Error::INVALID_VALUE)?;
    drop_stale(c);
    if let Some((graph, true)) = remote(c, exec as u64, &steps, false) {
        retire(graph);
    }
    Ok(())
}

/// `cudaGraphInstantiateWithParams`: the executable graph and how its upload (if the flags
/// ask for one) went, and what the parameters report (`result_out`, with `err_node_out`
/// null). A failed upload leaves the graph instantiated, its handle the caller's.
pub(crate) fn instantiate_with_params(
    has_out: bool,
    g: cudaGraph_t,
    flags: u64,
    upload_stream: cudaStream_t,
    ptsz: bool,
) -> (Result<(u64, Result<()>)>, u32) {
    let r = instantiate(has_out, g, flags, true);
    let result = match r {
        Ok(_) => 0,
        Err(e) if e == Error::INVALID_VALUE && has_out => INSTANTIATE_INVALID_STRUCTURE,
        Err(_) => 1,
    };
    let r = r.map(|exec| {
        let uploaded = if flags & FLAG_UPLOAD != 0 {
            upload(exec as cudaGraphExec_t, upload_stream, ptsz)
        } else {
            Ok(())
        };
        (exec, uploaded)
    });
    (r, result)
}

/// `cudaGraphExecDestroy`.
pub(crate) fn graph_exec_destroy(exec: cudaGraphExec_t) -> Result<()> {
    with(|r| {
        let mut e = r.execs.remove(&(exec as u64)).ok_or(Error::INVALID_VALUE)?;
        e.touch(&mut r.stale_graphs);
        r.release_users(e.users);
        for s in e.steps.iter() {
            if let Kind::MemAlloc { ptr, .. } = s.kind {
                r.drop_graph_mem(ptr);
            }
        }
        Ok(())
    })
}

/// `cudaGraphLaunch`.
pub(crate) fn graph_launch(exec: cudaGraphExec_t, stream: cudaStream_t) -> Result<()> {
    launch(exec, stream, false)
}

/// `cudaGraphUpload`.
pub(crate) fn graph_upload(exec: cudaGraphExec_t, stream: cudaStream_t) -> Result<()> {
    upload(exec, stream, false)
}
