// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Owned driver objects: contexts, streams, events, modules, kernels, graphs and pinned
//! host buffers that free themselves on drop, so the rest of the executor needs no `unsafe` to
//! use them.
//!
//! (The guest's view of these objects, opaque `u64` handles, is `handles.rs`; this module
//! is the host side those handles map to.)
//!
//! # Liveness
//!
//! Everything made in a session's [`Context`] carries that context's `Life`. Destroying the
//! context (dropping it, or [`Context::destroy`]) ends the `Life` first and then destroys
//! the context, which frees everything in it. An object dropped after that makes no driver
//! call (its handle died with the context), and a method called on it answers
//! `CUDA_ERROR_CONTEXT_IS_DESTROYED` instead of passing a dead handle to the driver. A
//! session can therefore destroy its context and then simply drop (or clear) its tables,
//! which is how it always tore down: one `cuCtxDestroy`, no per-object calls. A [`Kernel`]
//! keeps its [`Module`] loaded (it holds an `Rc` of it).
//!
//! # Current context
//!
//! Objects are created in the current context, so the creating methods of [`Context`] make
//! it current first. [`Context::bind`] makes a session's context current and leaves it
//! so: every session call binds first, and unbinding after each would only add a driver
//! call per request. [`PrimaryContext::bind_scoped`] returns a [`Scoped`] guard that unbinds
//! the thread (makes no context current) when dropped, for the factory's short stints in
//! the primary context.
//!
//! # Failures while freeing
//!
//! `Drop` logs a failed destroy (`warn!`) and never panics. The explicit `destroy` and
//! `unload` methods return the driver's result instead, for callers that report it.
//!
//! # Threads
//!
//! These types hold raw driver handles and so are neither `Send` nor `Sync` on their own,
//! except [`PrimaryContext`]; the session that owns them vouches for moving them together
//! (see `CudaExecutor`'s `Send`).

use std::ffi::{CStr, c_uint, c_void};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::sys::{
    CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction,
    CUfunction_attribute, CUgraph, CUgraphExec, CUgraphNode, CUmodule, CUresult, CUstream,
};
use log::warn;

use super::driver::{self, DrvResult, Loaded};
use super::wait::{Wait, Waited};

/// Whether a context still exists; shared by the context and everything made in it.
#[derive(Debug, Clone)]
struct Life(Arc<AtomicBool>);

impl Life {
    fn new() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
    }

    /// `Ok` while the context exists.
    fn check(&self) -> DrvResult<()> {
        if self.0.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED)
        }
    }

    /// Takes a handle out of its owner for destruction: `Some` exactly once, while the
    /// handle was created and its context still exists (afterwards the slot is null, so a
    /// second release does nothing; a handle that died with its context is not destroyed).
    fn take<T>(&self, slot: &mut *mut T) -> Option<*mut T> {
        let raw = std::mem::replace(slot, std::ptr::null_mut());
        (!raw.is_null() && self.check().is_ok()).then_some(raw)
    }

    /// Marks the context destroyed (before it is).
    fn end(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A context this process created (`cuCtxCreate`), destroyed on drop with everything in it.
pub struct Context {
    /// Null once destroyed.
    raw: CUcontext,
    life: Life,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Context").field(&self.raw).finish()
    }
}

impl Context {
    /// Creates a context on `dev`; it is current on the calling thread afterwards.
    pub fn create(dev: CUdevice) -> DrvResult<Self> {
        Ok(Self {
            raw: driver::ctx_create(dev)?,
            life: Life::new(),
        })
    }

    /// The driver's handle (for libraries that run in the context, such as cuBLAS).
    pub fn raw(&self) -> CUcontext {
        self.raw
    }

    /// Makes the context current on the calling thread, where it stays after this returns.
    pub fn bind(&self) -> DrvResult<()> {
        // SAFETY: `raw` is live: it is destroyed only by `release`, which takes `&mut self`
        // (or `self`), so not while this borrow lasts.
        unsafe { driver::ctx_set_current(self.raw) }
    }

    /// Destroys the context and everything in it, returning the driver's result.
    pub fn destroy(mut self) -> DrvResult<()> {
        self.release()
    }

    /// Lets go of the context without destroying it: everything made in it stops using it
    /// now (its `Life` ends), and the context, its memory and its GPU time stay until the
    /// process exits. For a context whose work may never end: `cuCtxDestroy` waits for the
    /// context's kernels, forever for an endless one (H100, driver 580, measured), and no
    /// driver call stops a running kernel in a process that goes on.
    pub fn abandon(mut self) {
        if !std::mem::replace(&mut self.raw, std::ptr::null_mut()).is_null() {
            self.life.end();
            ABANDONED.store(true, Ordering::SeqCst);
        }
    }

    fn release(&mut self) -> DrvResult<()> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        if raw.is_null() {
            return Ok(());
        }
        self.life.end();
        if work_abandoned() {
            // Destroying it would wait for the abandoned work: left, as that context is.
            return Ok(());
        }
        // SAFETY: `raw` came from `ctx_create` and was not destroyed yet (it is nulled
        // above, so this runs once); the objects made in it check `life`, ended above, and
        // never use their handles again.
        unsafe { driver::ctx_destroy(raw) }
    }

    /// Creates a stream in this context (made current first).
    pub fn stream_create(&self, flags: c_uint, priority: i32) -> DrvResult<Stream> {
        self.bind()?;
        Ok(Stream {
            raw: driver::stream_create(flags, priority)?,
            life: self.life.clone(),
        })
    }

    /// Creates an event in this context (made current first).
    pub fn event_create(&self, flags: c_uint) -> DrvResult<Event> {
        self.bind()?;
        Ok(Event {
            raw: driver::event_create(flags)?,
            life: self.life.clone(),
        })
    }

    /// Opens the event another process exported as `handle` in this context (made current
    /// first).
    pub fn event_open_ipc(&self, handle: &[u8; 64]) -> DrvResult<Event> {
        self.bind()?;
        Ok(Event {
            raw: driver::ipc_open_event_handle(handle)?,
            life: self.life.clone(),
        })
    }

    /// Allocates `len` bytes of portable page-locked host memory in this context (made
    /// current first).
    pub fn host_alloc(&self, len: usize) -> DrvResult<HostBuffer> {
        self.bind()?;
        Ok(HostBuffer {
            ptr: driver::mem_host_alloc(len)?,
            len,
            life: self.life.clone(),
        })
    }

    /// Loads a module image into this context.
    ///
    /// # Safety
    ///
    /// This context is current on the calling thread ([`Context::bind`]), so the module
    /// lands in it and dies with it. As for [`driver::module_load_data`]: `image` points to
    /// a well-formed image ([`super::image::check`]), 8-byte aligned, alive and unchanged
    /// during the call.
    pub unsafe fn module_load(&self, image: *const u8) -> DrvResult<Module> {
        // SAFETY: the caller vouches for the image and for this context being current.
        let raw = unsafe { driver::module_load_data(image) }?;
        Ok(Module {
            raw,
            life: self.life.clone(),
        })
    }

    /// Links PTX units of relocatable device code and loads the result into this context.
    /// This context must be current ([`Context::bind`]) and `loaded.linker` true; each unit
    /// is NUL-terminated PTX.
    pub fn module_link_ptx(&self, loaded: &Loaded, units: &[&[u8]]) -> DrvResult<Module> {
        if !loaded.linker || units.iter().any(|u| u.last() != Some(&0)) {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        // SAFETY: the linker's entry points exist (checked above), the units are
        // NUL-terminated (checked above), and the caller made this context current.
        let raw = unsafe { driver::module_link_ptx(units) }?;
        Ok(Module {
            raw,
            life: self.life.clone(),
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            warn!("destroying a CUDA context: {}", driver::error_name(e));
        }
    }
}

/// Set once a context was abandoned ([`Context::abandon`]) with work that may still run.
static ABANDONED: AtomicBool = AtomicBool::new(false);

/// Whether this process abandoned a context whose work may still run. From then on no
/// context of the process is destroyed, nor the primary context released: NVIDIA's driver
/// makes `cuCtxDestroy` of any context, idle ones too, and `cuDevicePrimaryCtxRelease` wait
/// until another context's running kernels end (forever behind an endless kernel; H100,
/// driver 580, measured), while creating contexts and running work in them goes on. They
/// are left as the abandoned one is, until the process exits (a worker process ends with
/// its session; a backend serving sessions on threads warns, see `CudaExecutor::abandon`).
pub fn work_abandoned() -> bool {
    ABANDONED.load(Ordering::SeqCst)
}

/// The device's primary context, retained until drop.
#[derive(Debug)]
pub struct PrimaryContext {
    raw: CUcontext,
    dev: CUdevice,
}

// SAFETY: a context handle may be used from any thread (the driver serializes what it
// must), and releasing the retain is not tied to the retaining thread.
unsafe impl Send for PrimaryContext {}

impl PrimaryContext {
    /// Retains `dev`'s primary context.
    pub fn retain(dev: CUdevice) -> DrvResult<Self> {
        Ok(Self {
            raw: driver::primary_ctx_retain(dev)?,
            dev,
        })
    }

    /// Makes the context current until the guard drops, which unbinds the thread.
    pub fn bind_scoped(&self) -> DrvResult<Scoped<'_>> {
        // SAFETY: `raw` is retained until `self` drops, which the guard's borrow prevents.
        unsafe { driver::ctx_set_current(self.raw) }?;
        Ok(Scoped {
            _ctx: PhantomData,
            _thread: PhantomData,
        })
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        if work_abandoned() {
            // Releasing it would wait for the abandoned work (see `work_abandoned`).
            return;
        }
        // SAFETY: pairs with the one successful retain in `retain`; nothing uses `raw`
        // afterwards (`self` is going away, and no `Scoped` borrows it any more).
        if let Err(e) = unsafe { driver::primary_ctx_release(self.dev) } {
            warn!("releasing the primary context: {}", driver::error_name(e));
        }
    }
}

/// A context current on this thread until drop, which makes no context current.
///
/// Not `Send`: the binding belongs to the thread that made it.
#[derive(Debug)]
#[must_use = "the context is unbound when the guard drops"]
pub struct Scoped<'c> {
    _ctx: PhantomData<&'c PrimaryContext>,
    _thread: PhantomData<*const ()>,
}

impl Drop for Scoped<'_> {
    fn drop(&mut self) {
        // SAFETY: a null context unbinds the thread; it names no object.
        let _ = unsafe { driver::ctx_set_current(std::ptr::null_mut()) };
    }
}

/// A stream created in a [`Context`], destroyed on drop (its pending work still completes).
#[derive(Debug)]
pub struct Stream {
    /// Null once destroyed.
    raw: CUstream,
    life: Life,
}

impl Stream {
    /// Destroys the stream, returning the driver's result.
    pub fn destroy(mut self) -> DrvResult<()> {
        self.release()
    }

    fn release(&mut self) -> DrvResult<()> {
        let Some(raw) = self.life.take(&mut self.raw) else {
            return Ok(());
        };
        // SAFETY: `raw` came from `stream_create` in a context that still exists (`life`),
        // and is destroyed once (nulled above).
        unsafe { driver::stream_destroy(raw) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            warn!("destroying a CUDA stream: {}", driver::error_name(e));
        }
    }
}

/// A stream to issue work on: one of ours, or the legacy default stream (null) of the
/// current context.
#[derive(Debug, Clone, Copy)]
pub enum StreamRef<'a> {
    /// The legacy default stream of whichever context is current.
    Legacy,
    /// A stream the session created.
    Created(&'a Stream),
}

impl StreamRef<'_> {
    /// The driver's handle (null for the legacy stream), for calls that take it
    /// alongside other pointers (copies, launches, cuBLAS). It stays valid while this
    /// borrow lasts and the stream's context exists.
    pub fn raw(self) -> CUstream {
        match self {
            Self::Legacy => std::ptr::null_mut(),
            Self::Created(s) => s.raw,
        }
    }

    /// `Ok` while the handle may be passed to the driver.
    fn check(self) -> DrvResult<()> {
        match self {
            Self::Legacy => Ok(()),
            Self::Created(s) => s.life.check(),
        }
    }

    /// Waits for the stream's work, polling (see `wait`).
    pub fn synchronize(self, wait: &Wait) -> Result<(), Waited> {
        wait.until(|| self.query())
    }

    /// `Ok` when the stream is idle, `Err(CUDA_ERROR_NOT_READY)` while work is pending.
    pub fn query(self) -> DrvResult<()> {
        self.check()?;
        // SAFETY: a stream whose context exists (checked) and which the borrow keeps from
        // being destroyed, or null (the current context's legacy stream).
        unsafe { driver::stream_query(self.raw()) }
    }

    /// Makes the stream's later work wait for `event`.
    pub fn wait_event(self, event: &Event, flags: c_uint) -> DrvResult<()> {
        self.check()?;
        event.life.check()?;
        // SAFETY: the stream is live or null, as for `query`; the event's context
        // exists (checked) and the borrow keeps the event from being destroyed.
        unsafe { driver::stream_wait_event(self.raw(), event.raw, flags) }
    }
}

/// An event created in a [`Context`], destroyed on drop.
#[derive(Debug)]
pub struct Event {
    /// Null once destroyed.
    raw: CUevent,
    life: Life,
}

impl Event {
    /// Destroys the event, returning the driver's result.
    pub fn destroy(mut self) -> DrvResult<()> {
        self.release()
    }

    fn release(&mut self) -> DrvResult<()> {
        let Some(raw) = self.life.take(&mut self.raw) else {
            return Ok(());
        };
        // SAFETY: `raw` came from `event_create` in a context that still exists, and is
        // destroyed once (nulled above).
        unsafe { driver::event_destroy(raw) }
    }

    /// The driver's handle (for calls that only read it).
    pub fn raw(&self) -> CUevent {
        self.raw
    }

    /// Records the event on `stream`.
    pub fn record(&self, stream: StreamRef<'_>, flags: c_uint) -> DrvResult<()> {
        self.life.check()?;
        stream.check()?;
        // SAFETY: the event's context exists (checked) and `&self` keeps the event alive;
        // the stream is live (checked, borrowed) or null.
        unsafe { driver::event_record(self.raw, stream.raw(), flags) }
    }

    /// Waits for the event, polling (see `wait`).
    pub fn synchronize(&self, wait: &Wait) -> Result<(), Waited> {
        wait.until(|| self.query())
    }

    /// `Ok` when the event completed, `Err(CUDA_ERROR_NOT_READY)` otherwise.
    pub fn query(&self) -> DrvResult<()> {
        self.life.check()?;
        // SAFETY: the event's context exists (checked) and `&self` keeps the event alive.
        unsafe { driver::event_query(self.raw) }
    }

    /// Milliseconds from this event to `end`.
    pub fn elapsed(&self, end: &Event) -> DrvResult<f32> {
        self.life.check()?;
        end.life.check()?;
        // SAFETY: both events' contexts exist (checked) and the borrows keep both alive.
        unsafe { driver::event_elapsed(self.raw, end.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            warn!("destroying a CUDA event: {}", driver::error_name(e));
        }
    }
}

/// Page-locked host memory allocated in a [`Context`], freed on drop.
#[derive(Debug)]
pub struct HostBuffer {
    /// Null once freed.
    ptr: *mut u8,
    len: usize,
    life: Life,
}

impl HostBuffer {
    /// Start of the buffer, valid for [`HostBuffer::size`] bytes while `self` lives.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Bytes in the buffer.
    pub fn size(&self) -> usize {
        self.len
    }

    fn release(&mut self) -> DrvResult<()> {
        let Some(ptr) = self.life.take(&mut self.ptr) else {
            return Ok(());
        };
        // SAFETY: `ptr` came from `mem_host_alloc` in a context that still exists and is
        // freed once (nulled above). No copy uses it any more: the owner waits for the DMAs
        // that use a buffer before dropping it (`staging::Pool::release`).
        unsafe { driver::mem_free_host(ptr) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            warn!("freeing pinned host memory: {}", driver::error_name(e));
        }
    }
}

/// A module loaded into a [`Context`], unloaded on drop (when no [`Kernel`] holds it any
/// more).
#[derive(Debug)]
pub struct Module {
    /// Null once unloaded.
    raw: CUmodule,
    life: Life,
}

impl Module {
    /// Unloads the module, returning the driver's result.
    pub fn unload(mut self) -> DrvResult<()> {
        self.release()
    }

    fn release(&mut self) -> DrvResult<()> {
        let Some(raw) = self.life.take(&mut self.raw) else {
            return Ok(());
        };
        // SAFETY: `raw` came from `module_load_data` in a context that still exists and is
        // unloaded once (nulled above). Its kernels hold an `Rc` of the module, so none is
        // left when this runs.
        unsafe { driver::module_unload(raw) }
    }

    /// A kernel by mangled name; it keeps the module loaded.
    pub fn function(self: &Rc<Self>, name: &CStr) -> DrvResult<Kernel> {
        self.life.check()?;
        // SAFETY: the module's context exists (checked) and the borrow keeps the module
        // loaded.
        let raw = unsafe { driver::module_get_function(self.raw, name) }?;
        Ok(Kernel {
            raw,
            module: Rc::clone(self),
        })
    }

    /// The mangled names of its kernels.
    pub fn function_names(&self) -> DrvResult<Vec<String>> {
        self.life.check()?;
        // SAFETY: the module's context exists (checked) and the borrow keeps the module
        // loaded.
        unsafe { driver::module_function_names(self.raw) }
    }

    /// A module variable by mangled name: `(address, size)`.
    pub fn global(&self, name: &CStr) -> DrvResult<(CUdeviceptr, usize)> {
        self.life.check()?;
        // SAFETY: the module's context exists (checked) and the borrow keeps the module
        // loaded.
        unsafe { driver::module_get_global(self.raw, name) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            warn!("unloading a CUDA module: {}", driver::error_name(e));
        }
    }
}

/// A kernel of a loaded [`Module`] (which it keeps loaded). Kernels are not destroyed on
/// their own: they go with their module.
#[derive(Debug)]
pub struct Kernel {
    raw: CUfunction,
    module: Rc<Module>,
}

impl Kernel {
    /// `Ok` while the kernel's module is loaded in a live context.
    fn check(&self) -> DrvResult<()> {
        self.module.life.check()
    }

    /// One attribute.
    pub fn attribute(&self, a: CUfunction_attribute) -> DrvResult<i32> {
        self.check()?;
        // SAFETY: the module's context exists (checked) and `self.module` keeps the module,
        // and so this function, loaded.
        unsafe { driver::func_get_attribute(self.raw, a) }
    }

    /// Sets an attribute.
    pub fn set_attribute(&self, a: CUfunction_attribute, v: i32) -> DrvResult<()> {
        self.check()?;
        // SAFETY: a live function, as for `attribute`.
        unsafe { driver::func_set_attribute(self.raw, a, v) }
    }

    /// The driver's cluster occupancy of a launch configuration (`size`: the largest
    /// cluster, else how many clusters fit at once); `cluster` `None`: the kernel's shape.
    pub fn occupancy_cluster(
        &self,
        cfg: ([u32; 3], [u32; 3], u32),
        cluster: Option<[u32; 3]>,
        size: bool,
    ) -> DrvResult<i32> {
        self.check()?;
        // SAFETY: a live function, as for `attribute`.
        unsafe { driver::occupancy_cluster(self.raw, cfg, cluster, size) }
    }

    /// `(offset, size)` of parameter `index`; `Err(CUDA_ERROR_INVALID_VALUE)` past the last,
    /// `Err(CUDA_ERROR_NOT_SUPPORTED)` when the driver lacks `cuFuncGetParamInfo`.
    pub fn param_info(&self, loaded: &Loaded, index: usize) -> DrvResult<(usize, usize)> {
        if !loaded.param_info {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        self.check()?;
        // SAFETY: a live function, as for `attribute`; `load` found the entry point.
        unsafe { driver::func_param_info(self.raw, index) }
    }

    /// Launches the kernel on `stream`.
    ///
    /// # Safety
    ///
    /// As for [`driver::launch_kernel`]: `params` (if not null) holds one pointer per
    /// kernel parameter, each readable for that parameter's size; `extra` (if not null) is
    /// a `CU_LAUNCH_PARAM_END`-terminated list whose buffer is readable for its stated
    /// size; exactly one of the two is non-null unless the kernel has no parameters. The
    /// kernel's context is current.
    pub unsafe fn launch(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: StreamRef<'_>,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> DrvResult<()> {
        self.check()?;
        stream.check()?;
        // SAFETY: the function and stream are live (checked, and borrowed; the legacy
        // stream is null); the caller vouches for `params` and `extra`.
        unsafe { driver::launch_kernel(self.raw, grid, block, shared, stream.raw(), params, extra) }
    }

    /// Launches this kernel in thread-block clusters of `cluster` blocks.
    ///
    /// # Safety
    ///
    /// As [`Kernel::launch`].
    pub unsafe fn launch_cluster(
        &self,
        loaded: &Loaded,
        cfg: ([u32; 3], [u32; 3], u32),
        cluster: [u32; 3],
        stream: StreamRef<'_>,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> DrvResult<()> {
        if !loaded.clusters {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        self.check()?;
        stream.check()?;
        // SAFETY: the function and stream are live (checked, and borrowed); the entry point
        // exists (checked above); the caller vouches for `params` and `extra`.
        unsafe {
            driver::launch_kernel_cluster(self.raw, cfg, cluster, stream.raw(), params, extra)
        }
    }

    /// Launches this kernel cooperatively (`params` only, no `extra` list).
    ///
    /// # Safety
    ///
    /// As [`Kernel::launch`] with `extra` null.
    pub unsafe fn launch_cooperative(
        &self,
        loaded: &Loaded,
        cfg: ([u32; 3], [u32; 3], u32),
        stream: StreamRef<'_>,
        params: *mut *mut c_void,
    ) -> DrvResult<()> {
        if !loaded.cooperative {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        self.check()?;
        stream.check()?;
        let (grid, block, shared) = cfg;
        // SAFETY: the function and stream are live (checked, and borrowed); the entry point
        // exists (checked above); the caller vouches for `params`.
        unsafe {
            driver::launch_cooperative_kernel(self.raw, grid, block, shared, stream.raw(), params)
        }
    }
}

/// A CUDA graph made in a [`Context`] and instantiated (see [`GraphBuilder`]); both are
/// destroyed on drop (launches already made still run). It keeps its kernels' modules
/// loaded.
pub struct Graph {
    graph: CUgraph,
    exec: CUgraphExec,
    life: Life,
    _modules: Vec<Rc<Module>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Graph").field(&self.exec).finish()
    }
}

impl Graph {
    /// Launches the graph on `stream`.
    pub fn launch(&self, stream: StreamRef<'_>) -> DrvResult<()> {
        self.life.check()?;
        stream.check()?;
        // SAFETY: the executable graph is live (its context exists, checked; destroyed
        // only on drop); the stream is live (checked, borrowed) or null.
        unsafe { driver::graph_launch(self.exec, stream.raw()) }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Some(e) = self.life.take(&mut self.exec) {
            // SAFETY: made by `graph_instantiate` in a context that still exists, destroyed
            // once (nulled by `take`).
            if let Err(r) = unsafe { driver::graph_exec_destroy(e) } {
                warn!("destroying a CUDA graph: {}", driver::error_name(r));
            }
        }
        if let Some(g) = self.life.take(&mut self.graph) {
            // SAFETY: as above, for the graph it was instantiated from.
            let _ = unsafe { driver::graph_destroy(g) };
        }
    }
}

/// Builds a [`Graph`] in a context, node by node, each after nodes added before it.
pub struct GraphBuilder<'c> {
    ctx: &'c Context,
    /// Null once finished.
    graph: CUgraph,
    nodes: Vec<CUgraphNode>,
    modules: Vec<Rc<Module>>,
}

impl Context {
    /// Starts a graph in this context (made current first; it must stay current while the
    /// builder is used).
    pub fn graph_builder(&self, loaded: &Loaded) -> DrvResult<GraphBuilder<'_>> {
        if !loaded.graphs {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        self.bind()?;
        Ok(GraphBuilder {
            ctx: self,
            graph: driver::graph_create()?,
            nodes: Vec::new(),
            modules: Vec::new(),
        })
    }
}

impl GraphBuilder<'_> {
    /// Adds a node after the nodes numbered `deps` (each added before).
    ///
    /// # Safety
    ///
    /// The context is current. A copy's or memset's device ranges are memory of the
    /// context.
    unsafe fn add(&mut self, deps: &[u32], work: driver::GraphWork<'_>) -> DrvResult<()> {
        self.ctx.life.check()?;
        let deps = deps
            .iter()
            .map(|&d| self.nodes.get(d as usize).copied())
            .collect::<Option<Vec<_>>>()
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: the graph is live (null only once finished, which takes `self`), `deps`
        // are its nodes, the context is live (checked) and current (the caller); the work
        // is as the caller and `kernel` guarantee.
        let n = unsafe { driver::graph_add_node(self.graph, &deps, self.ctx.raw, work) }?;
        self.nodes.push(n);
        Ok(())
    }

    /// Adds a node that does nothing.
    ///
    /// # Safety
    ///
    /// The context is current.
    pub unsafe fn empty(&mut self, deps: &[u32]) -> DrvResult<()> {
        // SAFETY: the caller's guarantee; no memory involved.
        unsafe { self.add(deps, driver::GraphWork::Empty) }
    }

    /// Adds a launch of `kernel`; the graph keeps its module loaded.
    ///
    /// # Safety
    ///
    /// The context is current; `kernel` was loaded in it; `params` and `extra` are as
    /// [`Kernel::launch`] requires (the driver copies the parameters).
    pub unsafe fn kernel(
        &mut self,
        deps: &[u32],
        kernel: &Kernel,
        (grid, block, shared): ([u32; 3], [u32; 3], u32),
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> DrvResult<()> {
        kernel.check()?;
        let p = cudarc::driver::sys::CUDA_KERNEL_NODE_PARAMS {
            func: kernel.raw,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: shared,
            kernelParams: params,
            extra,
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: a live function (checked) of this context; the caller vouches for the
        // parameters and for the context being current.
        unsafe { self.add(deps, driver::GraphWork::Kernel(&p)) }?;
        if !self.modules.iter().any(|m| Rc::ptr_eq(m, &kernel.module)) {
            self.modules.push(Rc::clone(&kernel.module));
        }
        Ok(())
    }

    /// Adds a copy between device memory of the context.
    ///
    /// # Safety
    ///
    /// The context is current; both ends of `p` are device memory of it.
    pub unsafe fn copy(&mut self, deps: &[u32], p: &CUDA_MEMCPY3D) -> DrvResult<()> {
        // SAFETY: the caller's guarantee.
        unsafe { self.add(deps, driver::GraphWork::Copy(p)) }
    }

    /// Adds a memset of device memory of the context.
    ///
    /// # Safety
    ///
    /// The context is current; `p`'s rows are device memory of it.
    pub unsafe fn memset(&mut self, deps: &[u32], p: &CUDA_MEMSET_NODE_PARAMS) -> DrvResult<()> {
        // SAFETY: the caller's guarantee.
        unsafe { self.add(deps, driver::GraphWork::Memset(p)) }
    }

    /// Instantiates the graph.
    pub fn finish(mut self) -> DrvResult<Graph> {
        self.ctx.life.check()?;
        // SAFETY: a live graph of this context, which the builder's user keeps current.
        let exec = unsafe { driver::graph_instantiate(self.graph) }?;
        Ok(Graph {
            graph: std::mem::replace(&mut self.graph, std::ptr::null_mut()),
            exec,
            life: self.ctx.life.clone(),
            _modules: std::mem::take(&mut self.modules),
        })
    }
}

impl Drop for GraphBuilder<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.ctx.life.take(&mut self.graph) {
            // SAFETY: made by `graph_create` in a context that still exists, never
            // instantiated into a `Graph` (that nulls it), destroyed once.
            let _ = unsafe { driver::graph_destroy(g) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects whose context is gone make no driver call: dropping one is a no-op (no
    /// driver is loaded in this test, so a call would panic in cudarc) and methods answer
    /// an error.
    #[test]
    fn objects_of_a_destroyed_context_make_no_driver_call() {
        let life = Life::new();
        let fake = std::ptr::without_provenance_mut(0x1000);
        let stream = Stream {
            raw: fake,
            life: life.clone(),
        };
        let event = Event {
            raw: fake.cast(),
            life: life.clone(),
        };
        let module = Rc::new(Module {
            raw: fake.cast(),
            life: life.clone(),
        });
        let host = HostBuffer {
            ptr: fake.cast(),
            len: 1,
            life: life.clone(),
        };
        life.end();
        let gone = Err(CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED);
        let waited = StreamRef::Created(&stream).synchronize(&Wait::default());
        assert_eq!(
            waited,
            Err(Waited::Failed(CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED))
        );
        assert_eq!(event.query(), gone);
        assert_eq!(module.global(c"x").map(drop), gone);
        assert_eq!(module.function(c"k").map(drop), gone);
        drop((stream, event, host));
        assert_eq!(Rc::into_inner(module).map(Module::unload), Some(Ok(())));
    }
}
