// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA graphs: graphs and their nodes, built explicitly (`cudaGraphAdd*Node`) or by stream
//! capture ([`super::capture`]).
//!
//! A graph lives in the library only: a registry maps the opaque handles the program holds
//! (`cudaGraph_t`, `cudaGraphNode_t`, `cudaGraphExec_t`: ids that are never reused, never
//! pointers the library dereferences) to graphs, nodes and executable graphs. A node keeps
//! a copy of what it runs: a kernel node its configuration and its parameter bytes (packed
//! at add or capture time with the launch path's own layout code), a copy node its
//! `cudaMemcpy3DParms`, a memset node its `cudaMemsetParams`, a host node its function and
//! argument; a child-graph node owns a clone of the child. Instantiation and replay are in
//! [`super::graph_exec`].
//!
//! Node kinds: kernel, memcpy (linear memory; CUDA arrays are not supported), memset,
//! host, empty, child graph, event record and event wait.

use crate::client;
use crate::core::graph_state::Destructor;
use crate::core::graph_state::Exec;
use crate::core::graph_state::MAX_CACHED;
use crate::error::{Error, Result};
use crate::ffi::cudaEvent_t;
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::sync::Mutex;
use vcuda_protocol::status;

/// `cudaGraph_t`.
pub type cudaGraph_t = *mut c_void;
/// `cudaGraphNode_t`.
pub type cudaGraphNode_t = *mut c_void;
/// `cudaGraphExec_t`.
pub type cudaGraphExec_t = *mut c_void;

pub use crate::core::graph_node::node_type;
pub(crate) use crate::core::graph_node::{Copy3D, Host, Kernel, Kind, Memset};
pub use crate::core::graph_node::{
    cudaHostNodeParams, cudaKernelNodeParams, cudaMemcpy3DParms, cudaMemsetParams,
};

pub(crate) struct GraphObj {
    /// Nodes, in the order they were added.
    pub nodes: Vec<u64>,
    /// References this graph owns to user objects (`cudaGraphRetainUserObject`).
    pub user_refs: HashMap<u64, u32>,
    /// The child-graph node that owns this graph.
    pub(crate) owner: Option<u64>,
    /// For a clone: original node -> its copy here.
    pub(crate) cloned_from: HashMap<u64, u64>,
}

pub(crate) struct NodeObj {
    pub graph: u64,
    pub kind: Kind,
    /// The nodes this one depends on (edges `dep -> this`), in the order added.
    pub deps: Vec<u64>,
}

/// Every graph, node and executable graph of the process.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) next: u64,
    pub graphs: HashMap<u64, GraphObj>,
    pub nodes: HashMap<u64, NodeObj>,
    pub execs: HashMap<u64, Exec>,
    /// User objects (`cudaUserObjectCreate`).
    pub user_objects: HashMap<u64, crate::core::graph_state::UserObject>,
    /// Destructors of user objects whose last reference went, to run once the lock is
    /// released (see [`with`]).
    pub destructors: Vec<crate::core::graph_state::Destructor>,
    /// Graph allocations (see `graph_mem`).
    pub graph_mem: crate::core::graph_state::GraphMemory,
    /// The backend's copies of executable graphs that changed or went, to destroy at the
    /// next launch (see `graph_exec::Remote`).
    pub stale_graphs: Vec<u64>,
}

impl GraphObj {
    /// The child-graph node that owns this graph, if any.
    pub(crate) fn owner_node(&self) -> Option<u64> {
        self.owner
    }
}

impl Registry {
    /// A new handle: distinct from every earlier one, never 0.
    pub(crate) fn id(&mut self) -> u64 {
        self.next += 0x10;
        0x7600_0000_0000 + self.next
    }

    pub(crate) fn new_graph(&mut self, owner: Option<u64>) -> u64 {
        let id = self.id();
        self.graphs.insert(
            id,
            GraphObj {
                nodes: Vec::new(),
                user_refs: HashMap::new(),
                owner,
                cloned_from: HashMap::new(),
            },
        );
        id
    }

    pub(crate) fn graph(&self, g: u64) -> Result<&GraphObj> {
        self.graphs.get(&g).ok_or(Error::INVALID_VALUE)
    }

    pub(crate) fn node(&self, n: u64) -> Result<&NodeObj> {
        self.nodes.get(&n).ok_or(Error::INVALID_VALUE)
    }

    pub(crate) fn node_mut(&mut self, n: u64) -> Result<&mut NodeObj> {
        self.nodes.get_mut(&n).ok_or(Error::INVALID_VALUE)
    }

    /// Adds a node to `g` after `deps` (distinct nodes of `g`).
    pub(crate) fn add(&mut self, g: u64, kind: Kind, deps: &[u64]) -> Result<u64> {
        self.graph(g)?;
        for (i, d) in deps.iter().enumerate() {
            if self.node(*d)?.graph != g || deps[..i].contains(d) {
                return Err(Error::INVALID_VALUE);
            }
        }
        let id = self.id();
        if let Kind::Child(child) = kind
            && let Some(c) = self.graphs.get_mut(&child)
        {
            c.owner = Some(id);
        }
        self.nodes.insert(
            id,
            NodeObj {
                graph: g,
                kind,
                deps: deps.to_vec(),
            },
        );
        self.graphs
            .get_mut(&g)
            .ok_or(Error::INVALID_VALUE)?
            .nodes
            .push(id);
        Ok(id)
    }

    /// A deep copy of graph `g` (child graphs included), owned by `owner`.
    pub(crate) fn clone_graph(&mut self, g: u64, owner: Option<u64>) -> Result<u64> {
        let order = self.graph(g)?.nodes.clone();
        let copy = self.new_graph(owner);
        let mut map = HashMap::new();
        for n in order {
            let node = self.node(n)?;
            let (kind, deps) = (node.kind.clone(), node.deps.clone());
            let kind = match kind {
                Kind::Child(child) => Kind::Child(self.clone_graph(child, None)?),
                k => k,
            };
            if let Kind::MemAlloc { ptr, .. } = kind {
                self.hold_graph_mem(ptr);
            }
            let deps: Vec<u64> = deps.iter().map(|d| map[d]).collect();
            let id = self.add(copy, kind, &deps)?;
            map.insert(n, id);
        }
        crate::core::attr_table::clone_node_attrs(&map);
        let refs = self.graph(g)?.user_refs.clone();
        for (&obj, &n) in &refs {
            self.retain_user(obj, n)?;
        }
        if let Some(c) = self.graphs.get_mut(&copy) {
            c.cloned_from = map;
            c.user_refs = refs;
        }
        Ok(copy)
    }

    /// Removes graph `g`, its nodes and their child graphs.
    pub(crate) fn destroy_graph(&mut self, g: u64) {
        let Some(graph) = self.graphs.remove(&g) else {
            return;
        };
        for (obj, n) in graph.user_refs {
            let _ = self.release_user(obj, n);
        }
        for n in graph.nodes {
            crate::core::attr_table::forget_node(n);
            match self.nodes.remove(&n) {
                Some(NodeObj {
                    kind: Kind::Child(child),
                    ..
                }) => self.destroy_graph(child),
                Some(NodeObj {
                    kind: Kind::MemAlloc { ptr, .. },
                    ..
                }) => self.drop_graph_mem(ptr),
                _ => {}
            }
        }
    }

    /// The nodes of `g` without dependencies.
    pub(crate) fn roots(&self, g: u64) -> Result<Vec<u64>> {
        Ok(self
            .graph(g)?
            .nodes
            .iter()
            .copied()
            .filter(|n| self.nodes.get(n).is_some_and(|x| x.deps.is_empty()))
            .collect())
    }

    /// The edges of `g` as `(from, to)`.
    pub(crate) fn edges(&self, g: u64) -> Result<Vec<(u64, u64)>> {
        let mut v = Vec::new();
        for &n in &self.graph(g)?.nodes {
            for &d in &self.node(n)?.deps {
                v.push((d, n));
            }
        }
        Ok(v)
    }

    /// The nodes that depend on `n`.
    pub(crate) fn dependents(&self, n: u64) -> Result<Vec<u64>> {
        let g = self.node(n)?.graph;
        Ok(self
            .graph(g)?
            .nodes
            .iter()
            .copied()
            .filter(|m| self.nodes.get(m).is_some_and(|x| x.deps.contains(&n)))
            .collect())
    }

    /// `tail` and every node they depend on, directly or not.
    pub(crate) fn ancestors(&self, tail: &[u64]) -> HashSet<u64> {
        let mut seen: HashSet<u64> = HashSet::new();
        let mut todo: Vec<u64> = tail.to_vec();
        while let Some(n) = todo.pop() {
            if seen.insert(n)
                && let Some(node) = self.nodes.get(&n)
            {
                todo.extend(&node.deps);
            }
        }
        seen
    }
}

pub(crate) static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Runs `f` on the registry. `f` must not call back into CUDA entry points (the lock is
/// held): replays copy what they need and run without it.
pub(crate) fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let (r, destructors) = {
        let mut g = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let reg = g.get_or_insert_with(Registry::default);
        let r = f(reg);
        let freed = std::mem::take(&mut reg.graph_mem.to_free);
        (r, (std::mem::take(&mut reg.destructors), freed))
    };
    crate::core::graph_state::run(destructors.0);
    crate::core::graph_state::free_released(destructors.1);
    r
}

/// Runs `f` on kernel node `node`'s kernel (`cudaErrorInvalidValue` for any other node).
pub(crate) fn with_kernel<R>(node: u64, f: impl FnOnce(&mut Kernel) -> R) -> Result<R> {
    with(|r| match r.node_mut(node).map(|n| &mut n.kind) {
        Ok(Kind::Kernel(k)) => Ok(f(k)),
        _ => Err(Error::INVALID_VALUE),
    })
}

/// Adds a child-graph node to `g` that takes graph `child` itself (`cudaGraphAddNode` with
/// `cudaGraphChildGraphOwnershipMove`): `child` must belong to nothing yet and must not be
/// `g` or hold `g`; graphs with memory nodes cannot be child graphs.
pub(crate) fn add_moved_child(g: u64, child: u64, deps: &[u64]) -> Result<u64> {
    with(|r| {
        r.graph(g)?;
        if child == g {
            return Err(Error::INVALID_VALUE);
        }
        // A graph a node already owns: NVIDIA's runtime answers cudaErrorNotSupported
        // (CUDA 13.0, measured).
        if r.graph(child)?.owner.is_some() {
            return Err(Error::NOT_SUPPORTED);
        }
        // `child` must not be among `g`'s ancestors (a cycle).
        let mut at = g;
        while let Some(node) = r.graph(at)?.owner {
            at = r.node(node)?.graph;
            if at == child {
                return Err(Error::INVALID_VALUE);
            }
        }
        if crate::core::graph::has_memory_nodes(r, child) {
            return Err(Error::NOT_SUPPORTED);
        }
        r.add(g, Kind::Child(child), deps)
    })
}

/// A new empty graph (for stream capture).
pub(crate) fn create() -> u64 {
    with(|r| r.new_graph(None))
}

/// Destroys a graph (a capture's, when the capture fails).
pub(crate) fn destroy(g: u64) {
    with(|r| r.destroy_graph(g));
}

/// Replaces a node's parameters, which must be of the same kind.
pub(crate) fn set_kind(node: cudaGraphNode_t, mut kind: Kind) -> Result<()> {
    with(|r| {
        let n = r.node_mut(node as u64)?;
        if n.kind.type_code() != kind.type_code() {
            return Err(Error::INVALID_VALUE);
        }
        kind.keep_attributes_of(&n.kind);
        n.kind = kind;
        Ok(())
    })
}

/// Reads a node's parameters.
pub(crate) fn get_kind<R>(node: cudaGraphNode_t, f: impl FnOnce(&Kind) -> Option<R>) -> Result<R> {
    with(|r| f(&r.node(node as u64)?.kind).ok_or(Error::INVALID_VALUE))
}

pub(crate) fn event(e: cudaEvent_t) -> Result<u64> {
    crate::core::handle::event_handle(client::client()?, e)
}

/// `cudaGraphDebugDotPrint`: graph `g` in Graphviz's DOT language, child graphs as
/// clusters; each node is labelled with its type and, for kernels, the function's name, its
/// grid and block, for copies and memsets their sizes.
pub(crate) fn dot(r: &Registry, g: u64, out: &mut String, depth: usize) -> Result<()> {
    use std::fmt::Write;
    let graph = r.graph(g)?;
    let pad = "  ".repeat(depth + 1);
    for &n in &graph.nodes {
        let node = r.node(n)?;
        let label = match &node.kind {
            Kind::Kernel(k) => {
                let name = crate::core::registry::function(k.func)
                    .map(|f| f.name.clone())
                    .or_else(|| k.name.clone())
                    .unwrap_or_else(|| format!("{:#x}", k.func));
                format!(
                    "KERNEL\\n{name}\\ngrid ({},{},{}) block ({},{},{}) shared {}",
                    k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.shmem
                )
            }
            Kind::Memcpy(c) => format!(
                "MEMCPY\\n{} x {} x {} bytes",
                c.extent[0], c.extent[1], c.extent[2]
            ),
            Kind::Memset(m) => format!(
                "MEMSET\\n{} x {} elements of {} bytes",
                m.width, m.height, m.elem
            ),
            Kind::Host(_) => "HOST".to_string(),
            Kind::Empty => "EMPTY".to_string(),
            Kind::EventRecord(_) => "EVENT_RECORD".to_string(),
            Kind::EventWait(_) => "EVENT_WAIT".to_string(),
            Kind::MemAlloc { size, .. } => format!("MEM_ALLOC\\n{size} bytes"),
            Kind::MemFree(_) => "MEM_FREE".to_string(),
            Kind::Child(c) => {
                let _ = writeln!(out, "{pad}subgraph cluster_{n} {{");
                let _ = writeln!(out, "{pad}  label=\"graph node {n}\";");
                dot(r, *c, out, depth + 1)?;
                let _ = writeln!(out, "{pad}}}");
                "GRAPH".to_string()
            }
        };
        let _ = writeln!(out, "{pad}n{n} [shape=box label=\"{label}\"];");
        for d in &node.deps {
            let _ = writeln!(out, "{pad}n{d} -> n{n};");
        }
    }
    Ok(())
}

/// `cudaGraphDebugDotPrint`: writes graph `g` to `path`.
pub(crate) fn dot_print(g: cudaGraph_t, path: &std::path::Path) -> Result<()> {
    let mut text = String::from("digraph cudaGraph {\n");
    with(|r| dot(r, g as u64, &mut text, 0))?;
    text.push_str("}\n");
    std::fs::write(path, text).map_err(|e| {
        log::warn!("cudaGraphDebugDotPrint: {}: {e}", path.display());
        Error(status::OPERATING_SYSTEM)
    })
}

/// `cudaErrorIllegalState`.
pub(crate) const ILLEGAL_STATE: Error = Error(status::ILLEGAL_STATE);

impl Registry {
    /// One more holder of graph allocation `ptr`.
    pub(crate) fn hold_graph_mem(&mut self, ptr: u64) {
        if let Some(e) = self.graph_mem.live.get_mut(&ptr) {
            e.holders = e.holders.saturating_add(1);
        }
    }

    /// One holder fewer; after the last one, memory a launch left allocated becomes the
    /// program's, other memory is kept for later graph allocations.
    pub(crate) fn drop_graph_mem(&mut self, ptr: u64) {
        let m = &mut self.graph_mem;
        if let Some(e) = m.live.get_mut(&ptr) {
            e.holders = e.holders.saturating_sub(1);
            if e.holders == 0 {
                let (bytes, outstanding) = (e.bytes, e.outstanding);
                m.live.remove(&ptr);
                m.used = m.used.saturating_sub(bytes);
                if outstanding {
                    m.reserved = m.reserved.saturating_sub(bytes);
                } else if m.cached.len() < MAX_CACHED {
                    m.cached.push((ptr, bytes));
                } else {
                    m.reserved = m.reserved.saturating_sub(bytes);
                    m.to_free.push(ptr);
                }
            }
        }
    }
}

impl Registry {
    /// Adds `count` references to user object `obj`.
    pub(crate) fn retain_user(&mut self, obj: u64, count: u32) -> Result<()> {
        let o = self
            .user_objects
            .get_mut(&obj)
            .ok_or(Error::INVALID_VALUE)?;
        o.refs = o.refs.checked_add(count).ok_or(Error::INVALID_VALUE)?;
        Ok(())
    }

    /// Drops `count` references to user object `obj`; the last one queues its destructor.
    pub(crate) fn release_user(&mut self, obj: u64, count: u32) -> Result<()> {
        let o = self
            .user_objects
            .get_mut(&obj)
            .ok_or(Error::INVALID_VALUE)?;
        if count > o.refs {
            return Err(Error::INVALID_VALUE);
        }
        o.refs -= count;
        if o.refs == 0
            && let Some(o) = self.user_objects.remove(&obj)
        {
            self.destructors.push(Destructor(o.destroy, o.ptr));
        }
        Ok(())
    }

    /// The references graph `g` and its child graphs own, added up, each retained once
    /// more: for an executable graph made from `g`.
    pub(crate) fn retain_graph_users(&mut self, g: u64) -> Result<HashMap<u64, u32>> {
        let mut all: HashMap<u64, u32> = HashMap::new();
        let mut todo = vec![g];
        while let Some(x) = todo.pop() {
            let graph = self.graph(x)?;
            for (&obj, &n) in &graph.user_refs {
                let e = all.entry(obj).or_default();
                *e = e.saturating_add(n);
            }
            for node in &graph.nodes {
                if let Ok(crate::core::graph::NodeObj {
                    kind: crate::core::graph::Kind::Child(c),
                    ..
                }) = self.node(*node)
                {
                    todo.push(*c);
                }
            }
        }
        for (&obj, &n) in &all {
            self.retain_user(obj, n)?;
        }
        Ok(all)
    }

    /// Releases references an executable graph held.
    pub(crate) fn release_users(&mut self, refs: HashMap<u64, u32>) {
        for (obj, n) in refs {
            let _ = self.release_user(obj, n);
        }
    }
}

/// Whether graph `g` or one of its child graphs has memory nodes.
pub(crate) fn has_memory_nodes(r: &Registry, g: u64) -> bool {
    r.graph(g).is_ok_and(|graph| {
        graph
            .nodes
            .iter()
            .any(|n| match r.node(*n).map(|x| &x.kind) {
                Ok(Kind::MemAlloc { .. } | Kind::MemFree(_)) => true,
                Ok(Kind::Child(c)) => has_memory_nodes(r, *c),
                _ => false,
            })
    })
}
