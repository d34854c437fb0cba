// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The device core: the session table and chain dispatch, independent of the vhost-user
//! protocol. [`super::backend`] feeds it chains popped from the vrings; the unit tests and
//! the fuzz target feed it chains from a `MockSplitQueue`.
//!
//! # Threading
//!
//! The thread that pops a chain validates it ([`super::chain::parse`]) and then either
//! answers it at once (malformed chain, unknown session, bad open or close) or hands it to
//! the worker thread of the session it names, through that worker's channel. Each session
//! has one worker, which owns the [`Session`], runs its chains one at a time in the order
//! they were popped, writes the reply into the chain's reply area and completes the chain
//! through its [`Completion`] (add to the used ring, notify the driver if needed). So a
//! session's calls keep their order, a call that blocks (a stream synchronize) blocks only
//! its own session, and queue threads never wait for an executor.
//!
//! With [`QueueThreadCalls::Short`] the popping thread (a queue thread) runs a chain itself,
//! without the hop to the worker, when the session's worker has nothing queued or running
//! and every request of the chain's message is short ([`super::short`]): one that never
//! waits and whose cost does not grow with a guest-chosen size. The session's state sits
//! behind a mutex that its worker holds while it runs a chain; the queue thread only
//! `try_lock`s it, so it never waits for a worker, and a session's chains still run one at
//! a time in the order they were popped (a short call behind a queued long one waits its
//! turn on the worker).
//!
//! With [`Threading::Inline`] the popping thread runs the session itself (for tests and the
//! fuzz target, where determinism matters more than concurrency).

use crate::executor::Tenant;
use std::collections::HashMap;
use std::ops::Deref;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use log::{debug, error, warn};
use vcuda_protocol::status::{self, CudaStatus};
use vcuda_protocol::virtio::ChainOp;
use vcuda_protocol::{RecordKind, ReplyBuilder};
use virtio_queue::DescriptorChain;

use super::chain::{self, Area, Chain, Mem, PagesOp};
use super::short::{self, SHORT_MAX_CTRL};
use crate::data::DataSegs;
use crate::executor::Cancel;
use crate::session::{Backend, SEQ_MALFORMED, Session};

mod state;

pub use self::state::WeakDevice;

/// Where completed chains go: a queue's used ring.
pub trait UsedRing: Send + Sync {
    /// Puts chain `head` in the used ring with `len` bytes written and notifies the driver
    /// if it asked for it. `ticket` is what the transport attached to the chain when it was
    /// popped ([`Completion::new`]); a transport uses it to drop completions of chains popped
    /// before the ring was stopped.
    fn complete(&self, head: u16, len: u32, ticket: u64);

    /// Whether a chain popped with `ticket` may still be answered (its ring has not been
    /// stopped since). A stale chain is not run and its buffers are not written.
    fn is_current(&self, _ticket: u64) -> bool {
        true
    }

    /// Runs `write` (which writes the chain's reply area) only if the chain popped with
    /// `ticket` is still current, and keeps the ring from stopping meanwhile, so that no
    /// reply lands in guest memory after the driver reset the device (it may have reused
    /// that memory). Whether `write` ran.
    fn write_if_current(&self, ticket: u64, write: &mut dyn FnMut()) -> bool {
        let current = self.is_current(ticket);
        if current {
            write();
        }
        current
    }
}

/// The obligation to return one chain to its used ring. Dropping it unfulfilled returns
/// the chain with `len` 0, so no chain is ever lost, even if a worker dies.
pub struct Completion {
    ring: Arc<dyn UsedRing>,
    head: u16,
    ticket: u64,
    done: bool,
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("head", &self.head)
            .field("ticket", &self.ticket)
            .finish()
    }
}

impl Completion {
    /// The obligation to return chain `head` to `ring`.
    pub fn new(ring: Arc<dyn UsedRing>, head: u16, ticket: u64) -> Self {
        Self {
            ring,
            head,
            ticket,
            done: false,
        }
    }

    /// The chain's head descriptor index.
    pub fn head(&self) -> u16 {
        self.head
    }

    /// Whether the chain may still be answered ([`UsedRing::is_current`]).
    pub fn is_current(&self) -> bool {
        self.ring.is_current(self.ticket)
    }

    /// Runs `write` if the chain may still be answered, with the ring held running
    /// ([`UsedRing::write_if_current`]); what it returned, or 0 if it did not run.
    pub fn write_if_current(&self, write: impl FnOnce() -> u32) -> u32 {
        let mut write = Some(write);
        let mut len = 0;
        self.ring.write_if_current(self.ticket, &mut || {
            if let Some(w) = write.take() {
                len = w();
            }
        });
        len
    }

    /// Returns the chain with `len` bytes written.
    pub fn complete(mut self, len: u32) {
        self.done = true;
        self.ring.complete(self.head, len, self.ticket);
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if !self.done {
            self.ring.complete(self.head, 0, self.ticket);
        }
    }
}

/// Where sessions run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threading {
    /// One worker thread per session (the daemon).
    PerSession,
    /// On the thread that hands in the chain (tests, fuzzing).
    Inline,
}

/// Which calls the thread that pops a chain (a queue thread) may run itself, with
/// [`Threading::PerSession`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueThreadCalls {
    /// Every chain goes to its session's worker.
    None,
    /// A chain whose requests are all short ([`super::short`]) runs on the queue thread
    /// when the session's worker has nothing queued or running: one thread wake-up less
    /// per round trip.
    #[default]
    Short,
}

/// Limits and threading of a [`Device`].
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Most sessions (and session threads, closing ones included) at a time.
    pub max_sessions: usize,
    /// Where sessions run.
    pub threading: Threading,
    /// Which calls a queue thread runs itself.
    pub queue_thread_calls: QueueThreadCalls,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            max_sessions: 256,
            threading: Threading::PerSession,
            queue_thread_calls: QueueThreadCalls::default(),
        }
    }
}

/// Status of a chain for a session id that is not open (or whose session was lost).
pub const NO_SESSION: CudaStatus = status::INITIALIZATION_ERROR;
/// Status of a malformed chain, of opening an id in use and of closing an unknown id.
pub const BAD_CHAIN: CudaStatus = status::INVALID_VALUE;
/// Status of an open beyond [`DeviceConfig::max_sessions`].
pub const TOO_MANY_SESSIONS: CudaStatus = status::MEMORY_ALLOCATION;

enum Job {
    Run {
        mem: Arc<Mem>,
        chain: Box<Chain>,
        completion: Completion,
    },
    Shutdown,
}

/// A session's state as its worker holds it.
struct Slot {
    session: Option<Session>,
    reply: ReplyBuilder,
    ctrl: Vec<u8>,
    /// Stops the session's running work; the table's [`Entry`] holds a clone.
    cancel: Cancel,
}

impl Slot {
    fn new(cancel: Cancel) -> Self {
        Self {
            session: None,
            reply: ReplyBuilder::new(),
            ctrl: Vec::new(),
            cancel,
        }
    }
}

/// What a session's worker thread shares with the queue threads.
struct Shared {
    /// The session; the worker holds it while it runs a chain, a queue thread only if it
    /// gets it with `try_lock`.
    slot: Mutex<Slot>,
    /// Jobs sent to the worker and not yet finished (counted in under the table's lock,
    /// out by the worker after the chain completed and the slot was released).
    queued: AtomicUsize,
}

impl Shared {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        // A panic inside a call is caught in `submit`; a slot poisoned elsewhere still holds
        // a session (or none), which is what the next chain needs.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The slot, if the call holding it (if any) ends before `deadline`.
    fn slot_until(&self, deadline: Instant) -> Option<MutexGuard<'_, Slot>> {
        loop {
            match self.slot.try_lock() {
                Ok(g) => return Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() >= deadline => {
                    return None;
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

enum Worker {
    Thread(Sender<Job>, Arc<Shared>),
    Inline(Box<Slot>),
}

struct Entry {
    token: u64,
    epoch: u64,
    worker: Worker,
    /// Cancelled when the session is closed or dropped, so a call it is running (an
    /// endless kernel) ends and the worker can get to the close.
    cancel: Cancel,
}

#[derive(Default)]
struct Table {
    sessions: HashMap<u64, Entry>,
    next_token: u64,
}

struct Inner {
    backend: Arc<Backend>,
    /// The VM's: its sessions share the executor's caches with each other, not with other
    /// VMs' (see [`Tenant`]).
    tenant: Tenant,
    config: DeviceConfig,
    table: Mutex<Table>,
    live: Mutex<usize>,
    idle: Condvar,
    epoch: AtomicU64,
    /// Sessions whose shared guest pages the last stop of a queue could not log as written
    /// (a call of theirs still ran): see `state.rs`.
    unlogged: Mutex<Vec<u64>>,
}

impl Inner {
    fn table(&self) -> MutexGuard<'_, Table> {
        // Every update of the table is a single insert or remove: a poisoned lock still
        // holds a consistent map.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self) -> MutexGuard<'_, usize> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What happens after a job.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    OpenFailed,
    Closed,
}

/// The vcuda device's sessions, for one driver (one vhost-user connection).
pub struct Device {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("sessions", &self.session_count())
            .finish()
    }
}

impl Device {
    /// A device whose sessions run on `backend`.
    pub fn new(backend: Arc<Backend>, config: DeviceConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend,
                tenant: Tenant::unique(),
                config,
                table: Mutex::default(),
                live: Mutex::new(0),
                idle: Condvar::new(),
                epoch: AtomicU64::new(0),
                unlogged: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Open sessions.
    pub fn session_count(&self) -> usize {
        self.inner.table().sessions.len()
    }

    /// Session worker threads still running (closing ones included).
    pub fn live_workers(&self) -> usize {
        *self.inner.live()
    }

    /// Handles one chain popped from a request queue: validates it, then answers it or
    /// hands it to its session. `mem` is the guest memory the chain was popped with.
    pub fn handle_chain<M>(&self, mem: &Arc<Mem>, chain: DescriptorChain<M>, completion: Completion)
    where
        M: Deref<Target = Mem>,
    {
        let chain = match chain::parse(chain) {
            Ok(c) => Box::new(c),
            Err(rej) => {
                debug!("chain {} rejected: {}", completion.head(), rej.error);
                let len = error_reply(mem, &rej.reply, BAD_CHAIN, SEQ_MALFORMED);
                completion.complete(len);
                return;
            }
        };
        let id = chain.header.session;
        match chain.op {
            ChainOp::OpenSession => self.open(id, mem, chain, completion),
            ChainOp::CloseSession => {
                let entry = self.inner.table().sessions.remove(&id);
                match entry {
                    Some(e) => {
                        e.cancel.cancel();
                        self.send(e.worker, mem, chain, completion)
                    }
                    None => {
                        debug!("close of unknown session {id:#x}");
                        completion.complete(error_reply(mem, &chain.reply, BAD_CHAIN, 0));
                    }
                }
            }
            ChainOp::Submit
            | ChainOp::SubmitDetached
            | ChainOp::SharePages
            | ChainOp::UnsharePages => {
                // A copy of a small control area, for a call the queue thread may run itself;
                // the call then runs with these very bytes.
                let mut ctrl_buf = [0u8; SHORT_MAX_CTRL];
                let short_ctrl = self.short_ctrl(mem, &chain, &mut ctrl_buf);
                let mut t = self.inner.table();
                match t.sessions.get_mut(&id) {
                    Some(Entry {
                        worker: Worker::Thread(tx, shared),
                        ..
                    }) => {
                        if let Some(ctrl) = short_ctrl
                            && shared.queued.load(Ordering::SeqCst) == 0
                        {
                            let shared = shared.clone();
                            // The table's lock is held until the slot is ours, so a close
                            // or drop of the session comes after this call.
                            if let Ok(slot) = shared.slot.try_lock() {
                                drop(t);
                                run_here(&self.inner, slot, mem, &chain, completion, ctrl);
                                return;
                            }
                        }
                        shared.queued.fetch_add(1, Ordering::SeqCst);
                        if let Err(mpsc::SendError(job)) = tx.send(Job::Run {
                            mem: mem.clone(),
                            chain,
                            completion,
                        }) {
                            // The worker is gone (it panicked outside a call): forget it.
                            warn!("session {id:#x} lost its worker");
                            t.sessions.remove(&id);
                            drop(t);
                            fail_job(job, NO_SESSION);
                        }
                    }
                    Some(Entry {
                        worker: Worker::Inline(slot),
                        ..
                    }) => {
                        let (len, _) = run(&self.inner, slot, mem, &chain, &completion, None);
                        drop(t);
                        completion.complete(len);
                    }
                    None => {
                        drop(t);
                        debug!("submit to unknown session {id:#x}");
                        let len = error_reply(mem, &chain.reply, NO_SESSION, SEQ_MALFORMED);
                        completion.complete(len);
                    }
                }
            }
        }
    }

    /// The control area of `chain`, read into `buf`, if the queue thread may run the chain
    /// itself: queue-thread calls are on, sessions have workers, and the message is short.
    fn short_ctrl<'b>(&self, mem: &Mem, chain: &Chain, buf: &'b mut [u8]) -> Option<&'b [u8]> {
        let config = &self.inner.config;
        if config.queue_thread_calls != QueueThreadCalls::Short
            || config.threading != Threading::PerSession
        {
            return None;
        }
        let msg = chain.message.as_ref()?;
        let ctrl = buf.get_mut(..usize::try_from(msg.header.ctrl_len).ok()?)?;
        (msg.ctrl.read(mem, 0, ctrl)
            && short::is_short(self.inner.backend.kind(), &msg.header, ctrl))
        .then_some(&*ctrl)
    }

    fn open(&self, id: u64, mem: &Arc<Mem>, chain: Box<Chain>, completion: Completion) {
        let inner = &self.inner;
        let mut t = inner.table();
        if t.sessions.contains_key(&id) {
            drop(t);
            debug!("open of session {id:#x}, which is open");
            completion.complete(error_reply(mem, &chain.reply, BAD_CHAIN, 0));
            return;
        }
        let busy = match inner.config.threading {
            Threading::PerSession => *inner.live(),
            Threading::Inline => t.sessions.len(),
        };
        if busy >= inner.config.max_sessions {
            drop(t);
            warn!("session limit {} reached", inner.config.max_sessions);
            crate::metrics::vm_session_refused();
            completion.complete(error_reply(mem, &chain.reply, TOO_MANY_SESSIONS, 0));
            return;
        }
        let token = t.next_token;
        t.next_token += 1;
        let epoch = inner.epoch.load(Ordering::SeqCst);
        match inner.config.threading {
            Threading::Inline => {
                let cancel = Cancel::default();
                let mut slot = Box::new(Slot::new(cancel.clone()));
                let (len, flow) = run(inner, &mut slot, mem, &chain, &completion, None);
                if flow == Flow::Continue {
                    t.sessions.insert(
                        id,
                        Entry {
                            token,
                            epoch,
                            worker: Worker::Inline(slot),
                            cancel,
                        },
                    );
                }
                drop(t);
                completion.complete(len);
            }
            Threading::PerSession => {
                let cancel = Cancel::default();
                // The open below is its first job.
                let Some((tx, shared)) =
                    start_worker(inner, id, token, Slot::new(cancel.clone()), 1)
                else {
                    drop(t);
                    completion.complete(error_reply(mem, &chain.reply, TOO_MANY_SESSIONS, 0));
                    return;
                };
                // The new worker has not read its channel yet, so this cannot fail.
                let _ = tx.send(Job::Run {
                    mem: mem.clone(),
                    chain,
                    completion,
                });
                t.sessions.insert(
                    id,
                    Entry {
                        token,
                        epoch,
                        worker: Worker::Thread(tx, shared),
                        cancel,
                    },
                );
            }
        }
    }

    fn send(&self, worker: Worker, mem: &Arc<Mem>, chain: Box<Chain>, completion: Completion) {
        match worker {
            Worker::Thread(tx, shared) => {
                shared.queued.fetch_add(1, Ordering::SeqCst);
                if let Err(mpsc::SendError(job)) = tx.send(Job::Run {
                    mem: mem.clone(),
                    chain,
                    completion,
                }) {
                    fail_job(job, NO_SESSION);
                }
            }
            Worker::Inline(mut slot) => {
                let (len, _) = run(&self.inner, &mut slot, mem, &chain, &completion, None);
                completion.complete(len);
            }
        }
    }

    /// Starts a new epoch: sessions opened from now on belong to it. Returns the new epoch.
    pub fn next_epoch(&self) -> u64 {
        self.inner.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Destroys the sessions opened before epoch `epoch` (everything they own is freed once
    /// their queued chains have run). Returns how many.
    pub fn drop_sessions_before(&self, epoch: u64) -> usize {
        let old: Vec<Entry> = {
            let mut t = self.inner.table();
            let ids: Vec<u64> = t
                .sessions
                .iter()
                .filter(|(_, e)| e.epoch < epoch)
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| t.sessions.remove(id)).collect()
        };
        let n = old.len();
        for e in old {
            e.cancel.cancel();
            if let Worker::Thread(tx, _) = e.worker {
                let _ = tx.send(Job::Shutdown);
            }
        }
        n
    }

    /// Destroys every session. Returns how many.
    pub fn drop_all_sessions(&self) -> usize {
        self.drop_sessions_before(u64::MAX)
    }

    /// Waits up to `timeout` for every session worker to end; true if they did.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut live = self.inner.live();
        while *live > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            live = match self.inner.idle.wait_timeout(live, deadline - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // Workers hold the device's shared state; closing their channels ends them.
        self.drop_all_sessions();
    }
}

/// Starts the worker thread of session `id` (its `token`) over `slot`, with `queued` jobs
/// about to be sent; `None` if no thread can be started.
fn start_worker(
    inner: &Arc<Inner>,
    id: u64,
    token: u64,
    slot: Slot,
    queued: usize,
) -> Option<(Sender<Job>, Arc<Shared>)> {
    let (tx, rx) = mpsc::channel();
    *inner.live() += 1;
    let worker_inner = inner.clone();
    let shared = Arc::new(Shared {
        slot: Mutex::new(slot),
        queued: AtomicUsize::new(queued),
    });
    let worker_shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("vcuda-s{id:x}"))
        .spawn(move || worker_main(worker_inner, id, token, rx, worker_shared));
    match spawned {
        Ok(_) => Some((tx, shared)),
        Err(e) => {
            error!("cannot start a session thread: {e}");
            *inner.live() -= 1;
            None
        }
    }
}

/// Ends a job that cannot run with an error reply.
fn fail_job(job: Job, status: CudaStatus) {
    if let Job::Run {
        mem,
        chain,
        completion,
    } = job
    {
        let len = error_reply(&mem, &chain.reply, status, SEQ_MALFORMED);
        completion.complete(len);
    }
}

struct LiveGuard(Arc<Inner>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let mut live = self.0.live();
        *live = live.saturating_sub(1);
        if *live == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// Frees the session on its worker's thread when the worker ends, before the worker counts
/// itself out.
struct EndSession(Arc<Shared>);

impl Drop for EndSession {
    fn drop(&mut self) {
        // A queue thread running a call holds the slot; the session ends after that call.
        let session = self.0.slot().session.take();
        drop(session);
    }
}

fn worker_main(inner: Arc<Inner>, id: u64, token: u64, rx: Receiver<Job>, shared: Arc<Shared>) {
    // Dropped in reverse order: the session is freed, then the worker counted out.
    let _live = LiveGuard(inner.clone());
    let _end = EndSession(shared.clone());
    for job in rx {
        let Job::Run {
            mem,
            chain,
            completion,
        } = job
        else {
            debug!("session {id:#x} dropped");
            return;
        };
        let flow = {
            let mut slot = shared.slot();
            let (len, flow) = run(&inner, &mut slot, &mem, &chain, &completion, None);
            completion.complete(len);
            flow
        };
        // Only now may a queue thread run the session's next chain: this one completed.
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        match flow {
            Flow::Continue => {}
            Flow::Closed => return,
            Flow::OpenFailed => {
                // Forget the id (unless it was closed and reopened meanwhile); chains still
                // queued get errors until the channel closes.
                let mut t = inner.table();
                if t.sessions.get(&id).is_some_and(|e| e.token == token) {
                    t.sessions.remove(&id);
                }
            }
        }
    }
}

/// Runs a short chain on the queue thread, with the session's slot held, and completes it.
/// A panic outside the session's own guard is caught here too: it must not end the queue
/// thread. The session is then dropped and the chain returned with nothing written.
fn run_here(
    inner: &Inner,
    mut slot: MutexGuard<'_, Slot>,
    mem: &Mem,
    chain: &Chain,
    completion: Completion,
    ctrl: &[u8],
) {
    let r = catch_unwind(AssertUnwindSafe(|| {
        run(inner, &mut slot, mem, chain, &completion, Some(ctrl))
    }));
    match r {
        Ok((len, _)) => {
            drop(slot);
            completion.complete(len);
        }
        Err(_) => {
            error!("a call on a queue thread panicked; session dropped");
            slot.session = None;
            drop(slot);
            drop(completion);
        }
    }
}

/// Runs one chain on a session slot: the used length and what follows. A chain that is
/// no longer current (its ring stopped meanwhile) is not run and nothing is written; an
/// open or close still takes effect. A call whose ring stops while it runs does not write
/// its reply. `ctrl` is the message's control area if the caller read it already.
fn run(
    inner: &Inner,
    slot: &mut Slot,
    mem: &Mem,
    chain: &Chain,
    completion: &Completion,
    ctrl: Option<&[u8]>,
) -> (u32, Flow) {
    let current = completion.is_current();
    let none = Area::default();
    let reply = if current { &chain.reply } else { &none };
    match chain.op {
        ChainOp::OpenSession => match inner
            .backend
            .new_session_with(slot.cancel.clone(), inner.tenant)
        {
            Ok(mut s) => {
                s.share_guest_pages();
                debug!("session {:#x} opened", chain.header.session);
                slot.session = Some(s);
                (status_reply(mem, reply, status::SUCCESS), Flow::Continue)
            }
            Err(s) => {
                warn!("cannot start a session: {s}");
                (status_reply(mem, reply, s.code()), Flow::OpenFailed)
            }
        },
        ChainOp::CloseSession => {
            // Frees everything the session owns before the driver hears of it.
            slot.session = None;
            debug!("session {:#x} closed", chain.header.session);
            (status_reply(mem, reply, status::SUCCESS), Flow::Closed)
        }
        ChainOp::Submit | ChainOp::SubmitDetached if current => {
            (submit(slot, mem, chain, completion, ctrl), Flow::Continue)
        }
        ChainOp::SharePages | ChainOp::UnsharePages if current => {
            let (st, payload) = pages(slot, mem, chain);
            let len = completion.write_if_current(|| {
                let mut b = ReplyBuilder::new();
                b.push(RecordKind::Reply, 0, st, &[&payload], 0);
                write_reply(mem, &chain.reply, b.finish())
            });
            (len, Flow::Continue)
        }
        ChainOp::Submit | ChainOp::SubmitDetached | ChainOp::SharePages | ChainOp::UnsharePages => {
            debug!("chain of a stopped ring dropped");
            (0, Flow::Continue)
        }
    }
}

/// Runs a `SharePages` or `UnsharePages` chain: the status of its reply and the payload
/// (the region's handle for `SharePages`).
fn pages(slot: &mut Slot, mem: &Mem, chain: &Chain) -> (CudaStatus, Vec<u8>) {
    let (Some(s), Some(op)) = (slot.session.as_mut(), chain.pages.as_ref()) else {
        return (NO_SESSION, Vec::new());
    };
    let r = match op {
        PagesOp::Share { req, table } => PagesOp::extents(req, table, mem)
            .map_err(|e| {
                debug!("SharePages refused: {e}");
                status::INVALID_VALUE
            })
            .and_then(|extents| {
                let pieces = super::pages::pieces(mem, &extents).map_err(|why| {
                    debug!("SharePages refused: {why}");
                    status::INVALID_VALUE
                })?;
                let gpa: Vec<(u64, u64)> = extents.iter().map(|e| (e.addr, e.len)).collect();
                let h = s.share_pieces(&pieces, &gpa).map_err(|e| e.code())?;
                debug!(
                    "{} bytes of guest pages ({} extents) shared as region {h}",
                    req.len,
                    extents.len()
                );
                Ok(h.to_le_bytes().to_vec())
            }),
        PagesOp::Unshare(req) => s
            .unshare_region(req.handle)
            .map(|()| Vec::new())
            .map_err(|e| e.code()),
    };
    match r {
        Ok(p) => (status::SUCCESS, p),
        Err(st) => (st, Vec::new()),
    }
}

fn submit(
    slot: &mut Slot,
    mem: &Mem,
    chain: &Chain,
    completion: &Completion,
    read: Option<&[u8]>,
) -> u32 {
    let Slot {
        session,
        reply,
        ctrl,
        ..
    } = slot;
    let (Some(s), Some(msg)) = (session.as_mut(), chain.message.as_ref()) else {
        return error_reply(mem, &chain.reply, NO_SESSION, SEQ_MALFORMED);
    };
    let ctrl: &[u8] = match read {
        Some(c) => c,
        None => {
            // ctrl_len <= MAX_CTRL_LEN (checked when the chain was parsed).
            ctrl.clear();
            ctrl.resize(msg.header.ctrl_len as usize, 0);
            if !msg.ctrl.read(mem, 0, ctrl) {
                return error_reply(mem, &chain.reply, BAD_CHAIN, SEQ_MALFORMED);
            }
            ctrl
        }
    };
    let (Some(out), Some(inp)) = (msg.out.slices(mem), msg.inp.slices(mem)) else {
        return error_reply(mem, &chain.reply, BAD_CHAIN, SEQ_MALFORMED);
    };
    let (out, inp) = (DataSegs::untracked(out), DataSegs::untracked(inp));
    let capacity = usize::try_from(chain.reply.len()).unwrap_or(usize::MAX);
    let detached = chain.op == ChainOp::SubmitDetached;
    let r = catch_unwind(AssertUnwindSafe(|| {
        if detached {
            // No in data (checked when the chain was parsed), and no reply: nobody reads it.
            s.handle_detached(&msg.header, ctrl, &out, reply)
        } else {
            s.handle(&msg.header, ctrl, &out, &inp, reply, capacity)
        }
    }));
    if r.is_err() {
        error!("a session panicked; session dropped");
        *session = None;
        return error_reply(mem, &chain.reply, status::UNKNOWN, SEQ_MALFORMED);
    }
    if detached {
        return 0;
    }
    let mut in_bytes = 0u64;
    for &(offset, len) in s.in_ranges() {
        // The executor wrote these bytes through raw pointers (or by DMA).
        msg.inp.sub(offset, len).mark_dirty(mem);
        in_bytes = in_bytes.saturating_add(len);
    }
    // The ring may have stopped while the call ran (a driver reset under a long kernel): the
    // driver may have reused the reply area since, so nothing is written then.
    let written = completion.write_if_current(|| write_reply(mem, &chain.reply, reply.finish()));
    u32::try_from(u64::from(written).saturating_add(in_bytes)).unwrap_or(u32::MAX)
}

/// Writes `bytes` (clipped) at the start of `area`; the bytes written.
fn write_reply(mem: &Mem, area: &Area, bytes: &[u8]) -> u32 {
    let n = usize::try_from(area.len()).map_or(bytes.len(), |cap| bytes.len().min(cap));
    if area.write(mem, 0, &bytes[..n]) {
        // n <= reply_capacity, a u32.
        n as u32
    } else {
        0
    }
}

/// A reply with one record `{seq, status}`; the bytes written (0 if `area` is too small).
pub fn error_reply(mem: &Mem, area: &Area, st: CudaStatus, seq: u64) -> u32 {
    if area.len() < chain::ERROR_REPLY_LEN {
        return 0;
    }
    let mut b = ReplyBuilder::new();
    b.push(RecordKind::Reply, seq, st, &[], 0);
    write_reply(mem, area, b.finish())
}

fn status_reply(mem: &Mem, area: &Area, st: CudaStatus) -> u32 {
    error_reply(mem, area, st, 0)
}
