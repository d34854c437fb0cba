// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Driver API contexts, kept in the library over the process's one session: which context is
//! current on each thread, the primary context, and what each context owns (freed with it).
//! The driver's shims (`abi/driver/`) create, push and destroy them; every driver call that
//! needs a context asks [`current`].

use std::cell::Cell;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use crate::client;
use crate::error::CuError;

/// A context's handle: the address of a heap cell that lives as long as the context.
pub type CUcontext = *mut c_void;

/// What a context owns, freed with it.
#[derive(Default, Debug)]
pub struct Owned {
    /// Device allocations.
    pub allocs: Vec<u64>,
    /// Page-locked host allocations.
    pub host: Vec<usize>,
    /// Streams.
    pub streams: Vec<usize>,
    /// Events.
    pub events: Vec<usize>,
    /// Modules (`exec::Module` pointers).
    pub modules: Vec<usize>,
}

/// Called with (context, key, value) when a context holding a value in its local storage
/// is destroyed or reset.
pub use crate::core::callback::StorageDtor;

/// A value in a context's local storage, with what to call when the context goes.
#[derive(Clone, Copy, Debug)]
pub struct Stored {
    pub value: usize,
    pub dtor: Option<StorageDtor>,
}

#[derive(Debug, Default)]
pub(crate) struct Ctx {
    pub(crate) owned: Owned,
    pub(crate) flags: c_uint,
    /// Context-local storage (the static runtime keeps its per-context state here), by key.
    pub(crate) storage: FxHashMap<usize, Stored>,
}

/// The primary context's handle (never freed).
pub(crate) static PRIMARY: u8 = 0;

pub(crate) fn primary() -> usize {
    &raw const PRIMARY as usize
}

pub(crate) static CONTEXTS: Mutex<Option<FxHashMap<usize, Ctx>>> = Mutex::new(None);

thread_local! {
    /// The calling thread's current context: 0 when the thread never chose one (it then
    /// uses the primary context once the process has a session, as threads the runtime
    /// bound do), [`NONE`] when it made none current (`cuCtxSetCurrent(NULL)`, or popped the
    /// last one).
    pub(crate) static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// "No context is current on this thread", chosen by the thread (see [`CURRENT`]).
pub(crate) const NONE: usize = usize::MAX;

/// How many contexts have been destroyed: a context a thread found live stays live while
/// this has not moved.
static DESTROYED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The last context this thread found live, and [`DESTROYED`] before it looked: the
    /// static runtime asks for the current context on every call, and the answer then
    /// costs no lock.
    static LIVE: Cell<(usize, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Records that a context left the table (call after removing it).
pub(crate) fn destroyed() {
    DESTROYED.fetch_add(1, Ordering::Release);
}

pub(crate) fn with<R>(f: impl FnOnce(&mut FxHashMap<usize, Ctx>) -> R) -> R {
    let mut g = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(|| {
        let mut m = FxHashMap::default();
        m.insert(primary(), Ctx::default());
        m
    });
    f(map)
}

/// The calling thread's current context: the one it set, else the primary context once the
/// process has a session (the runtime makes the primary context current on the threads that
/// use it, so driver calls work after runtime calls, as in CUDA); 0 if none.
pub(crate) fn current_raw() -> usize {
    match CURRENT.get() {
        0 if client::connected().is_some() => primary(),
        NONE => 0,
        c => c,
    }
}

/// The current context, which must exist (`CUDA_ERROR_INVALID_CONTEXT` otherwise).
pub fn current() -> Result<usize, CuError> {
    if client::is_forked() {
        // CUDA_ERROR_NOT_INITIALIZED: a forked child has no CUDA of its own.
        return Err(CuError::NOT_INITIALIZED);
    }
    let c = current_raw();
    if is_context(c) {
        Ok(c)
    } else {
        Err(CuError::INVALID_CONTEXT)
    }
}

/// The context stream `s` belongs to: the context whose driver call created it, else (the
/// special streams, streams the runtime made, which use the primary context) the current
/// one.
pub fn stream_context(s: usize) -> Result<usize, CuError> {
    let c = current()?;
    Ok(with(|m| {
        m.iter()
            .find(|(_, ctx)| ctx.owned.streams.contains(&s))
            .map_or(c, |(&h, _)| h)
    }))
}

/// Whether `ctx` is a live context. The primary context always is; another is looked up
/// unless this thread found it live since the last destruction.
pub fn is_context(ctx: usize) -> bool {
    if ctx == 0 || ctx == NONE {
        return false;
    }
    if ctx == primary() {
        return true;
    }
    // Read before the lookup: a destruction after it moves the count past what is kept.
    let generation = DESTROYED.load(Ordering::Acquire);
    if LIVE.get() == (ctx, generation) {
        return true;
    }
    let live = with(|m| m.contains_key(&ctx));
    if live {
        LIVE.set((ctx, generation));
    }
    live
}

/// Records something the current context now owns.
pub fn own(f: impl FnOnce(&mut Owned)) -> Result<(), CuError> {
    let c = current()?;
    with(|m| m.get_mut(&c).map(|ctx| f(&mut ctx.owned))).ok_or(CuError::INVALID_CONTEXT)
}

/// Forgets something a context owned (it was freed explicitly).
pub fn disown(f: impl Fn(&mut Owned)) {
    with(|m| m.values_mut().for_each(|ctx| f(&mut ctx.owned)));
}

pub(crate) fn connected() -> Result<&'static client::Client, CuError> {
    client::client().map_err(|_| CuError::NO_DEVICE)
}

pub(crate) fn check_device(dev: c_int) -> Result<(), CuError> {
    let c = connected()?;
    if dev < 0 || dev >= c.device_count() {
        return Err(CuError::INVALID_DEVICE);
    }
    Ok(())
}

/// `ctx`, or the current context when it is null; it must be live.
fn resolve(ctx: usize) -> Result<usize, CuError> {
    let c = if ctx == 0 { current()? } else { ctx };
    if is_context(c) {
        Ok(c)
    } else {
        Err(CuError::INVALID_CONTEXT)
    }
}

/// Stores `value` under `key` in context `ctx` (0: the current one).
pub fn storage_put(ctx: usize, key: usize, stored: Stored) -> Result<(), CuError> {
    let c = resolve(ctx)?;
    with(|m| m.get_mut(&c).map(|x| x.storage.insert(key, stored)));
    Ok(())
}

/// The value under `key` in context `ctx` (0: the current one); `CUDA_ERROR_INVALID_HANDLE`
/// when there is none.
pub fn storage_get(ctx: usize, key: usize) -> Result<usize, CuError> {
    let c = resolve(ctx)?;
    with(|m| m.get(&c).and_then(|x| x.storage.get(&key)).map(|s| s.value))
        .ok_or(CuError::INVALID_HANDLE)
}

/// Removes `key` from context `ctx`'s storage (0: the current one), without calling its
/// destructor.
pub fn storage_delete(ctx: usize, key: usize) -> Result<(), CuError> {
    let c = resolve(ctx)?;
    with(|m| m.get_mut(&c).map(|x| x.storage.remove(&key)));
    Ok(())
}

/// Empties context `ctx`'s local storage (it is being destroyed or reset), calling each
/// value's destructor outside the contexts' lock (a destructor may call the driver) while
/// the context still works. `None` if `ctx` is not a context.
pub fn release_storage(ctx: usize) -> Option<()> {
    let storage = with(|m| m.get_mut(&ctx).map(|c| std::mem::take(&mut c.storage)))?;
    for (key, s) in storage {
        if let Some(d) = s.dtor {
            crate::core::callback::storage(
                d,
                ctx as CUcontext,
                key as *mut c_void,
                s.value as *mut c_void,
            );
        }
    }
    Some(())
}
