// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The [`VhostUserBackend`] implementation: features, configuration space, memory table,
//! vring events and the ring lifecycle (stop, restart, reset), around a [`Device`].
//!
//! # Threads
//!
//! vhost-user-backend runs one thread for the frontend's messages and, as
//! [`VhostUserBackend::queues_per_thread`] asks here, one epoll thread per request queue.
//! A queue thread pops every available chain, validates it and hands it to its session's
//! worker ([`super::device`]); workers complete chains through a [`RingHandle`], which adds
//! them to the used ring under the vring's lock and signals the call eventfd when the
//! driver's event index asks for it. A short call on an idle session runs on the queue
//! thread itself ([`super::device::QueueThreadCalls`]).
//!
//! # Polling
//!
//! With a poll time ([`VhostUserCuda::with_poll`], `--poll-us`), a queue thread that handled
//! its chains keeps the guest's kicks suppressed and polls the available ring, handling
//! every chain that appears, until the poll time has passed without one; then it enables
//! kicks again, checks the ring once more (a chain posted just before would get no kick)
//! and goes back to epoll. The cost: while the guest keeps posting chains closer together
//! than the poll time, the queue thread spins on a core; an idle guest costs nothing but
//! the poll time after its last chain. The gain: the guest's kick (a VM exit and an
//! eventfd write) and the queue thread's wake-up are saved on each chain.
//!
//! # Ring lifecycle
//!
//! Each queue counts the chains it popped and has not completed, and carries a generation
//! number that every popped chain takes as its completion ticket.
//! - `GET_VRING_BASE` ([`VhostUserBackend::stop_vring`]) waits (up to [`STOP_TIMEOUT`]) for
//!   the queue's chains in flight, then bumps the generation, so a chain popped before is
//!   not run if it has not started, writes no reply and never reaches the used ring, and
//!   starts a new session epoch.
//! - When a stopped queue runs again, its position tells a pause from a reset: QEMU restarts
//!   a paused device where it stopped, a driver that reset the device starts over. A queue
//!   that restarts elsewhere means the guest reset the device: every session opened before
//!   the stop is destroyed.
//! - `RESET_DEVICE` and the end of the connection destroy every session.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use log::{debug, info, warn};
use vcuda_protocol::PROTOCOL_VERSION;
use vcuda_protocol::virtio::{
    CONFIG_F_DETACHED_SUBMIT, CONFIG_MAGIC, MAX_CHAIN_DESCRIPTORS, QUEUE_SIZE, VirtioCudaConfig,
};
use vcuda_protocol::{MAX_CTRL_LEN, MAX_DATA_LEN, MessageHeader};
use vhost::vhost_user::message::{
    VhostTransferStateDirection, VhostTransferStatePhase, VhostUserProtocolFeatures,
    VhostUserVirtioFeatures,
};
use vhost_user_backend::bitmap::BitmapMmapRegion;
use vhost_user_backend::{VhostUserBackend, VringRwLock, VringT};
use virtio_bindings::bindings::virtio_config::VIRTIO_F_VERSION_1;
use virtio_bindings::bindings::virtio_ring::{
    VIRTIO_RING_F_EVENT_IDX, VIRTIO_RING_F_INDIRECT_DESC,
};
use virtio_queue::{QueueOwnedT, QueueT};
use vm_memory::{GuestAddressSpace, GuestMemoryAtomic, GuestMemoryBackend, GuestMemoryRegion};
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    EventConsumer, EventFlag, EventNotifier, new_event_consumer_and_notifier,
};
use zerocopy::IntoBytes;

use super::chain::Mem;
use super::device::{Completion, Device, DeviceConfig, UsedRing};

/// The guest memory as vhost-user-backend shares it between threads.
pub type AtomicMem = GuestMemoryAtomic<Mem>;
/// A vring.
pub type Vring = VringRwLock<AtomicMem>;

/// How long `GET_VRING_BASE` waits for a queue's chains in flight.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a queue's stop waits for a session's worker to let go of it (see `stop_vring`).
const MARK_WAIT: Duration = Duration::from_millis(100);
/// How long the end of a connection waits for session workers to finish.
pub const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest poll time ([`VhostUserCuda::with_poll`]).
pub const MAX_POLL: Duration = Duration::from_secs(1);

/// The virtio features the device offers.
pub const DEVICE_FEATURES: u64 = (1 << VIRTIO_F_VERSION_1)
    | (1 << VIRTIO_RING_F_EVENT_IDX)
    | (1 << VIRTIO_RING_F_INDIRECT_DESC)
    | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()
    // Dirty-page logging, which QEMU requires of a migratable vhost-user device.
    | VhostUserVirtioFeatures::LOG_ALL.bits();

/// The vhost-user protocol features the backend offers.
pub fn protocol_features() -> VhostUserProtocolFeatures {
    VhostUserProtocolFeatures::CONFIG
        | VhostUserProtocolFeatures::REPLY_ACK
        | VhostUserProtocolFeatures::MQ
        | VhostUserProtocolFeatures::RESET_DEVICE
        // Live migration: the dirty-page log and the device state transfer.
        | VhostUserProtocolFeatures::LOG_SHMFD
        | VhostUserProtocolFeatures::DEVICE_STATE
}

/// The configuration space for `queues` request queues.
pub fn config_space(queues: u32) -> VirtioCudaConfig {
    VirtioCudaConfig {
        magic: CONFIG_MAGIC,
        protocol_version: u32::from(PROTOCOL_VERSION),
        num_request_queues: queues,
        max_chain_descriptors: MAX_CHAIN_DESCRIPTORS,
        max_ctrl_len: MAX_CTRL_LEN + size_of::<MessageHeader>() as u32,
        features: CONFIG_F_DETACHED_SUBMIT,
        max_data_len: MAX_DATA_LEN,
    }
}

/// One request queue's bookkeeping.
#[derive(Default)]
struct QueueState {
    /// Chains popped and not yet completed.
    inflight: Mutex<usize>,
    drained: Condvar,
    /// Completion ticket of chains popped now.
    generation: AtomicU64,
    /// Held while a completion checks its ticket and touches the used ring, and while the
    /// generation changes.
    gate: Mutex<()>,
    /// The vring, once seen (vrings live as long as the connection).
    vring: Mutex<Option<Vring>>,
    /// Where the queue stood when last stopped, until it runs again.
    stopped_at: Mutex<Option<u16>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // These mutexes guard plain values that every critical section leaves consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl QueueState {
    /// Counts a popped chain in; its ticket.
    fn begin(&self) -> u64 {
        *lock(&self.inflight) += 1;
        self.generation.load(Ordering::SeqCst)
    }

    /// Waits until no chain is in flight; false on timeout.
    fn drain(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut n = lock(&self.inflight);
        while *n > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            n = match self.drained.wait_timeout(n, deadline - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }

    /// Makes every chain popped so far unable to touch the used ring.
    fn invalidate(&self) {
        let _g = lock(&self.gate);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// Completes chains of one queue.
pub struct RingHandle {
    vring: Vring,
    state: Arc<QueueState>,
}

impl UsedRing for RingHandle {
    fn is_current(&self, ticket: u64) -> bool {
        ticket == self.state.generation.load(Ordering::SeqCst)
    }

    fn write_if_current(&self, ticket: u64, write: &mut dyn FnMut()) -> bool {
        // `invalidate` takes the gate too, so the ring cannot stop between the check and
        // the write.
        let _g = lock(&self.state.gate);
        let current = ticket == self.state.generation.load(Ordering::SeqCst);
        if current {
            write();
        }
        current
    }

    fn complete(&self, head: u16, len: u32, ticket: u64) {
        {
            let _g = lock(&self.state.gate);
            if ticket == self.state.generation.load(Ordering::SeqCst) {
                match self.vring.add_used(head, len) {
                    Ok(()) => {
                        if self.vring.needs_notification().unwrap_or(true)
                            && let Err(e) = self.vring.signal_used_queue()
                        {
                            debug!("cannot signal the used queue: {e}");
                        }
                    }
                    Err(e) => warn!("cannot add chain {head} to the used ring: {e}"),
                }
            } else {
                debug!("chain {head} completed after its ring stopped; dropped");
            }
        }
        let mut n = lock(&self.state.inflight);
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.state.drained.notify_all();
        }
    }
}

/// The vcuda vhost-user backend for one connection (one VM).
pub struct VhostUserCuda {
    device: Device,
    backend: Arc<crate::Backend>,
    queues: Vec<Arc<QueueState>>,
    rings: Vec<Mutex<Option<Arc<RingHandle>>>>,
    mem: AtomicMem,
    /// The guest memory map the executor was last told about, kept mapped until the
    /// executor has been told about the next one (it may have registered these pages with
    /// the driver, and unregisters them only then).
    told: Mutex<Option<Arc<Mem>>>,
    event_idx: AtomicBool,
    config: VirtioCudaConfig,
    /// How long a queue thread polls its ring after the last chain (zero: never).
    poll: Duration,
    /// The device state transfer under way, if any (a migration).
    transfer: Mutex<Option<super::migrate::Transfer>>,
    /// The migration pre-copy of device memory, if configured.
    precopy: Option<Arc<super::Precopy>>,
}

impl std::fmt::Debug for VhostUserCuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VhostUserCuda")
            .field("queues", &self.queues.len())
            .field("device", &self.device)
            .finish()
    }
}

impl VhostUserCuda {
    /// A backend with `queues` request queues whose sessions run on `backend`; `mem` must
    /// be the guest memory handed to the daemon.
    pub fn new(
        backend: Arc<crate::Backend>,
        queues: u32,
        device: DeviceConfig,
        mem: AtomicMem,
    ) -> Self {
        let n = queues as usize;
        Self {
            device: Device::new(backend.clone(), device),
            backend,
            queues: (0..n).map(|_| Arc::default()).collect(),
            rings: (0..n).map(|_| Mutex::new(None)).collect(),
            mem,
            told: Mutex::new(None),
            event_idx: AtomicBool::new(false),
            config: config_space(queues),
            poll: Duration::ZERO,
            transfer: Mutex::new(None),
            precopy: None,
        }
    }

    /// Takes part in a migration's pre-copy of device memory through `precopy`.
    pub fn with_precopy(mut self, precopy: Option<Arc<super::Precopy>>) -> Self {
        self.precopy = precopy;
        self
    }

    /// Makes queue threads poll their ring for `poll` after the last chain before they wait
    /// for a kick again (see the module's documentation for the cost); at most
    /// [`MAX_POLL`].
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll.min(MAX_POLL);
        self
    }

    /// The device core.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The connection ended: chains in flight never reach the used ring, every session is
    /// destroyed and the executor forgets the guest's memory.
    pub fn disconnect(&self) {
        for q in &self.queues {
            q.invalidate();
        }
        let n = self.device.drop_all_sessions();
        if !self.device.wait_idle(DISCONNECT_TIMEOUT) {
            warn!("session workers still busy after the connection ended");
        }
        if n > 0 {
            info!("connection ended; {n} sessions destroyed");
        }
        self.backend.guest_memory_changed(&[]);
        *lock(&self.told) = None;
    }

    fn ring(&self, index: usize, vring: &Vring) -> Option<Arc<RingHandle>> {
        let state = self.queues.get(index)?;
        let mut slot = lock(self.rings.get(index)?);
        Some(
            slot.get_or_insert_with(|| {
                *lock(&state.vring) = Some(vring.clone());
                Arc::new(RingHandle {
                    vring: vring.clone(),
                    state: state.clone(),
                })
            })
            .clone(),
        )
    }

    /// A stopped queue runs again (`now` is its position): if it restarted elsewhere, the
    /// guest reset the device. Called with the vring locked, before popping, so no chain of
    /// a restarted ring is handled before this check.
    fn check_restart(&self, index: usize, now: u16) {
        let Some(state) = self.queues.get(index) else {
            return;
        };
        let Some(stopped) = lock(&state.stopped_at).take() else {
            return;
        };
        if now != stopped {
            let epoch = self.device.next_epoch();
            let n = self.device.drop_sessions_before(epoch);
            info!(
                "queue {index} restarted at {now}, not {stopped}: device reset, {n} sessions destroyed"
            );
        }
    }

    /// Handles every chain available on queue `index`. `false` if the ring cannot be read
    /// (not set up, stopped, or an available index the driver made up): polling it again
    /// would spin without progress.
    fn process(&self, index: usize, vring: &Vring) -> bool {
        let Some(ring) = self.ring(index, vring) else {
            return false;
        };
        let mem = self.mem.memory().into_inner();
        let chains: Vec<_> = {
            let mut v = vring.get_mut();
            let queue = v.get_queue_mut();
            if !queue.ready() {
                // Kicks can come before the ring is set up, or after it stopped.
                return false;
            }
            self.check_restart(index, queue.next_avail());
            match queue.iter(mem.clone()) {
                Ok(iter) => iter.map(|c| (c, ring.state.begin())).collect(),
                Err(e) => {
                    debug!("queue {index} unusable: {e}");
                    return false;
                }
            }
        };
        let ring: Arc<dyn UsedRing> = ring;
        for (chain, ticket) in chains {
            let completion = Completion::new(ring.clone(), chain.head_index(), ticket);
            self.device.handle_chain(&mem, chain, completion);
        }
        true
    }

    /// Handles queue `index` after a kick: every available chain, then (with a poll time)
    /// every chain that appears while it polls. `before_enable` runs each time just before
    /// kicks are enabled again (tests post a chain there: the race a re-check must catch).
    fn serve(&self, index: usize, vring: &Vring, mut before_enable: impl FnMut()) {
        if !self.event_idx.load(Ordering::SeqCst) && self.poll.is_zero() {
            self.process(index, vring);
            return;
        }
        // A ring whose available index the driver made up stays "available" without a
        // chain to take: stop (until the next kick) instead of spinning on it.
        // Keep going until no chain arrived while notifications were off. (Without
        // EVENT_IDX, disabling sets VRING_USED_F_NO_NOTIFY; with it, the driver kicks only
        // when it passes `avail_event`, which stays behind until re-enabled.)
        loop {
            if vring.disable_notification().is_err() {
                break;
            }
            let readable =
                self.process(index, vring) && (self.poll.is_zero() || self.poll_ring(index, vring));
            before_enable();
            match vring.enable_notification() {
                Ok(true) if readable => continue,
                _ => break,
            }
        }
    }

    /// Whether the driver made chains available that the queue has not taken, on a ring
    /// that runs.
    fn has_avail(&self, vring: &Vring) -> bool {
        let mem = self.mem.memory();
        let v = vring.get_ref();
        let q = v.get_queue();
        q.ready()
            && q.avail_idx(&*mem, Ordering::Acquire)
                .is_ok_and(|idx| idx.0 != q.next_avail())
    }

    /// Polls the ring (kicks suppressed by the caller) and handles the chains that appear,
    /// until `self.poll` passed without one or the ring stopped; `false` if the ring cannot
    /// be read (see [`Self::process`]).
    fn poll_ring(&self, index: usize, vring: &Vring) -> bool {
        let mut last = Instant::now();
        let mut spins = 0u32;
        loop {
            if self.has_avail(vring) {
                if !self.process(index, vring) {
                    return false;
                }
                last = Instant::now();
                continue;
            }
            // Reading the clock costs more than a look at the ring.
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(16)
                && (last.elapsed() >= self.poll || !vring.get_ref().get_queue().ready())
            {
                return true;
            }
            std::hint::spin_loop();
        }
    }
}

impl VhostUserBackend for VhostUserCuda {
    type Bitmap = BitmapMmapRegion;
    type Vring = Vring;

    fn num_queues(&self) -> usize {
        self.queues.len()
    }

    fn max_queue_size(&self) -> usize {
        usize::from(QUEUE_SIZE)
    }

    fn features(&self) -> u64 {
        debug!("GET_FEATURES");
        DEVICE_FEATURES
    }

    fn protocol_features(&self) -> VhostUserProtocolFeatures {
        debug!("GET_PROTOCOL_FEATURES");
        protocol_features()
    }

    fn acked_features(&self, features: u64) {
        info!("virtio features acked: {features:#x}");
    }

    fn set_event_idx(&self, enabled: bool) {
        self.event_idx.store(enabled, Ordering::SeqCst);
    }

    fn get_config(&self, offset: u32, size: u32) -> Vec<u8> {
        debug!("GET_CONFIG {offset}+{size}");
        let bytes = self.config.as_bytes();
        let start = offset as usize;
        match start.checked_add(size as usize) {
            Some(end) if end <= bytes.len() => bytes[start..end].to_vec(),
            _ => {
                warn!("config read {offset}+{size} outside the config space");
                Vec::new()
            }
        }
    }

    fn reset_device(&self) {
        for q in &self.queues {
            q.invalidate();
        }
        let n = self.device.drop_all_sessions();
        info!("device reset; {n} sessions destroyed");
    }

    fn update_memory(&self, mem: AtomicMem) -> io::Result<()> {
        let guard = mem.memory();
        let regions: Vec<(usize, usize)> = GuestMemoryBackend::iter(&*guard)
            .map(|r| (r.as_ptr() as usize, r.len() as usize))
            .collect();
        info!(
            "guest memory: {} regions, {} MiB",
            regions.len(),
            regions.iter().map(|r| r.1).sum::<usize>() >> 20
        );
        // The old map stays mapped (held in `told`) until the executor has moved off it.
        let mut told = lock(&self.told);
        self.backend.guest_memory_changed(&regions);
        // Sessions that came in a migration share the guest's pages again, now mapped here.
        self.device.restore_guest_pages(&guard);
        *told = Some(guard.into_inner());
        Ok(())
    }

    fn queues_per_thread(&self) -> Vec<u64> {
        // One thread per queue (at most MAX_REQUEST_QUEUES = 16 < 64).
        (0..self.queues.len()).map(|i| 1u64 << i).collect()
    }

    fn exit_event(&self, _thread_index: usize) -> Option<(EventConsumer, EventNotifier)> {
        new_event_consumer_and_notifier(EventFlag::NONBLOCK).ok()
    }

    fn stop_vring(&self, queue_index: u32) -> io::Result<()> {
        let index = queue_index as usize;
        let Some(state) = self.queues.get(index) else {
            return Ok(());
        };
        if !state.drain(STOP_TIMEOUT) {
            warn!("queue {index} stopped with chains still running; they will not be completed");
        }
        // Kernels and copies wrote shared guest pages behind vm-memory's back: a migration's
        // last copy of the guest's RAM takes them again. Once the last queue stopped every
        // call has ended (each queue's drained), so that stop logs every session; a call still
        // running on another queue is not waited for here (only the moment a worker takes to
        // let go of its session after completing).
        self.device
            .mark_shared_dirty(&self.mem.memory(), Instant::now() + MARK_WAIT);
        state.invalidate();
        self.device.next_epoch();
        if let Some(v) = lock(&state.vring).as_ref() {
            *lock(&state.stopped_at) = Some(v.queue_next_avail());
        }
        Ok(())
    }

    fn set_device_state_fd(
        &self,
        direction: VhostTransferStateDirection,
        phase: VhostTransferStatePhase,
        file: File,
    ) -> io::Result<Option<File>> {
        let mut t = lock(&self.transfer);
        if t.is_some() {
            return Err(io::Error::other("a device state transfer is under way"));
        }
        *t = Some(super::migrate::start(
            &self.device,
            self.precopy.clone(),
            direction,
            phase,
            file,
        )?);
        Ok(None)
    }

    fn check_device_state(&self) -> io::Result<()> {
        let t = lock(&self.transfer)
            .take()
            .ok_or_else(|| io::Error::other("no device state transfer"))?;
        super::migrate::finish(&self.device, self.precopy.as_deref(), t)
    }

    fn handle_event(
        &self,
        device_event: u16,
        evset: EventSet,
        vrings: &[Vring],
        thread_id: usize,
    ) -> io::Result<()> {
        // Errors returned here end the queue's thread: never return one for guest input.
        if evset != EventSet::IN {
            warn!("queue event {evset:?} ignored");
            return Ok(());
        }
        let Some(vring) = vrings.get(usize::from(device_event)) else {
            return Ok(());
        };
        // One queue per thread: the thread index is the queue index.
        self.serve(thread_id, vring, || {});
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU16;

    use vm_memory::{Bytes, GuestAddress};

    use super::*;
    use crate::executor::cpu::{CpuConfig, CpuFactory};

    const SIZE: u16 = 16;
    const DESC: u64 = 0;
    const AVAIL: u64 = 16 * SIZE as u64;
    const USED: u64 = 0x1000;
    /// A 16-byte buffer of zeros: a chain header with a zero reply capacity, so every
    /// chain is answered at once (with `used.len` 0) on the queue thread.
    const BUF: u64 = 0x2000;

    /// A device with one queue over 64 KiB of guest memory, its ring set up and running.
    fn device(event_idx: bool, poll: Duration) -> (VhostUserCuda, Vring, AtomicMem) {
        let mem = AtomicMem::new(Mem::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap());
        let factory = Arc::new(CpuFactory::new(CpuConfig {
            memory: 16 << 20,
            threads: 1,
            ..Default::default()
        }));
        let cuda = VhostUserCuda::new(
            crate::Backend::new(factory),
            1,
            DeviceConfig::default(),
            mem.clone(),
        )
        .with_poll(poll);
        cuda.set_event_idx(event_idx);
        let vring = Vring::new(mem.clone(), SIZE).unwrap();
        vring.set_queue_size(SIZE);
        vring.set_queue_info(DESC, AVAIL, USED).unwrap();
        vring.set_queue_event_idx(event_idx);
        vring.set_queue_ready(true);
        vring.set_enabled(true);
        (cuda, vring, mem)
    }

    /// The driver: posts one-descriptor chains.
    struct Driver {
        mem: AtomicMem,
        idx: AtomicU16,
    }

    impl Driver {
        fn post(&self) {
            let mem = self.mem.memory();
            let idx = self.idx.load(Ordering::SeqCst);
            let slot = idx % SIZE;
            let desc = virtio_queue::desc::RawDescriptor::from(
                virtio_queue::desc::split::Descriptor::new(BUF, 16, 0, 0),
            );
            mem.write_obj(desc, GuestAddress(DESC + 16 * u64::from(slot)))
                .unwrap();
            mem.write_obj(slot, GuestAddress(AVAIL + 4 + 2 * u64::from(slot)))
                .unwrap();
            let next = idx.wrapping_add(1);
            mem.store(next, GuestAddress(AVAIL + 2), Ordering::Release)
                .unwrap();
            self.idx.store(next, Ordering::SeqCst);
        }

        fn used(&self) -> u16 {
            self.mem
                .memory()
                .load(GuestAddress(USED + 2), Ordering::Acquire)
                .unwrap()
        }

        fn avail_event(&self) -> u16 {
            self.mem
                .memory()
                .load(
                    GuestAddress(USED + 4 + 8 * u64::from(SIZE)),
                    Ordering::Acquire,
                )
                .unwrap()
        }

        fn used_flags(&self) -> u16 {
            self.mem
                .memory()
                .load(GuestAddress(USED), Ordering::Acquire)
                .unwrap()
        }
    }

    /// A chain posted after the last look at the ring and before kicks are enabled again
    /// gets no kick from the driver (kicks are off); the re-check after enabling must find
    /// it, with and without EVENT_IDX, polling or not.
    #[test]
    fn a_chain_posted_as_kicks_are_enabled_again_is_not_lost() {
        for (event_idx, poll) in [
            (true, Duration::ZERO),
            (true, Duration::from_micros(50)),
            (false, Duration::from_micros(50)),
        ] {
            let (cuda, vring, mem) = device(event_idx, poll);
            let driver = Driver {
                mem,
                idx: AtomicU16::new(0),
            };
            driver.post();
            let mut posted = false;
            cuda.serve(0, &vring, || {
                if !posted {
                    posted = true;
                    driver.post();
                }
            });
            assert_eq!(driver.used(), 2, "event_idx {event_idx}, poll {poll:?}");
            // Kicks are on again: at the next chain (EVENT_IDX), or no NO_NOTIFY flag.
            if event_idx {
                assert_eq!(driver.avail_event(), 2);
            } else {
                assert_eq!(driver.used_flags(), 0);
            }
        }
    }

    /// A driver that makes up its available index (far past the chains it could have
    /// posted) does not keep a polling queue thread spinning: it stops at once, with and
    /// without EVENT_IDX.
    #[test]
    fn a_made_up_available_index_ends_the_poll() {
        for event_idx in [true, false] {
            let (cuda, vring, mem) = device(event_idx, Duration::from_secs(30));
            mem.memory()
                .store(3 * SIZE, GuestAddress(AVAIL + 2), Ordering::Release)
                .unwrap();
            let t0 = Instant::now();
            cuda.serve(0, &vring, || {});
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "event_idx {event_idx}: still polling after {:?}",
                t0.elapsed()
            );
        }
    }

    /// While a queue thread polls, chains the driver posts without a kick are served; kicks
    /// stay suppressed until the poll time passed without a chain.
    #[test]
    fn polling_serves_chains_posted_without_a_kick() {
        let (cuda, vring, mem) = device(true, Duration::from_millis(200));
        let driver = Arc::new(Driver {
            mem,
            idx: AtomicU16::new(0),
        });
        driver.post();
        let d = driver.clone();
        let poster = std::thread::spawn(move || {
            for n in 2..=10u16 {
                d.post();
                // Served without a kick, and kicks still suppressed (avail_event is
                // where the first chain left it).
                let t0 = Instant::now();
                while d.used() != n {
                    assert!(
                        t0.elapsed() < Duration::from_secs(5),
                        "chain {n} not served"
                    );
                    std::thread::yield_now();
                }
                assert_eq!(d.avail_event(), 0);
            }
        });
        let t0 = Instant::now();
        cuda.serve(0, &vring, || {});
        poster.join().unwrap();
        assert_eq!(driver.used(), 10);
        assert_eq!(driver.avail_event(), 10);
        assert!(t0.elapsed() >= Duration::from_millis(200));
    }
}
