// SPDX-License-Identifier: GPL-2.0
//! The vcuda virtio device: its request queues, the requests in flight on them, and the
//! sessions (one per open file) that requests belong to.
//!
//! # Who owns what, and when
//!
//! - A [`Request`] is reference counted. While its descriptor chain is on a virtqueue, the
//!   *ring* owns one reference: the chain's token is `Arc::into_raw` of it.
//! - The submitting thread owns another and sleeps (killable only) until the request leaves
//!   the `PENDING` state. The interrupt handler moves it to `DONE` with one compare-exchange;
//!   the thread then takes the ring's reference back and drops both in process context.
//! - A thread that is killed while waiting moves the request from `PENDING` to `ABANDONED`
//!   instead, and leaves. The interrupt handler sees `ABANDONED` when the device finally
//!   returns the chain and hands the ring's reference to this device's workqueue, which drops
//!   it in process context. Exactly one of the two compare-exchanges wins, so each reference
//!   is released exactly once; the pinned pages stay pinned, and every kernel buffer of the
//!   chain stays allocated, until the device has returned it.
//! - Dropping a request unpins its user pages (marking the device-written ones dirty) and frees
//!   its kernel buffers. That never happens in interrupt context.
//! - A [`Session`] is owned by its open file and by each request of it; when the last of them
//!   goes, a `CloseSession` chain is posted, so the device sees the close after every chain of
//!   the session, whichever queues they used. Its `OpenSession` chain is owned like a request
//!   whose waiter is the session (see [`Session`]).
//! - [`VDev::remove`] lets chains drain (briefly), closes the rings to new chains, resets the
//!   device (after which no callback runs and no chain is taken), completes what the device
//!   returned, detaches the rest (their waiters get `ENODEV`), and destroys the workqueue,
//!   dropping every abandoned request. A detached chain is never freed: a call still running
//!   on the host at the reset goes on, and writes its in segments (DEVICE.md, "Reset"), and
//!   a device might write its reply area too when it returns (vcuda's backend no longer
//!   does); the driver cannot tell which chains the device took, so every buffer of a
//!   detached chain stays allocated and its pages stay pinned (a counted leak). Freeing them
//!   let a late reply land in whatever the kernel put there next.

use core::{cell::UnsafeCell, mem::size_of, ptr};

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong, c_void},
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        Arc,
    },
    uaccess::{UserPtr, UserSlice},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

use crate::{
    abi::{
        ChainHeader, VcudaSeg, VcudaSubmit, VirtioCudaConfig, CHAIN_OP_CLOSE_SESSION,
        CHAIN_OP_OPEN_SESSION, CHAIN_OP_SUBMIT, CONFIG_MAGIC, MAX_REQUEST_QUEUES,
        MIN_REPLY_CAPACITY, PROTOCOL_VERSION, RECORD_HEADER_LEN, RECORD_STATUS_OFFSET,
        REPLY_HEADER_CTRL_LEN_OFFSET, REPLY_HEADER_LEN, REPLY_HEADER_MAGIC_OFFSET,
        REPLY_HEADER_N_RECORDS_OFFSET, REPLY_MAGIC, SEG_IN, SEG_OUT, STATUS_MEMORY_ALLOCATION,
        VCUDA_MAX_SEGS,
    },
    sys::{self, Chunk, IrqSpinLock, WaitQueue},
};

/// Largest message the module accepts, whatever the device offers.
const MAX_CTRL_LEN_CAP: u32 = 16 << 20;
/// Largest out- or in-data area of one call, whatever the device offers.
const MAX_DATA_LEN_CAP: u64 = 1 << 30;
/// Largest reply area the module allocates.
const MAX_REPLY_AREA: usize = 4 << 20;
/// Longest scatter-gather entry (merged contiguous pages).
const MAX_SG_ENTRY: u64 = 1 << 30;
/// How long removal lets chains in flight finish before it resets the device.
const REMOVE_DRAIN_MS: u32 = 2000;

/// The chain is on the ring and a thread waits for it.
const PENDING: u32 = 0;
/// The device returned the chain.
const DONE: u32 = 1;
/// The device was removed before it returned the chain; the ring's reference stays with the
/// removal path (`finish`), which keeps it forever, not the waiter.
const DETACHED: u32 = 2;
/// Nobody waits: the ring's reference is dropped by the workqueue once the device returns it.
const ABANDONED: u32 = 3;

/// The limits in force for a device: its configuration, capped by the module's own bounds.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) queues: u32,
    pub(crate) max_desc: u32,
    pub(crate) max_ctrl: u32,
    pub(crate) max_data: u64,
}

/// One request virtqueue.
#[pin_data]
pub(crate) struct Queue {
    #[pin]
    ring: IrqSpinLock<Ring>,
    /// Threads waiting for a completion or for ring space.
    #[pin]
    wait: WaitQueue,
    /// Chains completed so far (lets a thread waiting for ring space see progress).
    completions: Atomic<u64>,
}

/// The virtqueue; only touched under the queue lock.
struct Ring {
    /// Null once the device is removed (after the reset and the detach).
    vq: *mut bindings::virtqueue,
    /// Set by `remove` before the reset: no chain is added any more (every chain on the ring
    /// was made available before the reset, so the device may have taken it).
    closed: bool,
    /// Chains on the ring.
    in_flight: usize,
}

// SAFETY: The virtqueue may be used from any CPU; the lock serialises every use.
unsafe impl Send for Ring {}

impl Queue {
    fn new(vq: *mut bindings::virtqueue) -> impl PinInit<Self> {
        pin_init!(Self {
            ring <- IrqSpinLock::new(
                Ring { vq, closed: false, in_flight: 0 },
                c"vcuda_ring",
                kernel::static_lock_class!(),
            ),
            wait <- WaitQueue::new(c"vcuda_wait", kernel::static_lock_class!()),
            completions: Atomic::new(0),
        })
    }

    fn in_flight(&self) -> usize {
        self.ring.lock().in_flight
    }
}

/// A bound vcuda device.
pub(crate) struct VDev {
    vdev: *mut bindings::virtio_device,
    /// The configuration read at probe time.
    pub(crate) config: VirtioCudaConfig,
    pub(crate) limits: Limits,
    indirect: bool,
    queues: KVec<Pin<KBox<Queue>>>,
    next_session: Atomic<u64>,
    /// Reaps abandoned requests; null after removal.
    wq: Atomic<*mut bindings::workqueue_struct>,
    /// Chains kept forever at removal (detached: see `finish`).
    kept: Atomic<u64>,
}

// SAFETY: `vdev` is only dereferenced in probe/remove (serialised by the driver core); the
// queues synchronise themselves; the rest is immutable or atomic.
unsafe impl Send for VDev {}
// SAFETY: As above.
unsafe impl Sync for VDev {}

impl VDev {
    /// Reads the configuration, sets up the queues and makes the device ready.
    pub(crate) fn probe(vdev: *mut bindings::virtio_device) -> Result<Arc<VDev>> {
        let config = read_config(vdev);
        if config.magic != CONFIG_MAGIC || config.protocol_version != PROTOCOL_VERSION {
            pr_warn!(
                "unsupported device (magic {:#x}, protocol version {}; want {:#x}, {})\n",
                config.magic,
                config.protocol_version,
                CONFIG_MAGIC,
                PROTOCOL_VERSION
            );
            return Err(ENODEV);
        }
        let queues = config.num_request_queues;
        if queues == 0 || queues > MAX_REQUEST_QUEUES || config.max_chain_descriptors < 3 {
            pr_warn!(
                "bad device configuration ({} queues, {} descriptors)\n",
                queues,
                config.max_chain_descriptors
            );
            return Err(ENODEV);
        }
        let limits = Limits {
            queues,
            max_desc: config.max_chain_descriptors,
            max_ctrl: config.max_ctrl_len.min(MAX_CTRL_LEN_CAP),
            max_data: config.max_data_len.min(MAX_DATA_LEN_CAP),
        };
        // SAFETY: `vdev` is the device being probed.
        let indirect =
            unsafe { sys::vcuda_glue_has_feature(vdev, bindings::VIRTIO_RING_F_INDIRECT_DESC) };

        // SAFETY: No preconditions.
        let wq = unsafe { sys::vcuda_glue_alloc_wq() };
        if wq.is_null() {
            return Err(ENOMEM);
        }
        let mut vqs = [ptr::null_mut(); MAX_REQUEST_QUEUES as usize];
        // SAFETY: `vdev` is the device being probed; `vqs` has room for `queues` entries.
        let err = unsafe { sys::vcuda_glue_find_vqs(vdev, queues, vqs.as_mut_ptr()) };
        if err != 0 {
            // SAFETY: `wq` was allocated above and is unused.
            unsafe { bindings::destroy_workqueue(wq) };
            return Err(Error::from_errno(err));
        }
        let built = (|| -> Result<Arc<VDev>> {
            let mut qs = KVec::with_capacity(queues as usize, GFP_KERNEL)?;
            for vq in &vqs[..queues as usize] {
                qs.push(KBox::pin_init(Queue::new(*vq), GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok(Arc::new(
                VDev {
                    vdev,
                    config,
                    limits,
                    indirect,
                    queues: qs,
                    next_session: Atomic::new(1),
                    wq: Atomic::new(wq),
                    kept: Atomic::new(0),
                },
                GFP_KERNEL,
            )?)
        })();
        let dev = match built {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: The virtqueues were found above and nothing uses them.
                unsafe { sys::vcuda_glue_del_vqs(vdev) };
                // SAFETY: `wq` was allocated above and is unused.
                unsafe { bindings::destroy_workqueue(wq) };
                return Err(e);
            }
        };
        // SAFETY: The driver keeps its `Arc` until `remove` has reset the device and cleared
        // `priv`, so the callback's pointer stays valid while callbacks can run.
        unsafe { sys::vcuda_glue_set_priv(vdev, Arc::as_ptr(&dev).cast_mut().cast()) };
        // SAFETY: The virtqueues are set up.
        unsafe { sys::vcuda_glue_device_ready(vdev) };
        pr_debug!(
            "{} queues, {} descriptors, ctrl {} bytes, data {} bytes, indirect {}\n",
            limits.queues,
            limits.max_desc,
            limits.max_ctrl,
            limits.max_data,
            indirect
        );
        Ok(dev)
    }

    /// Whether `vdev` is this device.
    pub(crate) fn is(&self, vdev: *mut bindings::virtio_device) -> bool {
        self.vdev == vdev
    }

    /// Detaches from the device (driver `remove`, including at module unload).
    pub(crate) fn remove(&self) {
        // Let the chains in flight (session closes above all) finish, for a while.
        let mut waited = 0;
        while waited < REMOVE_DRAIN_MS && self.queues.iter().any(|q| q.in_flight() > 0) {
            sys::msleep(10);
            waited += 10;
        }
        // From here on `submit` adds nothing, so every chain detached below was on the ring
        // before the reset (and is kept, see `finish`); callbacks still complete chains.
        for q in &self.queues {
            q.ring.lock().closed = true;
        }
        // SAFETY: `vdev` is bound to us. After the reset no virtqueue callback runs
        // (virtio-pci synchronises its interrupt vectors), the device takes no chain and puts
        // none in a used ring; a call it is still running may write that chain's writable
        // buffers when it returns (see `finish`).
        unsafe { bindings::virtio_reset_device(self.vdev) };
        for q in &self.queues {
            let mut n = 0;
            {
                let mut ring = q.ring.lock();
                let vq = ring.vq;
                if !vq.is_null() {
                    // What the device returned before the reset: complete chains, which it
                    // no longer touches. (With CONFIG_VIRTIO_HARDEN_NOTIFICATION the reset
                    // breaks the virtqueue and this returns nothing: they are detached below,
                    // and kept, like the rest.)
                    loop {
                        let mut len: c_uint = 0;
                        // SAFETY: `vq` is live; the lock is held.
                        let token = unsafe { bindings::virtqueue_get_buf(vq, &mut len) };
                        if token.is_null() {
                            break;
                        }
                        // SAFETY: Every token on our rings is a request reference (`submit`),
                        // and each comes off the ring once.
                        unsafe { self.finish(token, len, DONE) };
                        n += 1;
                    }
                    // The rest: the device may have taken them, and may still write them.
                    loop {
                        // SAFETY: `vq` is live, the device is reset; the lock is held.
                        let token = unsafe { bindings::virtqueue_detach_unused_buf(vq) };
                        if token.is_null() {
                            break;
                        }
                        // SAFETY: As above.
                        unsafe { self.finish(token, 0, DETACHED) };
                        n += 1;
                    }
                    ring.vq = ptr::null_mut();
                    ring.in_flight = 0;
                }
            }
            q.completions.fetch_add(n + 1, Full);
            q.wait.wake_all();
        }
        // SAFETY: The device is reset; nothing references the virtqueues any more.
        unsafe {
            sys::vcuda_glue_set_priv(self.vdev, ptr::null_mut());
            sys::vcuda_glue_del_vqs(self.vdev);
        }
        let kept = self.kept.load(Relaxed);
        if kept > 0 {
            pr_warn!(
                "{} chains were not returned by the device before its reset; their buffers stay allocated\n",
                kept
            );
        }
        let wq = self.wq.xchg(ptr::null_mut(), Full);
        if !wq.is_null() {
            // SAFETY: `wq` came from `vcuda_glue_alloc_wq`; no callback can queue work any
            // more. Destroying it runs (drops) every abandoned request still queued.
            unsafe { bindings::destroy_workqueue(wq) };
        }
    }

    /// Handles a virtqueue interrupt: completes every chain the device has returned.
    pub(crate) fn complete(&self, index: u32) {
        let Some(q) = self.queues.get(index as usize) else {
            return;
        };
        let mut n = 0u64;
        {
            let mut ring = q.ring.lock();
            let vq = ring.vq;
            if vq.is_null() {
                return;
            }
            loop {
                // SAFETY: `vq` is live while the lock is held and `vq` is non-null.
                unsafe { bindings::virtqueue_disable_cb(vq) };
                loop {
                    let mut len: c_uint = 0;
                    // SAFETY: As above.
                    let token = unsafe { bindings::virtqueue_get_buf(vq, &mut len) };
                    if token.is_null() {
                        break;
                    }
                    ring.in_flight = ring.in_flight.saturating_sub(1);
                    // SAFETY: Every token on our rings is a request reference (`submit`).
                    unsafe { self.finish(token, len, DONE) };
                    n += 1;
                }
                // SAFETY: As above.
                if unsafe { bindings::virtqueue_is_broken(vq) } {
                    break;
                }
                // SAFETY: As above. `false` means more chains came back meanwhile.
                if unsafe { bindings::virtqueue_enable_cb(vq) } {
                    break;
                }
            }
        }
        if n > 0 {
            q.completions.fetch_add(n, Full);
            q.wait.wake_all();
        }
    }

    /// Completes one chain taken off a ring: `DONE` (the device returned it) or `DETACHED`
    /// (removal, after the reset: the device never returned it, and the request is kept).
    ///
    /// # Safety
    ///
    /// `token` must be a token this device put on a ring (`Arc::into_raw` of a [`Request`]),
    /// just taken off it; the ring's reference passes to this function.
    unsafe fn finish(&self, token: *mut c_void, len: u32, how: u32) {
        let req = token.cast::<Request>().cast_const();
        // SAFETY: The ring's reference keeps the request alive until it is passed on below.
        let r = unsafe { &*req };
        r.used_len.store(len, Relaxed);
        if how == DETACHED {
            // The device never returned the chain. A waiter gets ENODEV and leaves the ring's
            // reference here (the state tells it so); so does an abandoned chain. The device
            // may have taken the chain before the reset, and a call still running then writes
            // its in segments (DEVICE.md, "Reset") and maybe its reply area when
            // it returns, any time later: keep the ring's reference, and with it every buffer
            // and pinned page of the request, forever. Nothing the device may write is freed.
            let _ = r.state.cmpxchg(PENDING, DETACHED, Full);
            self.kept.fetch_add(1, Relaxed);
            return;
        }
        if r.state.cmpxchg(PENDING, how, Full).is_ok() {
            // The waiter owns the ring's reference now and may free the request at once:
            // do not touch it again.
            return;
        }
        // Abandoned: drop the ring's reference in process context.
        // SAFETY: The ring's reference is ours (see above).
        self.reap(unsafe { Arc::from_raw(req) });
    }

    /// Drops a request reference in process context (on the workqueue), whatever the context
    /// of the caller.
    fn reap(&self, arc: Arc<Request>) {
        let wq = self.wq.load(Acquire);
        if wq.is_null() {
            // Unreachable: the workqueue outlives every ring. Leaking beats freeing (and
            // unpinning) in interrupt context.
            core::mem::forget(arc);
            return;
        }
        // SAFETY: `wq` is live until `remove` destroys it, after the last completion.
        let queue = unsafe { workqueue::Queue::from_raw(wq) };
        if let Err(arc) = queue.enqueue(arc) {
            // Unreachable: a request is queued at most once.
            core::mem::forget(arc);
        }
    }

    /// Queue 0: `OpenSession` and `CloseSession` (the device handles a queue in order).
    fn control_queue(&self) -> Result<&Queue> {
        self.queues.first().map(|q| &**q).ok_or(ENODEV)
    }

    /// The queue of the current CPU.
    fn pick_queue(&self) -> Result<&Queue> {
        // SAFETY: No preconditions.
        let cpu = unsafe { bindings::raw_smp_processor_id() } as usize;
        let i = cpu.checked_rem(self.queues.len()).ok_or(ENODEV)?;
        self.queues.get(i).map(|q| &**q).ok_or(ENODEV)
    }

    /// Puts a request's chain on a ring and kicks the device. The ring takes a reference.
    pub(crate) fn submit(&self, q: &Queue, req: &Arc<Request>) -> Result {
        let (mut sgs, n_out, n_in) = req.sg_lists();
        let descs = req.descs;
        let token = Arc::into_raw(req.clone());
        // SAFETY: `token` came from `Arc::into_raw` just above; used on the error paths only.
        let reclaim = || drop(unsafe { Arc::from_raw(token) });
        loop {
            let seen = q.completions.load(Acquire);
            let mut ring = q.ring.lock();
            let vq = ring.vq;
            if vq.is_null() || ring.closed {
                drop(ring);
                reclaim();
                return Err(ENODEV);
            }
            // SAFETY: `vq` is live (non-null under the lock). The scatterlists describe
            // memory the request owns (kernel buffers, pinned pages) and stay valid while the
            // ring holds its reference; `token` is that reference.
            let err = unsafe {
                bindings::virtqueue_add_sgs(
                    vq,
                    sgs.as_mut_ptr(),
                    n_out,
                    n_in,
                    token.cast_mut().cast(),
                    bindings::GFP_ATOMIC,
                )
            };
            if err == 0 {
                ring.in_flight += 1;
                // SAFETY: As above.
                unsafe { bindings::virtqueue_kick(vq) };
                return Ok(());
            }
            // SAFETY: As above.
            let size = unsafe { bindings::virtqueue_get_vring_size(vq) };
            drop(ring);
            if err != -(bindings::ENOSPC as i32) || (!self.indirect && descs > size as usize) {
                reclaim();
                return Err(if err == -(bindings::ENOSPC as i32) {
                    E2BIG
                } else {
                    Error::from_errno(err)
                });
            }
            // The ring is full: wait for a completion.
            if !q.wait.wait_killable(|| q.completions.load(Acquire) != seen) {
                reclaim();
                return Err(EINTR);
            }
        }
    }

    /// Submits a request and waits for the device to return it.
    ///
    /// # Errors
    ///
    /// `ENODEV` (device gone), `EINTR` (fatal signal; the chain stays with the device and is
    /// cleaned up when it comes back), `E2BIG`, `ENOMEM`, `EIO` (broken virtqueue).
    pub(crate) fn call(&self, req: &Arc<Request>) -> Result {
        let q = self.pick_queue()?;
        self.submit(q, req)?;
        if !q.wait.wait_killable(|| req.state.load(Acquire) != PENDING)
            && req.state.cmpxchg(PENDING, ABANDONED, Full).is_ok()
        {
            // The ring's reference now belongs to the completion path.
            return Err(EINTR);
        }
        if req.state.load(Acquire) != DONE {
            // DETACHED: the device was removed; the removal keeps the ring's reference.
            return Err(ENODEV);
        }
        // SAFETY: The state moved to DONE, so the completion path passed the ring's reference
        // (`Arc::into_raw` in `submit`) to us.
        drop(unsafe { Arc::from_raw(Arc::as_ptr(req)) });
        Ok(())
    }

    /// Posts `CloseSession` for `id` on queue 0 (created `ABANDONED`: nobody waits).
    fn close_session(&self, id: u64) {
        let r = Request::control(self, id, CHAIN_OP_CLOSE_SESSION, ABANDONED)
            .and_then(|req| self.submit(self.control_queue()?, &req));
        if let Err(e) = r {
            pr_debug!("session {}: close not sent ({:?})\n", id, e);
        }
    }
}

fn read_config(vdev: *mut bindings::virtio_device) -> VirtioCudaConfig {
    use core::mem::offset_of;
    let r32 = |off: usize| {
        // SAFETY: `vdev` is the device being probed; the offset lies in its config space.
        unsafe { sys::vcuda_glue_cread32(vdev, off as c_uint) }
    };
    VirtioCudaConfig {
        magic: r32(offset_of!(VirtioCudaConfig, magic)),
        protocol_version: r32(offset_of!(VirtioCudaConfig, protocol_version)),
        num_request_queues: r32(offset_of!(VirtioCudaConfig, num_request_queues)),
        max_chain_descriptors: r32(offset_of!(VirtioCudaConfig, max_chain_descriptors)),
        max_ctrl_len: r32(offset_of!(VirtioCudaConfig, max_ctrl_len)),
        reserved: 0,
        // SAFETY: As above.
        max_data_len: unsafe {
            sys::vcuda_glue_cread64(vdev, offset_of!(VirtioCudaConfig, max_data_len) as c_uint)
        },
    }
}

/// `Session::opened`: `OpenSession` could not be queued (nothing to close).
const OPEN_UNSENT: i32 = 2;
/// `Session::opened`: the outcome of `OpenSession` is not claimed yet.
const OPEN_PENDING: i32 = 1;

/// An open `/dev/vcuda`: one device session.
///
/// `OpenSession` is queued when the file is opened but not waited for there (`open` runs under
/// the misc devices' global mutex): the first call waits for it instead ([`Session::ready`]).
/// `OpenSession` and `CloseSession` always go to queue 0, which the device handles in order,
/// and calls only start once the open is done, so the device sees open, calls, close in that
/// order.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) dev: Arc<VDev>,
    /// The `OpenSession` chain. Like a waiting thread, the session owes the ring's reference
    /// back once the chain leaves `PENDING`; whoever moves `opened` off `OPEN_PENDING` takes it.
    open_req: Arc<Request>,
    /// `OPEN_UNSENT`, `OPEN_PENDING`, then 0 (open) or a negative errno.
    opened: Atomic<i32>,
}

impl Session {
    /// Creates a session on `dev` and queues its `OpenSession` (without waiting).
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `ENODEV` (device gone); `EINTR` (fatal signal while queue 0 was full).
    pub(crate) fn open(dev: Arc<VDev>) -> Result<Arc<Session>> {
        let id = dev.next_session.fetch_add(1, Relaxed);
        let open_req = Request::control(&dev, id, CHAIN_OP_OPEN_SESSION, PENDING)?;
        let s = Arc::new(
            Session {
                id,
                dev,
                open_req,
                opened: Atomic::new(OPEN_UNSENT),
            },
            GFP_KERNEL,
        )?;
        s.dev.submit(s.dev.control_queue()?, &s.open_req)?;
        s.opened.store(OPEN_PENDING, Release);
        Ok(s)
    }

    /// Waits until the device has opened the session.
    ///
    /// # Errors
    ///
    /// `EMFILE` (the device's session limit was reached), `EIO` (the device refused the
    /// session otherwise), `ENODEV` (device gone), `EINTR` (fatal signal while waiting).
    pub(crate) fn ready(&self) -> Result {
        loop {
            match self.opened.load(Acquire) {
                0 => return Ok(()),
                OPEN_PENDING => {}
                OPEN_UNSENT => return Err(ENODEV),
                e => return Err(Error::from_errno(e)),
            }
            let q = self.dev.control_queue()?;
            if !q
                .wait
                .wait_killable(|| self.open_req.state.load(Acquire) != PENDING)
            {
                return Err(EINTR);
            }
            let done = self.open_req.state.load(Acquire) == DONE;
            let res = match (done, self.open_req.first_status()) {
                (false, _) => ENODEV.to_errno(),
                (true, None | Some(0)) => 0,
                (true, Some(STATUS_MEMORY_ALLOCATION)) => EMFILE.to_errno(),
                (true, Some(_)) => EIO.to_errno(),
            };
            if self.opened.cmpxchg(OPEN_PENDING, res, Full).is_ok() && done {
                // SAFETY: The chain moved to DONE, so the completion path passed the ring's
                // reference (`Arc::into_raw` in `submit`) to the session; the compare-exchange
                // above lets exactly one thread take it. (DETACHED: removal keeps it.)
                drop(unsafe { Arc::from_raw(Arc::as_ptr(&self.open_req)) });
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        match self.opened.load(Acquire) {
            OPEN_UNSENT => return,
            OPEN_PENDING => {
                // Unclaimed: abandon the chain to the completion path, or, if it is back
                // already, take the ring's reference here (`&mut self`: no `ready` runs).
                if let Err(DONE) = self.open_req.state.cmpxchg(PENDING, ABANDONED, Full) {
                    // SAFETY: The chain moved to DONE (not by us), so its ring reference is
                    // the session's, and nobody claimed it. (DETACHED: removal keeps it.)
                    drop(unsafe { Arc::from_raw(Arc::as_ptr(&self.open_req)) });
                }
            }
            _ => {}
        }
        self.dev.close_session(self.id);
    }
}

/// A range of `Bufs::pages` pinned by one `pin_user_pages_fast` sequence.
struct PinRange {
    start: usize,
    count: usize,
    write: bool,
}

/// One scatter-gather entry: physically contiguous bytes.
#[derive(Clone, Copy)]
struct Entry {
    page: *mut c_void,
    offset: u32,
    len: u32,
    phys: u64,
}

/// The memory of one chain.
struct Bufs {
    /// `ChainHeader` + message (device-readable).
    head: KVVec<u8>,
    /// Reply area (device-writable; read only after the device returned the chain).
    reply: KVVec<u8>,
    /// Pinned user pages.
    pages: KVVec<*mut c_void>,
    pins: KVec<PinRange>,
    /// Data copied through kernel memory instead (see [`Bounce`]).
    bounce: Option<Bounce>,
    /// The scatterlists: `[head][out data][reply][in data]`, each sublist end-marked. Only
    /// `virtqueue_add_sgs` uses them (reads; the `UnsafeCell` allows its `*mut` view).
    sg: UnsafeCell<KVVec<bindings::scatterlist>>,
    /// (start, count) of the four sublists in `sg`.
    lists: SgLists,
}

/// (start, count) of the four scatterlist sublists `[head][out data][reply][in data]`.
type SgLists = [(usize, usize); 4];

/// A call's data in kernel chunks, for user buffers whose pages are too scattered to fit the
/// device's descriptor limit: out data is copied in before the call, in data is copied out
/// after it (only if the caller is still there). In chunks start with the user's current
/// bytes, so bytes the device does not write come back unchanged.
struct Bounce {
    out: KVec<Chunk>,
    inp: KVec<Chunk>,
    /// The in segments (address, length), in order.
    in_segs: KVec<(u64, u64)>,
}

/// Largest bounce chunk: 2^10 pages (4 MiB).
const MAX_CHUNK_ORDER: u32 = 10;

impl Bufs {
    /// Unpins every pinned page (device-writable ones marked dirty).
    fn unpin(&mut self) {
        for p in &self.pins {
            let pages = self.pages[p.start..p.start + p.count].as_mut_ptr().cast();
            // SAFETY: These pages were pinned by `pin_user_pages_fast` (FOLL_PIN) and are
            // unpinned exactly once, here, after the device returned the chain (or never got
            // it). Device-writable pages are marked dirty.
            unsafe {
                if p.write {
                    bindings::unpin_user_pages_dirty_lock(pages, p.count as c_ulong, true);
                } else {
                    bindings::unpin_user_pages(pages, p.count as c_ulong);
                }
            }
        }
        self.pins.clear();
        self.pages.clear();
    }

    /// Pins the segments' pages: out segments first, then in segments, each in the caller's
    /// order. On failure `pins` describes what is pinned (and `unpin`/drop releases it).
    fn pin(&mut self, segs: &[VcudaSeg], pages_total: usize) -> Result {
        self.pages = KVVec::from_elem(ptr::null_mut(), pages_total, GFP_KERNEL)?;
        let mut next = 0;
        for dir in [SEG_OUT, SEG_IN] {
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                let first = (s.addr / PAGE_SIZE as u64) as usize;
                let count = ((s.addr + s.len).div_ceil(PAGE_SIZE as u64) as usize) - first;
                self.pins.push(
                    PinRange {
                        start: next,
                        count: 0,
                        write: dir == SEG_IN,
                    },
                    GFP_KERNEL,
                )?;
                let flags = if dir == SEG_IN {
                    bindings::FOLL_WRITE
                } else {
                    0
                };
                let mut got = 0;
                while got < count {
                    let chunk = (count - got).min(1 << 16);
                    // SAFETY: `pages[next + got..]` has room for `chunk` pointers;
                    // pin_user_pages_fast checks that the range is user memory.
                    let r = unsafe {
                        bindings::pin_user_pages_fast(
                            ((first + got) * PAGE_SIZE) as c_ulong,
                            chunk as c_int,
                            flags as c_uint,
                            self.pages[next + got..].as_mut_ptr().cast(),
                        )
                    };
                    if r <= 0 {
                        return Err(if r < 0 { Error::from_errno(r) } else { EFAULT });
                    }
                    got += r as usize;
                    if let Some(p) = self.pins.last_mut() {
                        p.count = got;
                    }
                }
                next += count;
            }
        }
        Ok(())
    }

    /// Adds the pinned pages to the out (1) and in (3) lists.
    fn map_pinned(&self, segs: &[VcudaSeg], sgb: &mut SgBuilder) -> Result {
        let mut pi = 0;
        for (dir, list) in [(SEG_OUT, 1), (SEG_IN, 3)] {
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                let mut addr = s.addr as usize;
                let end = (s.addr + s.len) as usize;
                while addr < end {
                    let off = addr % PAGE_SIZE;
                    let len = (PAGE_SIZE - off).min(end - addr);
                    sgb.add(list, self.pages[pi], off, len)?;
                    pi += 1;
                    addr += len;
                }
            }
        }
        Ok(())
    }

    /// Copies the segments into bounce chunks (in segments too, see [`Bounce`]) and adds the
    /// chunks to the out (1) and in (3) lists.
    fn bounce(&mut self, segs: &[VcudaSeg], totals: [u64; 2], sgb: &mut SgBuilder) -> Result {
        let mut b = Bounce {
            out: alloc_chunks(totals[0])?,
            inp: alloc_chunks(totals[1])?,
            in_segs: KVec::new(),
        };
        for s in segs.iter().filter(|s| s.dir == SEG_IN && s.len > 0) {
            b.in_segs.push((s.addr, s.len), GFP_KERNEL)?;
        }
        for (dir, chunks) in [(SEG_OUT, &b.out), (SEG_IN, &b.inp)] {
            let mut cur = ChunkCursor::new(chunks);
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                cur.copy_from_user(s.addr, s.len)?;
            }
        }
        for (list, chunks, total) in [(1, &b.out, totals[0]), (3, &b.inp, totals[1])] {
            let mut left = total as usize;
            for c in chunks.iter() {
                let n = c.len().min(left);
                sgb.add(list, c.page(), 0, n)?;
                left -= n;
            }
        }
        self.bounce = Some(b);
        Ok(())
    }
}

/// Allocates chunks for `total` bytes, as large as the allocator gives them.
fn alloc_chunks(total: u64) -> Result<KVec<Chunk>> {
    let mut v = KVec::new();
    let mut left = total as usize;
    let mut max_order = MAX_CHUNK_ORDER;
    while left > 0 {
        let pages = left.div_ceil(PAGE_SIZE);
        let fit = usize::BITS - (pages - 1).leading_zeros();
        let order = fit.min(max_order);
        match Chunk::alloc(order) {
            Some(c) => {
                left -= c.len().min(left);
                v.push(c, GFP_KERNEL)?;
            }
            None if order > 0 => max_order = order - 1,
            None => return Err(ENOMEM),
        }
    }
    Ok(v)
}

/// Walks a chunk list as one byte stream.
struct ChunkCursor<'a> {
    chunks: &'a [Chunk],
    i: usize,
    off: usize,
}

impl<'a> ChunkCursor<'a> {
    fn new(chunks: &'a [Chunk]) -> Self {
        Self {
            chunks,
            i: 0,
            off: 0,
        }
    }

    /// The next `len` bytes of the stream, piece by piece (kernel address, length).
    fn pieces(&mut self, mut len: u64, mut f: impl FnMut(*mut u8, usize) -> Result) -> Result {
        while len > 0 {
            let c = self.chunks.get(self.i).ok_or(EINVAL)?;
            let n = (c.len() - self.off).min(len as usize);
            // SAFETY: `off + n <= c.len()`: inside the chunk.
            f(unsafe { c.as_ptr().add(self.off) }, n)?;
            self.off += n;
            len -= n as u64;
            if self.off == c.len() {
                self.i += 1;
                self.off = 0;
            }
        }
        Ok(())
    }

    fn copy_from_user(&mut self, addr: u64, len: u64) -> Result {
        let mut r = UserSlice::new(UserPtr::from_addr(addr as usize), len as usize).reader();
        self.pieces(len, |p, n| {
            // SAFETY: `p..p + n` lies in a chunk this request owns and nothing else uses yet.
            r.read_raw(unsafe { core::slice::from_raw_parts_mut(p.cast(), n) })
        })
    }

    fn copy_to_user(&mut self, addr: u64, len: u64) -> Result {
        let mut w = UserSlice::new(UserPtr::from_addr(addr as usize), len as usize).writer();
        self.pieces(len, |p, n| {
            // SAFETY: `p..p + n` lies in a chunk the device is done with.
            w.write_slice(unsafe { core::slice::from_raw_parts(p, n) })
        })
    }
}

impl Drop for Bufs {
    fn drop(&mut self) {
        self.unpin();
    }
}

/// One call: a descriptor chain and its completion.
#[pin_data]
pub(crate) struct Request {
    #[pin]
    work: Work<Request>,
    state: Atomic<u32>,
    used_len: Atomic<u32>,
    bufs: Bufs,
    /// Descriptors the chain uses (without indirect tables).
    descs: usize,
    /// Keeps the session open until the device has returned this chain.
    _session: Option<Arc<Session>>,
}

// SAFETY: The raw pointers are to pinned pages and kernel buffers the request owns; they may be
// used and released from any thread (release happens in process context only, see the
// module docs).
unsafe impl Send for Request {}
// SAFETY: After construction only atomics are mutated, and `sg` is read by one
// `virtqueue_add_sgs` call under the queue lock; the reply area is read after completion.
unsafe impl Sync for Request {}

impl_has_work! {
    impl HasWork<Self> for Request { self.work }
}

impl WorkItem for Request {
    type Pointer = Arc<Request>;

    /// Drops an abandoned request (the ring's last reference) in process context.
    fn run(this: Arc<Request>) {
        drop(this);
    }
}

/// Builds the scatter-gather entries of a chain, merging physically contiguous pages.
struct SgBuilder {
    lists: [KVVec<Entry>; 4],
    total: usize,
    max: usize,
}

impl SgBuilder {
    fn new(max: u32) -> Self {
        Self {
            lists: [KVVec::new(), KVVec::new(), KVVec::new(), KVVec::new()],
            total: 0,
            max: max as usize,
        }
    }

    /// Appends `len` bytes at `offset` in `page` to list `list`.
    fn add(&mut self, list: usize, page: *mut c_void, offset: usize, len: usize) -> Result {
        // SAFETY: `page` is a valid page (pinned, or backing a live kernel buffer).
        let phys = unsafe { sys::page_to_phys(page) } + offset as u64;
        if let Some(last) = self.lists[list].last_mut() {
            if last.phys + u64::from(last.len) == phys
                && u64::from(last.len) + len as u64 <= MAX_SG_ENTRY
            {
                last.len += len as u32;
                return Ok(());
            }
        }
        if self.total >= self.max {
            return Err(E2BIG);
        }
        self.lists[list].push(
            Entry {
                page,
                offset: offset as u32,
                len: len as u32,
                phys,
            },
            GFP_KERNEL,
        )?;
        self.total += 1;
        Ok(())
    }

    /// Forgets the data lists (1 and 3).
    fn clear_data(&mut self) {
        self.lists[1].clear();
        self.lists[3].clear();
        self.total = self.lists[0].len() + self.lists[2].len();
    }

    /// Appends a kernel buffer (kmalloc or vmalloc memory) to list `list`.
    fn add_kernel(&mut self, list: usize, buf: &[u8]) -> Result {
        let mut at = 0;
        while at < buf.len() {
            let addr = buf[at..].as_ptr();
            let off = addr as usize % PAGE_SIZE;
            let n = (PAGE_SIZE - off).min(buf.len() - at);
            // SAFETY: `addr` lies in `buf`, a live kmalloc/vmalloc allocation.
            let page = unsafe { sys::kaddr_to_page(addr) };
            self.add(list, page, off, n)?;
            at += n;
        }
        Ok(())
    }

    /// Writes the scatterlists.
    fn finish(self) -> Result<(KVVec<bindings::scatterlist>, SgLists)> {
        // SAFETY: An all-zero scatterlist is valid (and `sg_init_table` re-initialises it).
        let zero: bindings::scatterlist = unsafe { core::mem::zeroed() };
        let mut sg = KVVec::from_elem(zero, self.total, GFP_KERNEL)?;
        let mut lists = [(0, 0); 4];
        let mut at = 0;
        for (i, list) in self.lists.iter().enumerate() {
            lists[i] = (at, list.len());
            if list.is_empty() {
                continue;
            }
            let sub = &mut sg[at..at + list.len()];
            // SAFETY: `sub` has `list.len()` entries; this zeroes them and end-marks the last.
            unsafe { bindings::sg_init_table(sub.as_mut_ptr(), list.len() as c_uint) };
            for (s, e) in sub.iter_mut().zip(list.iter()) {
                // SAFETY: `s` is an initialised entry; `e.page` is a valid page.
                unsafe { sys::vcuda_glue_sg_set_page(s, e.page, e.len, e.offset) };
            }
            at += list.len();
        }
        Ok((sg, lists))
    }
}

fn chain_header(session: u64, op: u32, reply_capacity: u32) -> [u8; size_of::<ChainHeader>()] {
    let mut h = [0u8; size_of::<ChainHeader>()];
    h[0..8].copy_from_slice(&session.to_le_bytes());
    h[8..12].copy_from_slice(&op.to_le_bytes());
    h[12..16].copy_from_slice(&reply_capacity.to_le_bytes());
    h
}

impl Request {
    fn new(
        bufs: Bufs,
        descs: usize,
        session: Option<Arc<Session>>,
        state: u32,
    ) -> Result<Arc<Request>> {
        Arc::pin_init(
            pin_init!(Request {
                work <- new_work!("vcuda_reap"),
                state: Atomic::new(state),
                used_len: Atomic::new(0),
                bufs,
                descs,
                _session: session,
            }),
            GFP_KERNEL,
        )
    }

    /// A chain without message or data: `OpenSession`/`CloseSession`.
    fn control(dev: &VDev, id: u64, op: u32, state: u32) -> Result<Arc<Request>> {
        let mut head = KVVec::new();
        head.extend_from_slice(&chain_header(id, op, MIN_REPLY_CAPACITY), GFP_KERNEL)?;
        let reply = KVVec::from_elem(0u8, MIN_REPLY_CAPACITY as usize, GFP_KERNEL)?;
        let mut sgb = SgBuilder::new(dev.limits.max_desc);
        sgb.add_kernel(0, &head)?;
        sgb.add_kernel(2, &reply)?;
        let descs = sgb.total;
        let (sg, lists) = sgb.finish()?;
        let bufs = Bufs {
            head,
            reply,
            pages: KVVec::new(),
            pins: KVec::new(),
            bounce: None,
            sg: UnsafeCell::new(sg),
            lists,
        };
        Self::new(bufs, descs, None, state)
    }

    /// Builds the chain of a `VCUDA_IOC_SUBMIT`: copies the message in, pins the segments.
    ///
    /// # Errors
    ///
    /// `EINVAL` (non-zero flags, empty message, reply buffer under 4096 bytes, bad segment
    /// direction or flags, address overflow), `E2BIG` (message over `max_ctrl_len`, more than
    /// `VCUDA_MAX_SEGS` segments, out or in data over `max_data_len`, more descriptors than
    /// `max_chain_descriptors`), `EFAULT` (unreadable message or segment table, pages that
    /// cannot be pinned), `ENOMEM`.
    pub(crate) fn for_submit(session: &Arc<Session>, sub: &VcudaSubmit) -> Result<Arc<Request>> {
        let dev = &*session.dev;
        let lim = dev.limits;
        if sub.flags != 0 || sub.ctrl_len == 0 || sub.reply_cap < MIN_REPLY_CAPACITY {
            return Err(EINVAL);
        }
        if sub.ctrl_len > lim.max_ctrl || sub.n_segs > VCUDA_MAX_SEGS {
            return Err(E2BIG);
        }

        // The segment table.
        let n = sub.n_segs as usize;
        let mut segs = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut rd = UserSlice::new(
            UserPtr::from_addr(sub.segs_addr as usize),
            n * size_of::<VcudaSeg>(),
        )
        .reader();
        let (mut out_total, mut in_total, mut pages_total) = (0u64, 0u64, 0usize);
        for _ in 0..n {
            let s: VcudaSeg = rd.read()?;
            if s.flags != 0 || (s.dir != SEG_OUT && s.dir != SEG_IN) {
                return Err(EINVAL);
            }
            let end = s.addr.checked_add(s.len).ok_or(EINVAL)?;
            let total = if s.dir == SEG_OUT {
                &mut out_total
            } else {
                &mut in_total
            };
            *total = total.saturating_add(s.len);
            if *total > lim.max_data {
                return Err(E2BIG);
            }
            if s.len > 0 {
                pages_total +=
                    (end.div_ceil(PAGE_SIZE as u64) - s.addr / PAGE_SIZE as u64) as usize;
            }
            segs.push(s, GFP_KERNEL)?;
        }

        // The head: ChainHeader + message.
        let reply_area = (sub.reply_cap as usize).min(MAX_REPLY_AREA.max(lim.max_ctrl as usize));
        let mut head =
            KVVec::with_capacity(size_of::<ChainHeader>() + sub.ctrl_len as usize, GFP_KERNEL)?;
        head.extend_from_slice(
            &chain_header(session.id, CHAIN_OP_SUBMIT, reply_area as u32),
            GFP_KERNEL,
        )?;
        UserSlice::new(
            UserPtr::from_addr(sub.ctrl_addr as usize),
            sub.ctrl_len as usize,
        )
        .read_all(&mut head, GFP_KERNEL)?;
        let reply = KVVec::from_elem(0u8, reply_area, GFP_KERNEL)?;

        let mut bufs = Bufs {
            head,
            reply,
            pages: KVVec::new(),
            pins: KVec::new(),
            bounce: None,
            sg: UnsafeCell::new(KVVec::new()),
            lists: [(0, 0); 4],
        };
        // Scatter-gather lists: [head][out data][reply][in data].
        let mut sgb = SgBuilder::new(lim.max_desc);
        sgb.add_kernel(0, &bufs.head)?;
        sgb.add_kernel(2, &bufs.reply)?;
        bufs.pin(&segs, pages_total)?;
        match bufs.map_pinned(&segs, &mut sgb) {
            Ok(()) => {}
            Err(e) if e == E2BIG => {
                // Too scattered for the device's descriptor limit: copy instead.
                sgb.clear_data();
                bufs.unpin();
                bufs.bounce(&segs, [out_total, in_total], &mut sgb)?;
            }
            Err(e) => return Err(e),
        }
        let descs = sgb.total;
        let (sg, lists) = sgb.finish()?;
        bufs.sg = UnsafeCell::new(sg);
        bufs.lists = lists;
        Self::new(bufs, descs, Some(session.clone()), PENDING)
    }

    /// The non-empty sublists for `virtqueue_add_sgs`: (pointers, out count, in count).
    fn sg_lists(&self) -> ([*mut bindings::scatterlist; 4], c_uint, c_uint) {
        // SAFETY: `sg` is not resized after construction; only its entries are viewed as
        // `*mut` for the duration of one `virtqueue_add_sgs`.
        let base = unsafe { (*self.bufs.sg.get()).as_mut_ptr() };
        let mut out = [ptr::null_mut(); 4];
        let (mut n, mut n_out) = (0, 0);
        for (i, &(start, count)) in self.bufs.lists.iter().enumerate() {
            if count == 0 {
                continue;
            }
            // SAFETY: `start` is in bounds of the `sg` allocation.
            out[n] = unsafe { base.add(start) };
            n += 1;
            if i < 2 {
                n_out += 1;
            }
        }
        (out, n_out, (n - n_out as usize) as c_uint)
    }

    /// After a `DONE` call whose data went through bounce chunks: copies the in data to the
    /// caller's in segments (in order, as the device would have written them).
    ///
    /// # Errors
    ///
    /// `EFAULT` if an in segment is not writable.
    pub(crate) fn copy_back(&self) -> Result {
        let Some(b) = &self.bufs.bounce else {
            return Ok(());
        };
        let mut cur = ChunkCursor::new(&b.inp);
        for &(addr, len) in b.in_segs.iter() {
            cur.copy_to_user(addr, len)?;
        }
        Ok(())
    }

    /// The status of the reply's first record, if the reply has one.
    fn first_status(&self) -> Option<u32> {
        let r = self.reply();
        let word = |o: usize| Some(u32::from_le_bytes(r.get(o..o + 4)?.try_into().ok()?));
        if r.len() < REPLY_HEADER_LEN + RECORD_HEADER_LEN
            || word(REPLY_HEADER_MAGIC_OFFSET)? != REPLY_MAGIC
            || word(REPLY_HEADER_N_RECORDS_OFFSET)? == 0
        {
            return None;
        }
        word(REPLY_HEADER_LEN + RECORD_STATUS_OFFSET)
    }

    /// The reply bytes the device wrote, once the request is `DONE`: the written part of the
    /// reply area, cut to the length its `ReplyHeader` states when it has one.
    pub(crate) fn reply(&self) -> &[u8] {
        let area = self.bufs.reply.as_slice();
        let used = (self.used_len.load(Relaxed) as usize).min(area.len());
        let mut n = used;
        if used >= REPLY_HEADER_LEN {
            let word =
                |o: usize| u32::from_le_bytes([area[o], area[o + 1], area[o + 2], area[o + 3]]);
            if word(REPLY_HEADER_MAGIC_OFFSET) == REPLY_MAGIC {
                let stated = REPLY_HEADER_LEN + word(REPLY_HEADER_CTRL_LEN_OFFSET) as usize;
                n = n.min(stated);
            }
        }
        &area[..n]
    }
}
