// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Warm contexts: a CUDA context made before a session asks for one, so that a new
//! session (a small program's whole run) does not wait for `cuCtxCreate`, which takes tens
//! to hundreds of milliseconds on a GPU.
//!
//! The context the factory makes at start to check the device becomes the first warm one
//! (`--warm-context first`, what `vcuda run`'s private backend uses: its one program's
//! session finds the context made while the program was starting). With `always` (a shared
//! backend's default), taking the warm context starts making the next one on a thread of its
//! own, so every session finds one unless sessions arrive faster than contexts are made;
//! a session that finds one being made waits for it rather than making a second. A warm
//! context holds the device memory any context holds (about 500 MiB on an H100) until a
//! session takes it or the backend exits. Worker processes (`--isolation process`) serve
//! one session each: with `always` the backend keeps a worker started ahead of the next
//! connection instead (`crate::worker`), which makes its one session's context (`first`)
//! before that connection comes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::sys::CUdevice;
use log::{debug, warn};

use super::config::WarmMode;
use super::driver::{self, DrvResult};
use super::owned::Context;

/// A context current on no thread, waiting for a session.
struct Spare(Context);

// SAFETY: a CUDA context is not tied to a thread: any thread may make it current
// (`cuCtxSetCurrent`). A spare is current on none (unbound when it was made) and nothing
// else holds it, so moving it to the session's thread is sound.
unsafe impl Send for Spare {}

#[derive(Default)]
struct State {
    ready: Option<Spare>,
    making: bool,
}

/// The warm context of one factory.
pub(super) struct Warm {
    mode: WarmMode,
    state: Mutex<State>,
    made: Condvar,
    /// Sessions that found a warm context.
    hits: AtomicU64,
}

impl std::fmt::Debug for Warm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warm")
            .field("mode", &self.mode)
            .field("hits", &self.hits())
            .finish()
    }
}

impl Warm {
    pub(super) fn new(mode: WarmMode) -> Self {
        Self {
            mode,
            state: Mutex::default(),
            made: Condvar::new(),
            hits: AtomicU64::new(0),
        }
    }

    /// Whether a context made at start should be kept for the first session.
    pub(super) fn keeps_first(&self) -> bool {
        self.mode != WarmMode::Off
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `ctx` (current on the calling thread) for the next session.
    pub(super) fn offer(&self, ctx: Context) {
        unbind();
        self.lock().ready = Some(Spare(ctx));
        self.made.notify_all();
    }

    /// Sessions that found a warm context.
    pub(super) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// A context for a new session: the warm one (waiting for it if it is being made), or
    /// a new one. With [`WarmMode::Always`] the next one is started.
    pub(super) fn take(self: &Arc<Self>, device: CUdevice) -> DrvResult<Context> {
        let warm = self;
        if warm.mode == WarmMode::Off {
            return Context::create(device);
        }
        let mut st = warm.lock();
        while st.ready.is_none() && st.making {
            st = warm.made.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let found = st.ready.take();
        drop(st);
        if warm.mode == WarmMode::Always {
            warm.refill(device);
        }
        match found {
            Some(Spare(ctx)) => {
                warm.hits.fetch_add(1, Ordering::Relaxed);
                debug!("session takes a warm context");
                ctx.bind()?;
                Ok(ctx)
            }
            None => Context::create(device),
        }
    }

    /// Starts making the next warm context unless one is ready or being made.
    fn refill(self: &Arc<Self>, device: CUdevice) {
        let warm = self;
        {
            let mut st = warm.lock();
            if st.ready.is_some() || st.making {
                return;
            }
            st.making = true;
        }
        let s = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("vcuda-warm-ctx".into())
            .spawn(move || {
                let made = Context::create(device);
                let mut st = s.lock();
                st.making = false;
                match made {
                    Ok(ctx) => {
                        unbind();
                        st.ready = Some(Spare(ctx));
                    }
                    Err(e) => warn!("cannot make a warm context: {}", driver::error_name(e)),
                }
                drop(st);
                s.made.notify_all();
            });
        if let Err(e) = spawned {
            warn!("cannot start making a warm context: {e}");
            warm.lock().making = false;
            warm.made.notify_all();
        }
    }
}

/// Leaves the calling thread with no current context.
fn unbind() {
    // SAFETY: null unbinds; it names no context.
    let _ = unsafe { driver::ctx_set_current(std::ptr::null_mut()) };
}
