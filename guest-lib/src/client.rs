// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The process's session with the backend.
//!
//! Created on the first call that needs the backend (registration calls made before `main`
//! never connect). All threads share it.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;
use vcuda_protocol::status;
use vcuda_protocol::{
    DeviceInfo, DeviceReq, ExecutorKind, HelloReq, HelloResp, MSG_NO_WAIT, MessageBuilder, Op,
    REQ_REPLY_ON_ERROR, RecordKind, SegmentDesc, ops,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::batch::{Batch, Taken};

thread_local! {
    /// Whether this thread runs library-internal calls (see [`Client::internal`]).
    static INTERNAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`Client::internal`] for code that holds no client yet (managed memory's coherence).
pub(crate) fn internal<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            INTERNAL.set(self.0);
        }
    }
    let _restore = Restore(INTERNAL.replace(true));
    f()
}
use crate::error::{Error, Result};
use crate::logging;
use crate::mirror::Mirror;
use crate::transport::{Address, Record, SocketTransport, Transport};

/// What the library knows about a stream it created.
#[derive(Debug, Clone, Copy)]
pub struct StreamInfo {
    /// Device.
    pub device: i32,
    /// Creation flags.
    pub flags: u32,
    /// Priority.
    pub priority: i32,
    /// Its number (`cudaStreamGetId`, see `core::handle::next_stream_id`).
    pub id: u64,
}

/// What the library knows about an event it created.
#[derive(Debug, Clone, Copy)]
pub struct EventInfo {
    /// Device.
    pub device: i32,
    /// Creation flags.
    pub flags: u32,
}

/// The session.
pub struct Client {
    transport: Box<dyn Transport>,
    /// The backend's hello.
    pub hello: HelloResp,
    seq: AtomicU64,
    devices: Vec<OnceLock<Box<DeviceInfo>>>,
    /// An asynchronous error not yet reported (0: none).
    async_error: AtomicU32,
    /// A sticky error: every call fails with it until `cudaDeviceReset` (0: none).
    pub sticky: AtomicU32,
    /// Bumped by `cudaDeviceReset`: handles cached under an older generation are stale.
    pub generation: AtomicU64,
    /// Streams this process created.
    pub streams: Mutex<FxHashMap<u64, StreamInfo>>,
    /// Events this process created.
    pub events: Mutex<FxHashMap<u64, EventInfo>>,
    /// Device and host allocations.
    pub mirror: Mirror,
    /// Device flags set by `cudaSetDeviceFlags`, per device.
    pub device_flags: Mutex<HashMap<i32, u32>>,
    /// Posted calls not yet sent.
    batch: Batch,
    /// The process that connected (a forked child must not send the parent's batch).
    pid: u32,
    /// The address range reserved for the CPU executor's device allocations (start,
    /// length; `(0, 0)` if none could be reserved).
    pub device_va: (u64, u64),
}

static CLIENT: OnceLock<std::result::Result<Client, Error>> = OnceLock::new();

/// The runtime ABI this library reports to the backend.
pub const RUNTIME_VERSION: u32 = 13000;

/// Bytes of address space reserved for device allocations of the CPU executor.
const DEVICE_VA_LEN: u64 = 1 << 40;

/// The session, connecting on first use.
pub fn client() -> Result<&'static Client> {
    if is_forked() {
        return Err(forked());
    }
    CLIENT.get_or_init(Client::connect).as_ref().map_err(|e| *e)
}

/// Set in a child the process forked after it connected: the child shares the parent's
/// session (its socket, its device memory), which it must not use. CUDA answers every call
/// in such a child with an initialization error, and so does vcuda.
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process is a child forked after the session started (see [`client`]).
pub fn is_forked() -> bool {
    FORKED.load(std::sync::atomic::Ordering::Relaxed)
}

extern "C" fn forked_child() {
    FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The error of every call in a forked child (`cudaErrorInitializationError`,
/// `CUDA_ERROR_NOT_INITIALIZED`: both 3).
fn forked() -> Error {
    Error(vcuda_protocol::status::INITIALIZATION_ERROR)
}

thread_local! {
    /// How deep this thread is inside requests (it may hold the session's locks then).
    static BUSY: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the current thread as inside a request until dropped.
pub(crate) struct Busy(());

impl Busy {
    fn new() -> Self {
        BUSY.with(|b| b.set(b.get() + 1));
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.with(|b| b.set(b.get().saturating_sub(1)));
    }
}

/// Whether the calling thread is inside a request (managed memory's fault handler must not
/// make requests of its own then).
pub(crate) fn busy() -> bool {
    BUSY.with(std::cell::Cell::get) != 0
}

/// What the managed memory the library keeps coherent (`crate::coherent`) needs of every
/// request; installed by it with its first allocation, so a program without such memory
/// pays one atomic load per request.
pub(crate) struct Coherence {
    /// Before a request (its opcode, and its fixed part where known): sends dirty blocks to
    /// the device and invalidates what the request may write.
    pub(crate) before: fn(&Client, vcuda_protocol::Opcode, Option<&[u8]>) -> Result<()>,
    /// Whether host memory `[addr, addr + len)` overlaps managed memory kept coherent.
    pub(crate) overlaps: fn(u64, u64) -> bool,
}

static COHERENCE: std::sync::OnceLock<Coherence> = std::sync::OnceLock::new();

/// Installs the coherence hooks (once; later calls change nothing).
pub(crate) fn install_coherence(h: Coherence) {
    let _ = COHERENCE.set(h);
}

/// The session if it is already connected.
pub fn connected() -> Option<&'static Client> {
    if is_forked() {
        return None;
    }
    CLIENT.get().and_then(|c| c.as_ref().ok())
}

fn open_transport() -> std::io::Result<Box<dyn Transport>> {
    let choice = std::env::var("VCUDA_TRANSPORT").unwrap_or_default();
    let dev = std::path::Path::new(crate::virtio::DEVICE_PATH);
    match choice.as_str() {
        "virtio" => Ok(Box::new(crate::virtio::VirtioTransport::open()?)),
        "socket" => Ok(Box::new(SocketTransport::connect(Address::from_env())?)),
        _ if dev.exists() && std::env::var_os("VCUDA_SOCKET").is_none() => {
            Ok(Box::new(crate::virtio::VirtioTransport::open()?))
        }
        _ => Ok(Box::new(SocketTransport::connect(Address::from_env())?)),
    }
}

/// Alignment of the device range's start (what the CPU executor requires of it).
const DEVICE_VA_ALIGN: u64 = 0x10000;

/// Reserves address space for device allocations, so device pointers never alias the
/// program's own memory (the backend places CPU-executor allocations there). The range
/// starts on a 64 KiB boundary: the kernel gives only page alignment, so the reservation
/// is that much longer.
///
/// `VCUDA_DEVICE_VA` (a hexadecimal address, 64 KiB aligned) asks for the range at that
/// address instead: processes that must see the same device addresses (the CUDA executor
/// of migrating backends chained over vcuda's own `libcuda.so.1`) set the same one. Where
/// it is taken, the library says so and lets the kernel choose.
fn reserve_device_va() -> (u64, u64) {
    let fixed = std::env::var("VCUDA_DEVICE_VA").ok().and_then(|v| {
        let v = v.trim();
        let n = u64::from_str_radix(v.strip_prefix("0x").unwrap_or(v), 16).ok();
        if n.is_none_or(|n| n == 0 || !n.is_multiple_of(DEVICE_VA_ALIGN)) {
            log::warn!("VCUDA_DEVICE_VA={v}: not a 64 KiB aligned hexadecimal address");
            return None;
        }
        n
    });
    if let Some(at) = fixed {
        // SAFETY: an anonymous PROT_NONE, MAP_NORESERVE mapping at `at`, where
        // MAP_FIXED_NOREPLACE makes the kernel refuse rather than replace a mapping; it is
        // never unmapped.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                DEVICE_VA_LEN as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p as u64 == at {
            return (at, DEVICE_VA_LEN);
        }
        if p != libc::MAP_FAILED {
            // An old kernel took the address as a hint only: give the range back.
            // SAFETY: the mapping made just above, used by nothing.
            unsafe { libc::munmap(p, DEVICE_VA_LEN as usize) };
        }
        log::warn!("VCUDA_DEVICE_VA={at:#x}: that range is taken; the kernel chooses one");
    }
    let len = DEVICE_VA_LEN + DEVICE_VA_ALIGN;
    // SAFETY: an anonymous PROT_NONE, MAP_NORESERVE mapping at an address the kernel
    // chooses; it touches no existing mapping and is never unmapped.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        (0, 0)
    } else {
        ((p as u64).next_multiple_of(DEVICE_VA_ALIGN), DEVICE_VA_LEN)
    }
}

impl Client {
    /// What every request does first: keeps managed memory coherent (where the library
    /// does), then marks the thread as inside the request until the guard drops.
    fn before(&self, code: vcuda_protocol::Opcode, req: Option<&[u8]>) -> Result<Busy> {
        if let Some(h) = COHERENCE.get() {
            (h.before)(self, code, req)?;
        }
        Ok(Busy::new())
    }

    fn connect() -> std::result::Result<Client, Error> {
        logging::init();
        let va = reserve_device_va();
        let pool = match std::env::var("VCUDA_TRANSPORT").as_deref() {
            Ok("virtio") => None,
            _ => std::env::var("VCUDA_SOCKET")
                .ok()
                .and_then(|s| crate::pool::parse(&s)),
        };
        let c = match pool {
            Some(addrs) => Self::connect_pool(addrs, va)?,
            None => {
                let transport = open_transport().map_err(|e| {
                    logging::alert(&format!(
                        "cannot reach the vcuda backend ({e}); set VCUDA_SOCKET or start `vcuda-backend serve`"
                    ));
                    Error::NO_DEVICE
                })?;
                log::info!("connected via {}", transport.describe());
                Self::hello(transport, va, false)?
            }
        };
        Ok(c.started())
    }

    /// Starts a session on each backend of a pool in turn and keeps the one
    /// [`crate::pool::choose`] prefers (see [`crate::pool`]).
    fn connect_pool(addrs: Vec<Address>, va: (u64, u64)) -> std::result::Result<Client, Error> {
        use crate::pool::PROBE_TIMEOUT;
        let mut answered: Vec<(Address, Client)> = Vec::new();
        for a in addrs {
            let t = match SocketTransport::connect_within(a.clone(), Some(PROBE_TIMEOUT)) {
                Ok(t) => t,
                Err(e) => {
                    log::warn!("backend {a} unreachable ({e}); trying the others");
                    continue;
                }
            };
            if let Err(e) = t.set_read_timeout(Some(PROBE_TIMEOUT)) {
                log::warn!("backend {a}: {e}; trying the others");
                continue;
            }
            match Self::hello(Box::new(t), va, true) {
                Ok(c) => answered.push((a, c)),
                Err(e) => log::warn!(
                    "backend {a} refused a session (error {}); trying the others",
                    e.0
                ),
            }
        }
        let hellos: Vec<HelloResp> = answered.iter().map(|(_, c)| c.hello).collect();
        let Some(i) = crate::pool::choose(&hellos) else {
            logging::alert("cannot reach any vcuda backend that VCUDA_SOCKET names");
            return Err(Error::NO_DEVICE);
        };
        // The others' sessions end as their connections close.
        let (addr, c) = answered.swap_remove(i);
        log::info!(
            "chose backend {addr} of {} that answered: {} MiB free, {} sessions",
            hellos.len(),
            c.hello.free_memory >> 20,
            c.hello.sessions
        );
        c.transport.clear_timeouts();
        Ok(c)
    }

    /// Opens a session on `transport`: `Hello`, with the device range `va`. `quiet`: a
    /// failure is the caller's to report (a pool member).
    fn hello(
        transport: Box<dyn Transport>,
        va: (u64, u64),
        quiet: bool,
    ) -> std::result::Result<Client, Error> {
        let (va_base, va_len) = va;
        let mut c = Client {
            transport,
            hello: HelloResp::default(),
            seq: AtomicU64::new(1),
            devices: Vec::new(),
            async_error: AtomicU32::new(0),
            sticky: AtomicU32::new(0),
            generation: AtomicU64::new(1),
            streams: Mutex::default(),
            events: Mutex::default(),
            mirror: Mirror::default(),
            device_flags: Mutex::default(),
            batch: Batch::from_env(),
            pid: std::process::id(),
            device_va: (va_base, va_len),
        };
        let name = std::env::args().next().unwrap_or_default();
        let ring = c.transport.offer_call_ring();
        let hello = HelloReq {
            runtime_version: RUNTIME_VERSION,
            pid: std::process::id(),
            va_base,
            va_len,
            flags: if ring.is_some() {
                vcuda_protocol::HELLO_FLAG_CALL_RING
            } else {
                0
            },
            reserved: 0,
        };
        let sent = match &ring {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                c.call_fd_tail::<ops::Hello>(&hello, name.as_bytes(), fd.as_raw_fd())
            }
            None => c.call_with::<ops::Hello>(&hello, name.as_bytes(), &[], &mut []),
        };
        drop(ring);
        let resp: HelloResp = match sent {
            Ok(r) => r,
            Err(e) if quiet => return Err(e),
            // The connection closed before the session started (a backend that exited
            // with the connection still queued): as if no backend were reachable.
            Err(_) if c.transport.is_broken() => {
                logging::alert(
                    "cannot reach the vcuda backend (it closed the connection before the session started)",
                );
                return Err(Error::NO_DEVICE);
            }
            Err(e) => {
                logging::alert(&format!(
                    "the vcuda backend refused the session (error {})",
                    e.0
                ));
                return Err(e);
            }
        };
        if ExecutorKind::from_u32(resp.executor).is_none() {
            return Err(Error::NO_DEVICE);
        }
        let ring = resp.features & vcuda_protocol::HELLO_FEATURE_CALL_RING != 0;
        if let Err(e) = c.transport.start_call_ring(ring) {
            logging::alert(&format!("cannot use the call ring the backend took: {e}"));
            return Err(Error::NO_DEVICE);
        }
        c.hello = resp;
        c.devices = (0..resp.device_count).map(|_| OnceLock::new()).collect();
        Ok(c)
    }

    /// The session this process keeps: watches for fork and sets up batching.
    fn started(mut self) -> Client {
        let c = &mut self;
        // SAFETY: registers a handler that only stores to an atomic (async-signal-safe, as
        // a child handler must be).
        if unsafe { libc::pthread_atfork(None, None, Some(forked_child)) } != 0 {
            log::warn!("cannot watch for fork(): a forked child would share this session");
        }
        if c.batch.enabled() {
            // SAFETY: registers a plain function (no captured state) that never unwinds,
            // run in the child after a fork; it only stores to an atomic.
            unsafe { libc::pthread_atfork(None, None, Some(forget_batch_after_fork)) };
            // SAFETY: registers a plain function (no captured state) that never unwinds.
            if unsafe { libc::atexit(flush_at_exit) } != 0 {
                log::warn!("cannot register the exit handler; posted calls are sent at once");
                c.batch = Batch::new(std::time::Duration::ZERO);
            }
        }
        log::debug!("posted calls wait up to {:?}", c.batch.delay());
        self
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Answers a synchronize or query of stream `handle` without a request when this
    /// thread's last call left it idle and no thread made a request since (see
    /// [`crate::state::settled`]); `None` when the backend must answer. A pending error is
    /// reported as the call's would be.
    pub fn settled_sync(&self, handle: u64) -> Option<Result<()>> {
        if !crate::state::still_settled(handle, self.seq.load(Ordering::Acquire)) {
            return None;
        }
        let req = vcuda_protocol::HandleReq { handle };
        Some(self.check_sticky().and_then(|()| {
            self.take_async_error().map_or(Ok(()), Err)?;
            self.before(ops::StreamSynchronize::CODE, Some(req.as_bytes()))
                .map(drop)
        }))
    }

    fn segments(out: &[&[u8]], inp: &[&mut [u8]]) -> Vec<SegmentDesc> {
        out.iter()
            .map(|b| SegmentDesc::out(b.len() as u64))
            .chain(inp.iter().map(|b| SegmentDesc::input(b.len() as u64)))
            .collect()
    }

    /// Handles records that are not the awaited reply: device output and asynchronous
    /// errors.
    fn side_records(&self, recs: &[Record]) {
        for r in recs {
            match r.kind {
                RecordKind::Stdout => {
                    let mut o = std::io::stdout().lock();
                    let _ = o.write_all(&r.payload);
                    let _ = o.flush();
                }
                RecordKind::AsyncError => {
                    log::debug!("asynchronous error {} from request {}", r.status, r.seq);
                    self.note_error(r.status);
                    let _ = self.async_error.compare_exchange(
                        0,
                        r.status,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                }
                RecordKind::Reply => {}
            }
        }
    }

    fn note_error(&self, code: u32) {
        if status::is_sticky(code) {
            self.sticky.store(code, Ordering::Relaxed);
        }
    }

    /// Takes the pending asynchronous error, if any. Inside [`Client::internal`] there is
    /// none: the error stays for the program's next call.
    pub fn take_async_error(&self) -> Option<Error> {
        if INTERNAL.get() {
            return None;
        }
        match self.async_error.swap(0, Ordering::Relaxed) {
            0 => None,
            e => Some(Error(e)),
        }
    }

    /// Runs `f`, whose calls are the library's own bookkeeping (sharing a staging region,
    /// unloading a module, destroying a stale graph): a pending asynchronous error neither
    /// fails them (each gets its own reply) nor is taken by them, so the program's next call
    /// reports it, as CUDA's would.
    pub fn internal<R>(&self, f: impl FnOnce() -> R) -> R {
        internal(f)
    }

    /// Sends one request of operation `O` (no tail, no data) and waits for its reply.
    pub fn call<O: Op>(&self, req: &O::Req) -> Result<O::Resp> {
        self.call_with::<O>(req, &[], &[], &mut [])
    }

    /// Sends one request of operation `O` with a payload tail, out segments `out` and in
    /// segments `inp`, and waits for its reply.
    pub fn call_with<O: Op>(
        &self,
        req: &O::Req,
        tail: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
    ) -> Result<O::Resp> {
        let p = self.call_raw::<O>(req, tail, out, inp)?;
        O::Resp::read_from_prefix(&p)
            .map(|(r, _)| r)
            .map_err(|_| Error::UNKNOWN)
    }

    /// Like [`Client::call_with`], returning the whole reply payload: the reply struct
    /// and whatever follows it.
    pub fn call_raw<O: Op>(
        &self,
        req: &O::Req,
        tail: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
    ) -> Result<Vec<u8>> {
        if Self::touches_managed(out, inp) {
            // Managed memory the library keeps coherent goes through buffers of its own:
            // read before the request and written after it as the program would (faults
            // bring and dirty its blocks), never while the session is held.
            let outs = Self::own_copies(out);
            let mut ins: Vec<Vec<u8>> = inp.iter().map(|b| vec![0u8; b.len()]).collect();
            let out_refs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
            let mut in_refs: Vec<&mut [u8]> = ins.iter_mut().map(Vec::as_mut_slice).collect();
            let r = self.call_raw::<O>(req, tail, &out_refs, &mut in_refs);
            if r.is_ok() {
                for (dst, src) in inp.iter_mut().zip(&ins) {
                    dst.copy_from_slice(src);
                }
            }
            return r;
        }
        let _busy = self.before(O::CODE, Some(req.as_bytes()))?;
        let seq = self.next_seq();
        let segs = Self::segments(out, inp);
        let data =
            out.iter().map(|b| b.len()).sum::<usize>() + inp.iter().map(|b| b.len()).sum::<usize>();
        let recs = match self.take_batch() {
            Some(mut t)
                if self.transport.batch_rides_with_calls()
                    && self.fits_with(t.data.len(), data) =>
            {
                // The batch goes first, in the same message.
                log::trace!("call {seq} carries {} posted calls", t.msg.len());
                t.msg.push_op::<O>(0, seq, &segs, req, tail);
                let mut all: Vec<&[u8]> = Vec::with_capacity(out.len() + 1);
                all.push(&t.data);
                all.extend_from_slice(out);
                let r = self.transport.call(t.msg.finish(0), &all, inp, seq);
                drop(t);
                r.map_err(|e| self.lost(e))?
            }
            taken => {
                if let Some(t) = taken {
                    self.send_batch(t)?;
                }
                let mut b = MessageBuilder::new();
                b.push_op::<O>(0, seq, &segs, req, tail);
                self.transport
                    .call(b.finish(0), out, inp, seq)
                    .map_err(|e| self.lost(e))?
            }
        };
        let reply = self.finish_call(&recs, seq)?;
        crate::state::called(seq);
        Ok(reply)
    }

    /// Whether a request's host buffers overlap managed memory the library keeps coherent
    /// (see [`crate::coherent`]).
    fn touches_managed(out: &[&[u8]], inp: &[&mut [u8]]) -> bool {
        out.iter()
            .map(|b| (b.as_ptr(), b.len()))
            .chain(inp.iter().map(|b| (b.as_ptr(), b.len())))
            .any(|(p, n)| {
                COHERENCE
                    .get()
                    .is_some_and(|h| (h.overlaps)(p as u64, n as u64))
            })
    }

    /// Copies of a request's host buffers, read here (where a fault on managed memory can be
    /// served) rather than by the transport.
    fn own_copies(out: &[&[u8]]) -> Vec<Vec<u8>> {
        out.iter().map(|b| b.to_vec()).collect()
    }

    /// Takes the batch (see [`Batch::take`]); if it is empty, waits until no batch is being
    /// sent, so the message the caller sends next comes after everything posted before it.
    fn take_batch(&self) -> Option<Taken<'_>> {
        if self.batch.forked() {
            // The parent's requests, on the parent's connection: never ours to send.
            return None;
        }
        let t = self.batch.take(false);
        if t.is_none() {
            self.batch.barrier();
        }
        t
    }

    /// Whether a message carrying `batched` bytes of batched data and `data` more bytes of
    /// data stays within what one request should carry on this transport (with a page to
    /// spare for a buffer that starts mid-page).
    fn fits_with(&self, batched: usize, data: usize) -> bool {
        (batched + data) as u64 + 4096 <= self.transport.max_request_data()
    }

    /// Sends taken batched requests as a posted message.
    fn send_batch(&self, mut t: Taken<'_>) -> Result<()> {
        log::trace!("{} posted calls sent on their own", t.msg.len());
        let r = self.transport.post(t.msg.finish(MSG_NO_WAIT), &[&t.data]);
        drop(t);
        let recs = r.map_err(|e| self.lost(e))?;
        self.side_records(&recs);
        Ok(())
    }

    /// Sends the posted calls that wait in the batch now.
    pub fn flush(&self) -> Result<()> {
        match self.batch.take(false) {
            Some(t) => self.send_batch(t),
            None => Ok(()),
        }
    }

    /// Runs calls of operation `O` (no tail, no data) as a pipeline (see
    /// [`Transport::call_pipelined`]): `next(i)` makes request `i` (`None`: no more),
    /// `done(i)` runs once request `i` succeeded. `next(i)` comes after `done(i - 2)`, so
    /// two buffers alternate. The first failure stops the pipeline and is returned.
    pub fn call_pipelined<O: Op>(
        &self,
        mut next: impl FnMut(usize) -> Option<O::Req>,
        mut done: impl FnMut(usize),
    ) -> Result<()> {
        let _busy = self.before(O::CODE, None)?;
        let mut first_err = None;
        // The batch goes with the first call if it carries no data (these calls carry
        // none); else on its own first.
        let mut held = self.take_batch();
        let rides = self.transport.batch_rides_with_calls();
        if let Some(t) = held.take_if(|t| !t.data.is_empty() || !rides) {
            self.send_batch(t)?;
        }
        let mut carry = held.as_mut().map(|t| std::mem::take(&mut t.msg));
        let mut make = |i: usize| {
            let req = next(i)?;
            let seq = self.next_seq();
            let mut b = match carry.take() {
                Some(b) => {
                    log::trace!("call {seq} carries {} posted calls", b.len());
                    b
                }
                None => MessageBuilder::new(),
            };
            b.push_op::<O>(0, seq, &[], &req, &[]);
            Some((b.finish(0).to_vec(), seq))
        };
        let mut take = |i: usize, seq: u64, recs: Vec<Record>| match self.finish_call(&recs, seq) {
            Ok(_) if first_err.is_none() => {
                done(i);
                true
            }
            Ok(_) => false,
            Err(e) => {
                first_err.get_or_insert(e);
                false
            }
        };
        let r = self.transport.call_pipelined(&mut make, &mut take);
        if let (Some(b), Some(mut t)) = (carry, held) {
            // No call was made: the batch is still to send.
            t.msg = b;
            self.send_batch(t)?;
        }
        r.map_err(|e| self.lost(e))?;
        first_err.map_or(Ok(()), Err)
    }

    /// Sends one request of operation `O` (no tail, no data) with the file descriptor `fd`
    /// passed beside it, and waits for its reply (see [`Transport::call_with_fd`]).
    pub fn call_fd<O: Op>(&self, req: &O::Req, fd: std::os::fd::RawFd) -> Result<O::Resp> {
        self.call_fd_tail::<O>(req, &[], fd)
    }

    /// [`Client::call_fd`] for a request with a tail.
    fn call_fd_tail<O: Op>(
        &self,
        req: &O::Req,
        tail: &[u8],
        fd: std::os::fd::RawFd,
    ) -> Result<O::Resp> {
        let _busy = self.before(O::CODE, Some(req.as_bytes()))?;
        let seq = self.next_seq();
        let mut b = MessageBuilder::new();
        b.push_op::<O>(0, seq, &[], req, tail);
        let msg = b.finish(0);
        if let Some(t) = self.take_batch() {
            self.send_batch(t)?;
        }
        let recs = self
            .transport
            .call_with_fd(msg, fd, seq)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::Unsupported => Error::NOT_SUPPORTED,
                _ => self.lost(e),
            })?;
        self.finish_call(&recs, seq).and_then(|p| {
            O::Resp::read_from_prefix(&p)
                .map(|(r, _)| r)
                .map_err(|_| Error::UNKNOWN)
        })
    }

    /// How the transport shares page-locked memory with the backend.
    pub fn sharing(&self) -> crate::transport::Sharing {
        self.transport.sharing()
    }

    /// Shares the whole pages `[addr, addr + len)` in place: the region's handle.
    pub fn share_pages(&self, addr: u64, len: u64) -> std::io::Result<u64> {
        self.transport.share_pages(addr, len)
    }

    /// Ends a region [`Client::share_pages`] made, after every call sent before.
    pub fn unshare_pages(&self, handle: u64) -> Result<()> {
        if let Some(t) = self.take_batch() {
            self.send_batch(t)?;
        }
        self.transport.unshare_pages(handle).map_err(|e| {
            log::debug!("unsharing region {handle}: {e}");
            Error::INVALID_VALUE
        })
    }

    /// The payload of the reply to `seq` among `recs`, after handling the other records.
    fn finish_call(&self, recs: &[Record], seq: u64) -> Result<Vec<u8>> {
        self.side_records(recs);
        let Some(r) = recs
            .iter()
            .find(|r| r.kind == RecordKind::Reply && r.seq == seq)
        else {
            return Err(Error::UNKNOWN);
        };
        if let Some(e) = self.take_async_error() {
            return Err(e);
        }
        if r.status != status::SUCCESS {
            self.note_error(r.status);
            return Err(Error(r.status));
        }
        Ok(r.payload.clone())
    }

    /// Sends a request of operation `O` (no tail, no data) flagged reply-on-error without
    /// waiting. Its failure, if any, surfaces from a later call, like CUDA's asynchronous
    /// errors.
    pub fn post<O: Op>(&self, req: &O::Req) -> Result<()> {
        self.post_with::<O>(req, &[], &[])
    }

    /// Like [`Client::post`], with a payload tail and out segments.
    pub fn post_with<O: Op>(&self, req: &O::Req, tail: &[u8], out: &[&[u8]]) -> Result<()> {
        if let Some(e) = self.take_async_error() {
            return Err(e);
        }
        if Self::touches_managed(out, &[]) {
            // See `call_raw`.
            let outs = Self::own_copies(out);
            let out_refs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
            return self.post_with::<O>(req, tail, &out_refs);
        }
        let _busy = self.before(O::CODE, Some(req.as_bytes()))?;
        let seq = self.next_seq();
        let segs = Self::segments(out, &[]);
        let data = out.iter().map(|b| b.len()).sum::<usize>();
        if self.batch.enabled() && !self.batch.forked() && data <= crate::batch::MAX_HELD_DATA {
            let send_now = {
                let mut p = self.batch.lock();
                p.msg
                    .push_op::<O>(REQ_REPLY_ON_ERROR, seq, &segs, req, tail);
                for b in out {
                    p.data.extend_from_slice(b);
                }
                p.is_full() || !self.batch.hold(&mut p, spawn_flusher)
            };
            if send_now {
                self.flush()?;
            }
            return Ok(());
        }
        // Too large to hold: behind the batch.
        if let Some(t) = self.take_batch() {
            self.send_batch(t)?;
        }
        let mut b = MessageBuilder::new();
        b.push_op::<O>(REQ_REPLY_ON_ERROR, seq, &segs, req, tail);
        let recs = self
            .transport
            .post(b.finish(MSG_NO_WAIT), out)
            .map_err(|e| self.lost(e))?;
        self.side_records(&recs);
        Ok(())
    }

    /// Sends a batch from the flusher thread ([`crate::batch`]).
    fn flush_from_flusher(&self, t: Taken<'_>) {
        if let Err(e) = self.send_batch(t) {
            log::debug!("posted calls could not be sent: error {}", e.0);
        }
    }

    /// A transport error. When the connection to the backend is lost for good (the
    /// transport then fails every later call), this call and every later one fail with the
    /// sticky `cudaErrorDevicesUnavailable`. Logged once.
    fn lost(&self, e: std::io::Error) -> Error {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| logging::alert(&format!("lost the vcuda backend: {e}")));
        if !self.transport.is_broken() {
            return Error::UNKNOWN;
        }
        self.sticky
            .store(status::DEVICES_UNAVAILABLE, Ordering::Relaxed);
        Error(status::DEVICES_UNAVAILABLE)
    }

    /// Fails with the sticky error, if one happened.
    pub fn check_sticky(&self) -> Result<()> {
        match self.sticky.load(Ordering::Relaxed) {
            0 => Ok(()),
            e => Err(Error(e)),
        }
    }

    /// Number of devices.
    pub fn device_count(&self) -> i32 {
        self.hello.device_count as i32
    }

    /// Checks a device ordinal.
    pub fn check_device(&self, d: i32) -> Result<u32> {
        if d >= 0 && d < self.device_count() {
            Ok(d as u32)
        } else {
            Err(Error::INVALID_DEVICE)
        }
    }

    /// A device's description (fetched once).
    pub fn device_info(&self, d: i32) -> Result<&DeviceInfo> {
        let i = self.check_device(d)?;
        let slot = &self.devices[i as usize];
        if let Some(info) = slot.get() {
            return Ok(info);
        }
        let mut info = self.call::<ops::GetDeviceInfo>(&DeviceReq {
            device: i,
            reserved: 0,
        })?;
        // Mapped and managed memory work everywhere: shared with the backend where the
        // session maps shared memory for kernels (not what the executor's device could do
        // on its own), kept coherent by the library elsewhere (`crate::coherent`). The host
        // must not touch managed memory while kernels run.
        for (a, v) in [
            (vcuda_protocol::attr::CAN_MAP_HOST_MEMORY, 1),
            (vcuda_protocol::attr::MANAGED_MEMORY, 1),
            (vcuda_protocol::attr::CONCURRENT_MANAGED_ACCESS, 0),
            (vcuda_protocol::attr::PAGEABLE_MEMORY_ACCESS, 0),
            (
                vcuda_protocol::attr::PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                0,
            ),
            (vcuda_protocol::attr::DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0),
            // Memory pools export POSIX descriptors (`crate::core::pool`), on every executor.
            (
                vcuda_protocol::attr::MEMORY_POOL_SUPPORTED_HANDLE_TYPES,
                crate::ffi::HANDLE_POSIX_FD,
            ),
        ] {
            if let Some(slot) = info.attrs.get_mut(a as usize) {
                *slot = v;
            }
        }
        Ok(slot.get_or_init(|| Box::new(info)))
    }

    /// Most data bytes one request should carry on this transport.
    pub fn max_request_data(&self) -> u64 {
        self.transport.max_request_data()
    }

    /// The current generation (see [`Client::generation`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }
}

/// Starts the thread that sends batches of posted calls no later than their delay.
fn spawn_flusher() -> bool {
    let spawned = std::thread::Builder::new()
        .name("vcuda-batch".into())
        .spawn(|| {
            // The program's signals go to its own threads, never to this one.
            // SAFETY: a filled local sigset_t, and this thread's own mask.
            unsafe {
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
            }
            let Some(c) = connected() else {
                return;
            };
            c.batch.run_flusher(|t| c.flush_from_flusher(t));
        });
    match spawned {
        Ok(_) => true,
        Err(e) => {
            log::warn!("cannot start the batch thread ({e}); posted calls are sent at once");
            false
        }
    }
}

/// At exit, sends what waits in the batch (a program may end without synchronizing). Skips
/// a batch another thread holds (that thread sends it) and a forked child's copy of its
/// parent's.
extern "C" fn flush_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(c) = connected()
            && !c.batch.forked()
            && c.pid == std::process::id()
            && let Some(mut t) = c.batch.try_take(EXIT_WAIT)
        {
            // Never wait for the transport here: another thread may be in a call that does
            // not return (then the batch is lost, as posted calls are lost when a program
            // exits without synchronizing).
            log::trace!("{} posted calls sent at exit", t.msg.len());
            let _ = c.transport.try_post(t.msg.finish(MSG_NO_WAIT), &[&t.data]);
        }
    });
}

/// How long the exit handler waits for another thread sending a batch.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// In a child after `fork`: the parent's connection and batch are not ours.
extern "C" fn forget_batch_after_fork() {
    if let Some(c) = connected() {
        c.batch.forget_after_fork();
    }
}
