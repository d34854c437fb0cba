// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The session core: one per guest process, shared by every transport.
//!
//! A transport hands [`Session::handle`] a message (its control area and its out- and
//! in-data areas as [`DataSegs`]) and sends back whatever reply records it produces. The
//! session decodes each request, enforces the protocol's rules (hello first, sticky errors,
//! reply-on-error requests) and calls its [`Executor`]. Nothing a guest sends can make it
//! panic; a malformed request gets an error record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use log::debug;
use vcuda_protocol::decode::{self, split_requests};
use vcuda_protocol::status::{self, CudaStatus};
use vcuda_protocol::*;
use zerocopy::IntoBytes;

use crate::data::DataSegs;
use crate::dispatch::{done, reply};
use crate::executor::{
    Cancel, ExecResult, Executor, ExecutorFactory, MAX_STDOUT_BUFFER, Status, Tenant,
};
use crate::graphs::Graphs;
use crate::log_limit::LogLimiter;
use crate::metrics::SessionCounters;
use crate::modules::{ModuleCache, SentImages};
use crate::shared::{Alias, SharedRegions};

mod pending;
mod state;

#[cfg(test)]
pub(crate) use state::mapped_tests::mapped_memory_moves;

/// What every session of one backend shares.
pub struct Backend {
    factory: Arc<dyn ExecutorFactory>,
    modules: ModuleCache,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("executor", &self.factory.kind())
            .finish()
    }
}

impl Backend {
    /// A backend running sessions on executors from `factory`.
    pub fn new(factory: Arc<dyn ExecutorFactory>) -> Arc<Self> {
        Arc::new(Self {
            factory,
            modules: ModuleCache::default(),
        })
    }

    /// The executor kind.
    pub fn kind(&self) -> ExecutorKind {
        self.factory.kind()
    }

    /// The guest memory a vhost-user frontend shared changed (see
    /// [`ExecutorFactory::guest_memory_changed`]).
    pub fn guest_memory_changed(&self, regions: &[(usize, usize)]) {
        self.factory.guest_memory_changed(regions);
    }

    /// Starts a session of a tenant of its own.
    pub fn new_session(self: &Arc<Self>) -> ExecResult<Session> {
        self.new_session_with(Cancel::default(), Tenant::unique())
    }

    /// Starts a session whose running work stops once `cancel` is cancelled: the
    /// transport cancels it when the session's connection or device file goes away while a
    /// call runs. The session shares the executor's caches with `tenant`'s other sessions
    /// only.
    pub fn new_session_with(
        self: &Arc<Self>,
        cancel: Cancel,
        tenant: Tenant,
    ) -> ExecResult<Session> {
        let mut exec = self.factory.new_session(tenant)?;
        exec.set_cancel(cancel);
        let counters = SessionCounters::open(exec.memory_charged().1);
        Ok(Session {
            backend: self.clone(),
            exec,
            counters,
            hello: false,
            sticky: None,
            stdout: Vec::new(),
            in_ranges: Vec::new(),
            unsolicited_sent: false,
            held: ReplyBuilder::new(),
            detaching: false,
            sent_images: SentImages::default(),
            shared: SharedRegions::default(),
            mapped: BTreeMap::new(),
            passes_fds: false,
            call_ring: None,
            guest_pages: false,
            graphs: Graphs::default(),
            pending: None,
            log_limit: LogLimiter::new(module_path!(), 10, Duration::from_secs(10)),
        })
    }
}

/// Most bytes of records a session holds for the guest's next reply (see
/// [`Session::handle_detached`]): a batch of posted calls that all failed, and device output.
pub const MAX_HELD: usize = 16 << 10;

/// One guest process's state on the host.
pub struct Session {
    backend: Arc<Backend>,
    exec: Box<dyn Executor>,
    /// What the metrics show of this session.
    counters: SessionCounters,
    hello: bool,
    sticky: Option<Status>,
    stdout: Vec<u8>,
    in_ranges: Vec<(u64, u64)>,
    /// An asynchronous error went out in a reply the guest did not wait for; until the
    /// guest waits for a reply again, further ones are not sent, so a flood of failing
    /// reply-on-error requests cannot fill the connection while nobody reads it.
    unsolicited_sent: bool,
    /// What replies to detached messages (vhost-user `SubmitDetached`, whose sender does
    /// not read a reply) would have held, for the front of the next reply the guest reads.
    held: ReplyBuilder,
    /// A detached message is running: its reply is held, and nothing held goes out.
    detaching: bool,
    /// The module images this session has sent (see [`crate::modules`]).
    sent_images: SentImages,
    /// The session's warnings about malformed input, a burst at a time.
    log_limit: LogLimiter,
    /// Memory the guest shares with the backend (see [`crate::shared`]).
    shared: SharedRegions,
    /// Shared memory exposed to kernels (`MapHostMemory`): device address -> region, and
    /// the region's second mapping at that address where the executor needs one. After
    /// `exec` (fields drop in order): the executor lets go of the aliases first.
    mapped: BTreeMap<u64, MappedRange>,
    /// Whether the transport passes file descriptors (see [`Session::pass_fds`]).
    passes_fds: bool,
    /// The call ring the guest's `Hello` offered and this session took, until the
    /// transport switches to it ([`Session::take_call_ring`]).
    call_ring: Option<vcuda_ring::Mapping>,
    /// Whether the transport shares guest pages (see [`Session::share_guest_pages`]).
    guest_pages: bool,
    /// Graphs of device work (see [`crate::graphs`]).
    graphs: Graphs,
    /// What a loaded session shares of the guest's pages, until this backend maps the
    /// guest's memory (see `session/state.rs`).
    pending: Option<pending::Pending>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("hello", &self.hello)
            .field("sticky", &self.sticky)
            .finish()
    }
}

/// A range of a shared region exposed to kernels (`MapHostMemory`).
struct MappedRange {
    region: u64,
    offset: u64,
    len: u64,
    /// The region's second mapping at the device address, where the executor needs one.
    _alias: Option<Alias>,
}

/// What a transport does after [`Session::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Send the reply (it may be empty only if the guest waits for one).
    Reply,
    /// Send nothing: the guest is not waiting and nothing failed.
    Silent,
    /// The message was malformed; the reply holds one error record. Stream transports
    /// should close the connection afterwards, since framing can no longer be trusted.
    Malformed,
}

/// Sequence number used for a record about a message that could not be decoded.
pub const SEQ_MALFORMED: u64 = u64::MAX;

impl Session {
    /// Handles one message.
    ///
    /// `ctrl` is the control area after the [`MessageHeader`], `out` the out-data area
    /// (`header.out_len` bytes), `inp` the in-data area (`header.in_len` bytes). Records
    /// go into `reply`, which the caller sends, along with the in data each record
    /// produced (`in_len` bytes at the request's in offset), unless the outcome is
    /// [`Outcome::Silent`]. `reply_capacity` bounds the reply's control area.
    pub fn handle(
        &mut self,
        header: &MessageHeader,
        ctrl: &[u8],
        out: &DataSegs<'_>,
        inp: &DataSegs<'_>,
        reply: &mut ReplyBuilder,
        reply_capacity: usize,
    ) -> Outcome {
        reply.clear();
        self.in_ranges.clear();
        if !self.detaching {
            self.release_held(reply, reply_capacity);
        }
        let reqs = match split_requests(header, ctrl) {
            Ok(r) if out.len() == header.out_len && inp.len() == header.in_len => r,
            Ok(_) => {
                self.log_limit
                    .warn(format_args!("message data areas disagree with its header"));
                reply.push(
                    RecordKind::Reply,
                    SEQ_MALFORMED,
                    status::INVALID_VALUE,
                    &[],
                    0,
                );
                self.counters.message(true);
                return Outcome::Malformed;
            }
            Err(e) => {
                self.log_limit.warn(format_args!("malformed message: {e}"));
                reply.push(
                    RecordKind::Reply,
                    SEQ_MALFORMED,
                    status::INVALID_VALUE,
                    &[],
                    0,
                );
                self.counters.message(true);
                return Outcome::Malformed;
            }
        };
        let waiting = header.flags & MSG_NO_WAIT == 0;
        if waiting {
            self.unsolicited_sent = false;
        }
        let mut must_reply = waiting;
        self.counters.message(false);
        for raw in &reqs {
            let quiet = raw.header.flags & REQ_REPLY_ON_ERROR != 0;
            let started = std::time::Instant::now();
            let (st, payload, in_len) = match self.run(raw, out, inp) {
                Ok((payload, in_len)) => (status::SUCCESS, payload, in_len),
                Err(s) => (s.code(), Vec::new(), 0),
            };
            self.count(raw, st, started.elapsed(), in_len);
            if quiet && (st == status::SUCCESS || (!waiting && self.unsolicited_sent)) {
                continue;
            }
            let kind = if quiet {
                RecordKind::AsyncError
            } else {
                RecordKind::Reply
            };
            if reply.ctrl_bytes() + size_of::<RecordHeader>() + payload.len() > reply_capacity {
                self.log_limit.warn(format_args!(
                    "reply area of {reply_capacity} bytes too small; record dropped"
                ));
                continue;
            }
            reply.push(kind, raw.header.seq, st, &[&payload], in_len);
            if in_len > 0 {
                self.in_ranges.push((raw.in_offset, in_len));
            }
            must_reply = true;
        }
        self.counters.charged(self.exec.memory_charged().0);
        if must_reply {
            if !waiting {
                self.unsolicited_sent = true;
            }
            self.attach_stdout(reply, reply_capacity);
            Outcome::Reply
        } else {
            // Keep printf output for the next reply, as CUDA prints at synchronization.
            self.collect_stdout();
            Outcome::Silent
        }
    }

    /// Runs a message whose sender does not read its reply (vhost-user `SubmitDetached`:
    /// posted calls, no in data). The records its reply would hold (asynchronous errors,
    /// device output) wait, at most [`MAX_HELD`] bytes of them, and go at the front of the
    /// next reply [`Session::handle`] builds. `scratch` is a builder to run it with.
    pub fn handle_detached(
        &mut self,
        header: &MessageHeader,
        ctrl: &[u8],
        out: &DataSegs<'_>,
        scratch: &mut ReplyBuilder,
    ) -> Outcome {
        let room = MAX_HELD.saturating_sub(self.held.ctrl_bytes());
        self.detaching = true;
        let r = self.handle(header, ctrl, out, &DataSegs::default(), scratch, room);
        self.detaching = false;
        self.held.append(scratch);
        scratch.clear();
        r
    }

    /// Puts the held records at the front of `reply` (emptied), if they fit in `capacity`;
    /// otherwise they are dropped, with a warning.
    fn release_held(&mut self, reply: &mut ReplyBuilder, capacity: usize) {
        if self.held.is_empty() {
            return;
        }
        if self.held.ctrl_bytes() <= capacity {
            reply.append(&self.held);
        } else {
            self.log_limit.warn(format_args!(
                "{} held records do not fit a reply area of {capacity} bytes; dropped",
                self.held.len()
            ));
        }
        self.held.clear();
    }

    /// Counts request `raw`, which ended with `st` after `took`, in the metrics.
    fn count(&self, raw: &RawRequest<'_>, st: CudaStatus, took: Duration, in_len: u64) {
        use zerocopy::FromBytes;
        let op = Opcode::try_from(raw.header.opcode).ok();
        // Shared-memory copies carry their bytes outside the message.
        let shared = |w: u64, h: u64| w.saturating_mul(h);
        let (out, inp) = match op {
            Some(Opcode::MemcpyHtoDShared) => (
                MemcpyHtoDSharedReq::read_from_prefix(raw.payload)
                    .map_or(0, |(r, _)| shared(r.width, r.height)),
                0,
            ),
            Some(Opcode::MemcpyDtoHShared) => (
                0,
                MemcpyDtoHSharedReq::read_from_prefix(raw.payload)
                    .map_or(0, |(r, _)| shared(r.width, r.height)),
            ),
            _ => (raw.out_len, in_len),
        };
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.counters.request(op, st, nanos, out, inp);
    }

    /// The transport passes file descriptors with messages (a Unix socket): the guest may
    /// share memory ([`HELLO_FEATURE_SHARED_MEMORY`]); the descriptors of each message are
    /// given with [`Session::handle_with_fds`].
    pub fn pass_fds(&mut self) {
        self.passes_fds = true;
    }

    /// The transport shares guest pages (vhost-user: `ChainOp::SharePages`): the guest
    /// may share memory ([`HELLO_FEATURE_SHARED_MEMORY`]), as regions made with
    /// [`Session::share_pieces`].
    pub fn share_guest_pages(&mut self) {
        self.guest_pages = true;
        self.exec.mapped_memory_is_guest_pages();
    }

    /// Whether the guest may share memory with this session, one way or the other.
    fn shares_memory(&self) -> bool {
        self.passes_fds || self.guest_pages
    }

    /// Makes a shared region of guest RAM pieces, the guest pages at guest-physical
    /// `extents` (see [`SharedRegions::share_pieces`]): its handle.
    pub fn share_pieces(
        &mut self,
        pieces: &[crate::shared::Piece<'_>],
        extents: &[(u64, u64)],
    ) -> ExecResult<u64> {
        if !self.guest_pages {
            return Err(Status::NOT_SUPPORTED);
        }
        let h = self.shared.share_pieces(pieces, extents)?;
        if let Some((addr, len)) = self.shared.range(h) {
            self.exec.host_memory_shared(addr, len);
        }
        Ok(h)
    }

    /// Ends shared region `handle`: kernels stop reaching it, the executor stops using it,
    /// and it is unmapped, all before this returns.
    pub fn unshare_region(&mut self, handle: u64) -> ExecResult<()> {
        let gone: Vec<u64> = self
            .mapped
            .iter()
            .filter(|(_, m)| m.region == handle)
            .map(|(&a, _)| a)
            .collect();
        for a in gone {
            let alias = self.mapped.remove(&a);
            let _ = self.exec.host_memory_unmap(a);
            drop(alias);
        }
        if let Some((addr, _)) = self.shared.range(handle) {
            self.exec.host_memory_unshared(addr);
        }
        self.shared.unshare(handle)
    }

    /// [`Session::handle`] for a message that came with file descriptors (closed afterwards
    /// unless a request took them).
    #[allow(clippy::too_many_arguments)]
    pub fn handle_with_fds(
        &mut self,
        header: &MessageHeader,
        ctrl: &[u8],
        out: &DataSegs<'_>,
        inp: &DataSegs<'_>,
        reply: &mut ReplyBuilder,
        reply_capacity: usize,
        fds: Vec<std::os::fd::OwnedFd>,
    ) -> Outcome {
        self.shared.offer(fds);
        let r = self.handle(header, ctrl, out, inp, reply, reply_capacity);
        self.shared.end_message();
        r
    }

    /// `MapHostMemory`: exposes `len` bytes at `offset` of shared region `region` to kernels
    /// at device address `addr`; `held` is the address space held for it where it moved
    /// here in a migration (see `session/pending.rs`).
    fn map_host(
        &mut self,
        region: u64,
        offset: u64,
        len: u64,
        addr: u64,
        held: Option<crate::shared::AddressHold>,
    ) -> ExecResult<()> {
        let e = &mut self.exec;
        if !(self.passes_fds || self.guest_pages) || !e.can_map_host_memory() {
            return Err(Status::NOT_SUPPORTED);
        }
        if self.mapped.contains_key(&addr) {
            return Err(Status::INVALID_VALUE);
        }
        if self.mapped.len() >= crate::shared::MAX_REGIONS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        // In bounds, and every page already populated by the guest (kernels must not make
        // the backend allocate the guest's memory): both checked by `host_range`, and by
        // `alias` where the executor's device needs the pages at the guest's own address
        // here (dropped, so unmapped, if the executor refuses them).
        let (host, alias) = if e.maps_host_memory_in_place() {
            let a = self.shared.alias(region, offset, len, addr, held)?;
            (addr as usize, Some(a))
        } else {
            (self.shared.host_range(region, offset, len)?, None)
        };
        e.host_memory_map(addr, host, len as usize)?;
        self.mapped.insert(
            addr,
            MappedRange {
                region,
                offset,
                len,
                _alias: alias,
            },
        );
        Ok(())
    }

    /// The call ring the guest's `Hello` offered and this session accepted
    /// ([`vcuda_protocol::HELLO_FEATURE_CALL_RING`]): once the `Hello` reply is sent, the
    /// transport reads messages from it and writes replies to it.
    pub fn take_call_ring(&mut self) -> Option<vcuda_ring::Mapping> {
        self.call_ring.take()
    }

    /// Whether the guest's `Hello` succeeded (transports close connections that do not
    /// start with one).
    pub fn has_hello(&self) -> bool {
        self.hello
    }

    /// The in-data ranges `(offset in the in-data area, length)` the last reply's records
    /// produced, in record order. Stream transports send these bytes after the reply.
    pub fn in_ranges(&self) -> &[(u64, u64)] {
        &self.in_ranges
    }

    fn collect_stdout(&mut self) {
        let more = self.exec.take_stdout();
        let room = MAX_STDOUT_BUFFER.saturating_sub(self.stdout.len());
        self.stdout.extend_from_slice(&more[..more.len().min(room)]);
    }

    fn attach_stdout(&mut self, reply: &mut ReplyBuilder, cap: usize) {
        self.collect_stdout();
        while !self.stdout.is_empty() {
            let room = cap.saturating_sub(reply.ctrl_bytes() + size_of::<RecordHeader>());
            let n = self.stdout.len().min(room).min(MAX_PAYLOAD_LEN as usize);
            if n == 0 {
                break;
            }
            reply.push(
                RecordKind::Stdout,
                0,
                status::SUCCESS,
                &[&self.stdout[..n]],
                0,
            );
            self.stdout.drain(..n);
        }
    }

    /// Decodes and executes one request: its reply payload and the in-data bytes it wrote.
    fn run(
        &mut self,
        raw: &RawRequest<'_>,
        out: &DataSegs<'_>,
        inp: &DataSegs<'_>,
    ) -> ExecResult<(Vec<u8>, u64)> {
        let req = Request::decode(raw).map_err(|e| {
            debug!("request {} rejected: {e}", raw.header.seq);
            Status::INVALID_VALUE
        })?;
        if let Request::Hello(h, name) = &req {
            return self.hello(h, name);
        }
        if !self.hello {
            return Err(Status(status::INITIALIZATION_ERROR));
        }
        // After a sticky error only these still work, as with a corrupted CUDA context.
        if let Some(s) = self.sticky
            && !matches!(
                req,
                Request::DeviceReset(_) | Request::GetDeviceInfo(_) | Request::Nop(_)
            )
        {
            return Err(s);
        }
        let r = self.dispatch(&req, raw, out, inp);
        if let Err(s) = r
            && status::is_sticky(s.code())
        {
            self.sticky = Some(s);
        }
        r
    }

    fn hello(&mut self, h: &HelloReq, name: &[u8]) -> ExecResult<(Vec<u8>, u64)> {
        debug!(
            "hello from pid {} ({}), runtime {}",
            h.pid,
            String::from_utf8_lossy(name),
            h.runtime_version
        );
        if !self.hello && h.va_len != 0 {
            self.exec.set_address_range(h.va_base, h.va_len);
        }
        let ring = !self.hello && self.passes_fds && h.flags & HELLO_FLAG_CALL_RING != 0;
        if ring {
            match self
                .shared
                .take_fd()
                .map(|fd| vcuda_ring::Mapping::attach(&fd))
            {
                Some(Ok(m)) => self.call_ring = Some(m),
                Some(Err(e)) => debug!("call ring refused: {e}"),
                None => debug!("call ring offered without its file"),
            }
        }
        self.hello = true;
        let (free_memory, total_memory) = self.exec.mem_get_info(0).unwrap_or((0, 0));
        let sessions = u32::try_from(crate::metrics::live_sessions()).unwrap_or(u32::MAX);
        let resp = HelloResp {
            protocol_version: u32::from(PROTOCOL_VERSION),
            executor: self.backend.kind() as u32,
            device_count: self.exec.device_count(),
            driver_version: self.exec.driver_version(),
            max_segment_len: MAX_SEGMENT_LEN,
            max_data_len: MAX_DATA_LEN,
            features: match (self.shares_memory(), self.exec.can_map_host_memory()) {
                (false, _) => 0,
                (true, false) => HELLO_FEATURE_SHARED_MEMORY,
                (true, true) if self.exec.prefers_managed_on_device() => {
                    HELLO_FEATURE_SHARED_MEMORY
                        | HELLO_FEATURE_MAP_HOST_MEMORY
                        | HELLO_FEATURE_MANAGED_ON_DEVICE
                }
                (true, true) => HELLO_FEATURE_SHARED_MEMORY | HELLO_FEATURE_MAP_HOST_MEMORY,
            },
            free_memory,
            total_memory,
            sessions,
            reserved: 0,
        };
        let mut resp = resp;
        if self.call_ring.is_some() {
            resp.features |= HELLO_FEATURE_CALL_RING;
        }
        Ok(reply::<ops::Hello>(resp))
    }

    fn dispatch(
        &mut self,
        req: &Request<'_>,
        raw: &RawRequest<'_>,
        out: &DataSegs<'_>,
        inp: &DataSegs<'_>,
    ) -> ExecResult<(Vec<u8>, u64)> {
        let e = &mut self.exec;
        let handle = |h: u64| HandleResp { handle: h };
        let name = |n: &[u8]| {
            std::str::from_utf8(n)
                .map_err(|_| Status::INVALID_VALUE)
                .map(str::to_owned)
        };
        // The rows of the table that name their executor call are answered by the dispatch
        // generated from it; the others here.
        if let Some(r) = crate::dispatch::served(e.as_mut(), req) {
            return r;
        }
        match *req {
            // Answered above; listed so that this match still covers every operation.
            served_request!() => Err(Status::UNKNOWN),
            Request::Hello(..) => unreachable_hello(),
            Request::Nop(()) => done::<ops::Nop>(Ok(())),
            Request::DeviceReset(d) => {
                let r = e.device_reset(d.device);
                // The executor's graphs went with the device's state.
                self.graphs.reset();
                if r.is_ok() {
                    self.sticky = None;
                }
                done::<ops::DeviceReset>(r)
            }
            Request::IpcOpenMemHandle(r) => e
                .ipc_open_mem_handle(&r.handle, r.flags)
                .map(|(ptr, len)| reply::<ops::IpcOpenMemHandle>(IpcOpenResp { ptr, len })),
            Request::IpcOpenEventHandle(r) => {
                if r.flags != 0 {
                    return Err(Status::INVALID_VALUE);
                }
                e.ipc_open_event_handle(&r.handle)
                    .map(|handle| reply::<ops::IpcOpenEventHandle>(HandleResp { handle }))
            }
            Request::MemcpyHtoD(ref r) => {
                let src = out
                    .sub(raw.out_offset, raw.out_len)
                    .map_err(|_| Status::INVALID_VALUE)?;
                done::<ops::MemcpyHtoD>(e.memcpy_htod(r, &src))
            }
            Request::MemcpyDtoH(ref r) => {
                let dst = inp
                    .sub(raw.in_offset, raw.in_len)
                    .map_err(|_| Status::INVALID_VALUE)?;
                e.memcpy_dtoh(r, &dst).map(|()| (Vec::new(), raw.in_len))
            }
            Request::ShareMemory(r) => {
                if !self.passes_fds {
                    return Err(Status(status::NOT_SUPPORTED));
                }
                let h = self.shared.share(r.len)?;
                if let Some((addr, len)) = self.shared.range(h) {
                    e.host_memory_shared(addr, len);
                }
                Ok(reply::<ops::ShareMemory>(handle(h)))
            }
            Request::UnshareMemory(h) => done::<ops::UnshareMemory>(self.unshare_region(h.handle)),
            Request::MapHostMemory(r) => {
                done::<ops::MapHostMemory>(self.map_host(r.region, r.offset, r.len, r.addr, None))
            }
            Request::UnmapHostMemory(p) => {
                let mapped = self.mapped.remove(&p.ptr).ok_or(Status::INVALID_VALUE)?;
                let r = e.host_memory_unmap(p.ptr);
                drop(mapped);
                done::<ops::UnmapHostMemory>(r)
            }
            Request::MemcpyHtoDShared(ref r) => {
                done::<ops::MemcpyHtoDShared>(self.shared.copy_to_device(e.as_mut(), r))
            }
            Request::MemcpyDtoHShared(ref r) => {
                done::<ops::MemcpyDtoHShared>(self.shared.copy_to_host(e.as_mut(), r))
            }
            Request::MipmappedArrayGetLevel(r) => {
                if r.reserved != 0 {
                    return Err(Status::INVALID_VALUE);
                }
                e.mipmapped_array_level(r.handle, r.level)
                    .map(|h| reply::<ops::MipmappedArrayGetLevel>(handle(h)))
            }
            Request::TexObjectDestroy(r) => {
                if r.flags & !TEX_SURFACE != 0 || r.reserved != 0 {
                    return Err(Status::INVALID_VALUE);
                }
                let surface = r.flags & TEX_SURFACE != 0;
                done::<ops::TexObjectDestroy>(e.tex_object_destroy(r.handle, surface))
            }
            Request::ModuleLoad(ref m) => self
                .backend
                .modules
                .load(e.as_mut(), &mut self.sent_images, m, out, raw)
                .map(reply::<ops::ModuleLoad>),
            Request::FunctionGet(f, n) => {
                let info = e.function_get(f.module, &name(n)?)?;
                let params = info.params.as_deref().unwrap_or(&[]);
                let resp = FunctionGetResp {
                    handle: info.handle,
                    n_params: info
                        .params
                        .as_ref()
                        .map_or(PARAMS_UNKNOWN, |p| p.len() as u32),
                    param_size: info.param_size,
                    attrs: info.attrs,
                };
                // The reply's tail: one `ParamInfo` per parameter.
                let (mut bytes, _) = reply::<ops::FunctionGet>(resp);
                bytes.extend_from_slice(params.as_bytes());
                Ok((bytes, 0))
            }
            Request::VmmCreate(r) => {
                if r.reserved != 0 {
                    return Err(Status::INVALID_VALUE);
                }
                e.vmm_create(r.device, r.size)
                    .map(|h| reply::<ops::VmmCreate>(handle(h)))
            }
            Request::ModuleFunction(r) => {
                let (count, name) = e.module_function(r.module, r.index)?;
                let name = name.as_deref().map_or(&[][..], str::as_bytes);
                if name.len() > vcuda_protocol::MAX_NAME_LEN {
                    return Err(Status::NOT_SUPPORTED);
                }
                let resp = ModuleFunctionResp {
                    count,
                    name_len: name.len() as u32,
                };
                let (mut bytes, _) = reply::<ops::ModuleFunction>(resp);
                bytes.extend_from_slice(name);
                Ok((bytes, 0))
            }
            Request::SymbolGet(s, n) => e
                .symbol_get(s.module, &name(n)?)
                .map(|(ptr, size)| reply::<ops::SymbolGet>(SymbolGetResp { ptr, size })),
            Request::SymbolBind(r, n) => {
                done::<ops::SymbolBind>(e.symbol_bind(r.module, &name(n)?, r.addr, r.size))
            }
            Request::Launch(ref l, params) => done::<ops::Launch>(e.launch(l, params)),
            Request::LaunchCooperative(ref l, params) => {
                done::<ops::LaunchCooperative>(e.launch_cooperative(l, params))
            }
            Request::LaunchCluster(ref l, params) => {
                done::<ops::LaunchCluster>(e.launch_cluster(&l.launch, l.cluster, params))
            }
            Request::GraphCreate(ref g) => {
                let mut desc = vec![0u8; raw.out_len as usize];
                if !desc.is_empty() {
                    out.read_at(raw.out_offset, &mut desc)
                        .map_err(|_| Status::INVALID_VALUE)?;
                }
                self.graphs
                    .create(e.as_mut(), &desc, g.node_count)
                    .map(|h| reply::<ops::GraphCreate>(handle(h)))
            }
            Request::GraphLaunch(l) => {
                let r = self
                    .graphs
                    .launch(e.as_mut(), &self.shared, l.graph, l.stream);
                done::<ops::GraphLaunch>(r)
            }
            Request::GraphDestroy(h) => {
                done::<ops::GraphDestroy>(self.graphs.destroy(e.as_mut(), h.handle))
            }
            Request::BlasCall(ref c) => e
                .blas_call(c)
                .map(|value| reply::<ops::BlasCall>(BlasCallResp { value }))
                .map_err(|s| posted_library_error(raw, s)),
            Request::RandGenerate(ref g) => {
                let dst = inp
                    .sub(raw.in_offset, raw.in_len)
                    .map_err(|_| Status::INVALID_VALUE)?;
                e.rand_generate(g, &dst)
                    .map(|n| (Vec::new(), n))
                    .map_err(|s| posted_library_error(raw, s))
            }
        }
    }
}

/// A library call the guest posted without waiting fails as an asynchronous CUDA error
/// (the guest reports it from a later runtime call), so a library status must not travel
/// there: it would read as an unrelated `cudaError_t`. The guest checks the arguments of
/// what it posts, so this is a memory fault (already a CUDA code) or an operation the
/// executor cannot do.
fn posted_library_error(raw: &RawRequest<'_>, s: Status) -> Status {
    let posted = raw.header.flags & REQ_REPLY_ON_ERROR != 0;
    match s.code() {
        _ if !posted => s,
        status::ILLEGAL_ADDRESS | status::MISALIGNED_ADDRESS => s,
        lib::BLAS_NOT_SUPPORTED => Status::NOT_SUPPORTED,
        _ => Status(status::LAUNCH_FAILURE),
    }
}

fn unreachable_hello() -> ExecResult<(Vec<u8>, u64)> {
    // `run` answers Hello before dispatching; a second path here would be a bug, not a
    // guest error, but still must not panic.
    Err(Status::UNKNOWN)
}

/// The status of a message-level failure, for transports that reject a message before the
/// session sees it.
pub fn malformed_status() -> CudaStatus {
    status::INVALID_VALUE
}

/// Checks a message header (for transports that read it separately).
pub fn check_header(bytes: &[u8]) -> Result<MessageHeader, decode::DecodeError> {
    decode::decode_message_header(bytes)
}
