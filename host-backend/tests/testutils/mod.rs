// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Test helpers for the vhost-user transport, shared by `vhost_queue.rs` (the queue handler
//! driven through virtio-queue's `MockSplitQueue`), `vhost_user_e2e.rs` (the real backend on a
//! socket, driven by the `vhost` crate's frontend and the small split-virtqueue driver below)
//! and the benchmark.
//!
//! - [`Msg`], [`Reply`]: building messages and reading replies.
//! - [`ChainSpec`], [`Buf`]: how a call is laid out as a descriptor chain.
//! - [`MockQueue`], [`MockRing`]: chains on a `MockSplitQueue`, completions recorded.
//! - [`GuestRam`], [`DriverQueue`], [`VhostClient`]: a userspace virtio driver: memfd-backed
//!   guest memory shared through `SET_MEM_TABLE`, split rings in it, kicks and calls through
//!   eventfds.
//! - [`TestFactory`]: the CPU executor with a slow stream synchronize and kernels that fault,
//!   for ordering and sticky-error tests.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vcuda_backend::data::DataSegs;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::executor::{
    ArrayOps, BlasOps, Cancel, DeviceOps, ExecResult, Executor, ExecutorFactory, FunctionInfo,
    GraphNode, GraphOps, HostMemoryOps, Images, IpcOps, MemoryOps, ModuleImage, ModuleOps, RandOps,
    StateOps, Status, StreamOps, Tenant, VmmOps,
};
use vcuda_backend::migrate::MigrateError;
use vcuda_backend::migrate::state::ExecState;
use vcuda_backend::vhost_user::device::UsedRing;
use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::virtio::{ChainHeader, ChainOp, MIN_REPLY_CAPACITY, VirtioCudaConfig};
use vcuda_protocol::*;
use vhost::vhost_user::message::{
    VhostUserConfigFlags, VhostUserProtocolFeatures, VhostUserVirtioFeatures,
};
use vhost::vhost_user::{Frontend, VhostUserFrontend};
use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
use virtio_queue::desc::RawDescriptor;
use virtio_queue::desc::split::Descriptor as SplitDescriptor;
use virtio_queue::mock::MockSplitQueue;
use virtio_queue::{DescriptorChain, Queue, QueueOwnedT};
use vm_memory::{Bytes, FileOffset, GuestAddress, GuestMemoryBackend};
use vmm_sys_util::eventfd::{EFD_NONBLOCK, EventFd};
use zerocopy::{FromBytes, IntoBytes};

/// The guest memory type of the backend.
pub type Mem = vcuda_backend::vhost_user::chain::Mem;

const F_NEXT: u16 = 1;
const F_WRITE: u16 = 2;
const F_INDIRECT: u16 = 4;

// ---------------------------------------------------------------------------------------
// Messages and replies
// ---------------------------------------------------------------------------------------

/// A message under construction, with its out data.
#[derive(Debug, Default)]
pub struct Msg {
    b: MessageBuilder,
    out: Vec<u8>,
    seq: u64,
}

impl Msg {
    /// An empty message.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a request; its sequence number is its index + 1.
    pub fn raw(
        &mut self,
        op: Opcode,
        flags: u16,
        segs: &[SegmentDesc],
        fixed: &[u8],
        tail: &[u8],
    ) -> &mut Self {
        self.seq += 1;
        self.b.push(op, flags, self.seq, segs, fixed, tail);
        self
    }

    /// `Hello`.
    pub fn hello(&mut self) -> &mut Self {
        let h = HelloReq {
            runtime_version: 13000,
            pid: std::process::id(),
            ..Default::default()
        };
        self.raw(Opcode::Hello, 0, &[], h.as_bytes(), b"vhost-test")
    }

    /// `Nop`.
    pub fn nop(&mut self) -> &mut Self {
        self.raw(Opcode::Nop, 0, &[], &[], &[])
    }

    /// `Malloc`.
    pub fn malloc(&mut self, size: u64) -> &mut Self {
        let r = MallocReq {
            size,
            ..Default::default()
        };
        self.raw(Opcode::Malloc, 0, &[], r.as_bytes(), &[])
    }

    /// `Free`.
    pub fn free(&mut self, ptr: u64) -> &mut Self {
        self.raw(Opcode::Free, 0, &[], PtrReq { ptr }.as_bytes(), &[])
    }

    /// `MemcpyHtoD` of `data` to `dst`.
    pub fn htod(&mut self, dst: u64, data: &[u8]) -> &mut Self {
        let r = MemcpyHtoDReq {
            dst,
            width: data.len() as u64,
            height: 1,
            ..Default::default()
        };
        self.out.extend_from_slice(data);
        self.raw(
            Opcode::MemcpyHtoD,
            0,
            &[SegmentDesc::out(data.len() as u64)],
            r.as_bytes(),
            &[],
        )
    }

    /// `GraphCreate` of `nodes` (its description in one out segment).
    pub fn graph_create(&mut self, nodes: &[vcuda_protocol::graph::Node]) -> &mut Self {
        let mut desc = Vec::new();
        for n in nodes {
            vcuda_protocol::graph::encode_node(&mut desc, n);
        }
        let r = GraphCreateReq {
            node_count: nodes.len() as u32,
            reserved: 0,
            size: desc.len() as u64,
        };
        self.out.extend_from_slice(&desc);
        let segs = if desc.is_empty() {
            vec![]
        } else {
            vec![SegmentDesc::out(desc.len() as u64)]
        };
        self.raw(Opcode::GraphCreate, 0, &segs, r.as_bytes(), &[])
    }

    /// `GraphLaunch` of `graph` on `stream`.
    pub fn graph_launch(&mut self, graph: u64, stream: u64) -> &mut Self {
        let r = GraphLaunchReq { graph, stream };
        self.raw(Opcode::GraphLaunch, 0, &[], r.as_bytes(), &[])
    }

    /// `MemcpyDtoH` of `len` bytes from `src`.
    pub fn dtoh(&mut self, src: u64, len: u64) -> &mut Self {
        let r = MemcpyDtoHReq {
            src,
            width: len,
            height: 1,
            ..Default::default()
        };
        self.raw(
            Opcode::MemcpyDtoH,
            0,
            &[SegmentDesc::input(len)],
            r.as_bytes(),
            &[],
        )
    }

    /// `Memset` of `len` bytes at `dst` to `value`.
    pub fn memset(&mut self, dst: u64, value: u8, len: u64) -> &mut Self {
        let r = MemsetReq {
            dst,
            width: len,
            height: 1,
            value: u32::from(value),
            elem_size: 1,
            ..Default::default()
        };
        self.raw(Opcode::Memset, 0, &[], r.as_bytes(), &[])
    }

    /// `MemGetInfo` on device 0.
    pub fn mem_get_info(&mut self) -> &mut Self {
        self.raw(
            Opcode::MemGetInfo,
            0,
            &[],
            DeviceReq::default().as_bytes(),
            &[],
        )
    }

    /// `DeviceReset` on device 0.
    pub fn device_reset(&mut self) -> &mut Self {
        self.raw(
            Opcode::DeviceReset,
            0,
            &[],
            DeviceReq::default().as_bytes(),
            &[],
        )
    }

    /// `StreamCreate`.
    pub fn stream_create(&mut self) -> &mut Self {
        let r = StreamCreateReq::default();
        self.raw(Opcode::StreamCreate, 0, &[], r.as_bytes(), &[])
    }

    /// A request on a handle (`StreamSynchronize`, `EventRecord`'s friends, ...).
    pub fn on_handle(&mut self, op: Opcode, handle: u64) -> &mut Self {
        self.raw(op, 0, &[], HandleReq { handle }.as_bytes(), &[])
    }

    /// `EventCreate`.
    pub fn event_create(&mut self) -> &mut Self {
        let r = EventCreateReq::default();
        self.raw(Opcode::EventCreate, 0, &[], r.as_bytes(), &[])
    }

    /// `EventRecord` of `event` on `stream`.
    pub fn event_record(&mut self, event: u64, stream: u64) -> &mut Self {
        let r = EventRecordReq {
            event,
            stream,
            ..Default::default()
        };
        self.raw(Opcode::EventRecord, 0, &[], r.as_bytes(), &[])
    }

    /// `EventElapsedTime`.
    pub fn event_elapsed(&mut self, start: u64, end: u64) -> &mut Self {
        let r = EventElapsedReq { start, end };
        self.raw(Opcode::EventElapsedTime, 0, &[], r.as_bytes(), &[])
    }

    /// `Launch` of `function` with no parameters.
    pub fn launch(&mut self, function: u64, flags: u16) -> &mut Self {
        let r = LaunchReq {
            function,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            ..Default::default()
        };
        self.raw(Opcode::Launch, flags, &[], r.as_bytes(), &[])
    }

    /// Bytes of in data the requests ask for.
    pub fn in_len(&self) -> u64 {
        self.b.in_len()
    }

    /// The control area (message header included) and the out data.
    pub fn finish(&mut self, flags: u16) -> (Vec<u8>, Vec<u8>) {
        (self.b.finish(flags).to_vec(), std::mem::take(&mut self.out))
    }
}

/// One record of a reply.
#[derive(Debug, Clone)]
pub struct Record {
    /// The request's sequence number.
    pub seq: u64,
    /// Its status.
    pub status: u32,
    /// A `RecordKind` value.
    pub kind: u16,
    /// Its payload.
    pub payload: Vec<u8>,
    /// In data it produced.
    pub in_len: u64,
}

impl Record {
    /// The payload as `T`.
    pub fn get<T: FromBytes>(&self) -> T {
        T::read_from_prefix(&self.payload)
            .unwrap_or_else(|_| panic!("short payload {:?}", self))
            .0
    }
}

/// What came back for a chain.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// `used.len`.
    pub used_len: u32,
    /// The records (empty if nothing was written).
    pub records: Vec<Record>,
    /// The in-data area as the device left it.
    pub in_data: Vec<u8>,
}

impl Reply {
    /// The only record, which must be a success.
    pub fn ok(&self) -> &Record {
        assert_eq!(self.records.len(), 1, "{self:?}");
        assert_eq!(self.records[0].status, 0, "{self:?}");
        &self.records[0]
    }

    /// Status of every record.
    pub fn statuses(&self) -> Vec<u32> {
        self.records.iter().map(|r| r.status).collect()
    }

    /// The record for request `seq`.
    pub fn rec(&self, seq: u64) -> &Record {
        self.records
            .iter()
            .find(|r| r.seq == seq)
            .unwrap_or_else(|| panic!("no record {seq} in {self:?}"))
    }
}

/// Parses a reply area. Panics on a malformed reply (the backend wrote it).
pub fn parse_reply(bytes: &[u8]) -> Vec<Record> {
    let h = decode_reply_header(bytes).expect("reply header");
    let end = size_of::<ReplyHeader>() + h.ctrl_len as usize;
    let recs = split_records(&h, &bytes[size_of::<ReplyHeader>()..end]).expect("records");
    recs.iter()
        .map(|r| Record {
            seq: r.header.seq,
            status: r.header.status,
            kind: r.header.kind,
            payload: r.payload.to_vec(),
            in_len: r.header.in_len,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Chain layout
// ---------------------------------------------------------------------------------------

/// One descriptor: a buffer in guest memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buf {
    /// Guest-physical address.
    pub addr: u64,
    /// Length.
    pub len: u32,
    /// Device-writable.
    pub write: bool,
}

/// How a call is cut into descriptors.
#[derive(Clone, Copy, Debug)]
pub struct ChainSpec {
    /// Bytes of the reply area.
    pub reply_capacity: u32,
    /// Largest descriptor for data areas.
    pub seg: usize,
    /// Cut the chain and message headers over two descriptors at this offset (0: no cut).
    pub header_cut: usize,
    /// Chains with more descriptors than this go through an indirect table.
    pub indirect_over: usize,
}

impl Default for ChainSpec {
    fn default() -> Self {
        Self {
            reply_capacity: MIN_REPLY_CAPACITY,
            seg: 4096,
            header_cut: 0,
            indirect_over: 16,
        }
    }
}

/// Guest-physical buffers of one call, as laid out by [`lay_out`].
#[derive(Clone, Debug)]
pub struct Laid {
    /// The descriptors, readable first.
    pub bufs: Vec<Buf>,
    /// The reply area.
    pub reply: (u64, u32),
    /// The in-data area's buffers.
    pub inp: Vec<(u64, u32)>,
}

/// A bump allocator over guest-physical addresses.
#[derive(Debug, Clone)]
pub struct Bump {
    start: u64,
    next: u64,
    end: u64,
}

impl Bump {
    /// Allocates from `[start, end)`.
    pub fn new(start: u64, end: u64) -> Self {
        Self {
            start,
            next: start,
            end,
        }
    }

    /// `len` bytes aligned to 64.
    pub fn alloc(&mut self, len: u64) -> u64 {
        let at = self.next.next_multiple_of(64);
        assert!(at + len <= self.end, "test guest memory exhausted");
        self.next = at + len;
        at
    }

    /// Frees everything.
    pub fn reset(&mut self) {
        self.next = self.start;
    }
}

fn split_bufs(addr: u64, len: usize, seg: usize, write: bool, out: &mut Vec<Buf>) {
    let mut at = 0;
    while at < len {
        let n = (len - at).min(seg);
        out.push(Buf {
            addr: addr + at as u64,
            len: n as u32,
            write,
        });
        at += n;
    }
}

/// One call: a chain's header fields, its control area (message header included), out
/// data and in-data length.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// Session id.
    pub session: u64,
    /// Chain operation.
    pub op: ChainOp,
    /// Message header and requests (empty for open and close).
    pub ctrl: &'a [u8],
    /// Out data.
    pub out: &'a [u8],
    /// In-data bytes.
    pub in_len: u64,
}

impl<'a> Call<'a> {
    /// An open or close of `session`.
    pub fn op(session: u64, op: ChainOp) -> Self {
        Self {
            session,
            op,
            ctrl: &[],
            out: &[],
            in_len: 0,
        }
    }

    /// A message to `session`.
    pub fn submit(session: u64, ctrl: &'a [u8], out: &'a [u8], in_len: u64) -> Self {
        Self {
            session,
            op: ChainOp::Submit,
            ctrl,
            out,
            in_len,
        }
    }
}

/// Writes a call's chain header, control area and out data into guest memory and lays out
/// its descriptors.
pub fn lay_out(mem: &Mem, bump: &mut Bump, call: &Call<'_>, spec: &ChainSpec) -> Laid {
    let Call {
        session,
        op,
        ctrl,
        out,
        in_len,
    } = *call;
    let ch = ChainHeader {
        session,
        op: op as u32,
        reply_capacity: spec.reply_capacity,
    };
    let mut head = ch.as_bytes().to_vec();
    head.extend_from_slice(ctrl);
    let at = bump.alloc(head.len() as u64);
    mem.write_slice(&head, GuestAddress(at)).unwrap();
    let mut bufs = Vec::new();
    if spec.header_cut > 0 && spec.header_cut < head.len() {
        let c = spec.header_cut;
        bufs.push(Buf {
            addr: at,
            len: c as u32,
            write: false,
        });
        bufs.push(Buf {
            addr: at + c as u64,
            len: (head.len() - c) as u32,
            write: false,
        });
    } else {
        bufs.push(Buf {
            addr: at,
            len: head.len() as u32,
            write: false,
        });
    }
    if !out.is_empty() {
        let at = bump.alloc(out.len() as u64);
        mem.write_slice(out, GuestAddress(at)).unwrap();
        split_bufs(at, out.len(), spec.seg, false, &mut bufs);
    }
    let reply_at = bump.alloc(u64::from(spec.reply_capacity));
    mem.write_slice(
        &vec![0xee; spec.reply_capacity as usize],
        GuestAddress(reply_at),
    )
    .unwrap();
    bufs.push(Buf {
        addr: reply_at,
        len: spec.reply_capacity,
        write: true,
    });
    let mut inp = Vec::new();
    if in_len > 0 {
        let at = bump.alloc(in_len);
        let first = bufs.len();
        split_bufs(at, in_len as usize, spec.seg, true, &mut bufs);
        inp = bufs[first..].iter().map(|b| (b.addr, b.len)).collect();
    }
    Laid {
        bufs,
        reply: (reply_at, spec.reply_capacity),
        inp,
    }
}

/// Reads the reply and in data of a completed call.
pub fn read_reply(mem: &Mem, laid: &Laid, used_len: u32) -> Reply {
    let mut reply = Reply {
        used_len,
        ..Default::default()
    };
    if used_len == 0 {
        return reply;
    }
    let mut bytes = vec![0u8; laid.reply.1 as usize];
    mem.read_slice(&mut bytes, GuestAddress(laid.reply.0))
        .unwrap();
    reply.records = parse_reply(&bytes);
    for &(a, l) in &laid.inp {
        let mut b = vec![0u8; l as usize];
        mem.read_slice(&mut b, GuestAddress(a)).unwrap();
        reply.in_data.extend_from_slice(&b);
    }
    reply
}

// ---------------------------------------------------------------------------------------
// MockSplitQueue
// ---------------------------------------------------------------------------------------

/// Test guest memory for the mock queue: two adjacent regions of 4 MiB at 0 (so buffers
/// may cross a region boundary), nothing at [`UNMAPPED`].
pub fn mock_mem() -> Arc<Mem> {
    Arc::new(
        Mem::from_ranges(&[(GuestAddress(0), 4 << 20), (GuestAddress(4 << 20), 4 << 20)]).unwrap(),
    )
}

/// A guest-physical address outside [`mock_mem`].
pub const UNMAPPED: u64 = 0x4000_0000;
/// Queue size of the mock queue.
pub const MOCK_QUEUE_SIZE: u16 = 256;

/// Chains on a `MockSplitQueue` at guest address 0.
pub struct MockQueue<'a> {
    mock: MockSplitQueue<'a, Mem>,
    queue: Queue,
    next_desc: u16,
    /// Buffers for chains, from 64 KiB up.
    pub bump: Bump,
}

impl<'a> MockQueue<'a> {
    /// A queue in `mem`.
    pub fn new(mem: &'a Mem) -> Self {
        let mock = MockSplitQueue::new(mem, MOCK_QUEUE_SIZE);
        let queue = mock.create_queue::<Queue>().unwrap();
        Self {
            mock,
            queue,
            next_desc: 0,
            bump: Bump::new(0x10000, 8 << 20),
        }
    }

    /// Writes raw descriptors (flags and next as given) at the next free table slots and
    /// makes `head_slot` (an index into `descs`) available. Returns the table index of the
    /// first descriptor.
    pub fn push_raw(&mut self, descs: &[SplitDescriptor], head_slot: u16) -> u16 {
        let base = self.next_desc;
        for (i, d) in descs.iter().enumerate() {
            let idx = (base + i as u16) % MOCK_QUEUE_SIZE;
            self.mock
                .desc_table()
                .store(idx, RawDescriptor::from(*d))
                .unwrap();
        }
        self.next_desc = (base + descs.len() as u16) % MOCK_QUEUE_SIZE;
        let avail = self.mock.avail();
        let idx = avail.idx().load();
        avail
            .ring()
            .ref_at(usize::from(idx % MOCK_QUEUE_SIZE))
            .unwrap()
            .store((base + head_slot) % MOCK_QUEUE_SIZE);
        avail.idx().store(idx.wrapping_add(1));
        base
    }

    /// Makes `bufs` one chain (linked in order); returns its head index.
    pub fn push(&mut self, bufs: &[Buf]) -> u16 {
        let base = self.next_desc;
        let n = bufs.len() as u16;
        let descs: Vec<SplitDescriptor> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let last = i as u16 + 1 == n;
                let flags = if b.write { F_WRITE } else { 0 } | if last { 0 } else { F_NEXT };
                SplitDescriptor::new(
                    b.addr,
                    b.len,
                    flags,
                    (base + i as u16 + 1) % MOCK_QUEUE_SIZE,
                )
            })
            .collect();
        self.push_raw(&descs, 0)
    }

    /// Makes `bufs` one chain through an indirect table placed in guest memory.
    pub fn push_indirect(&mut self, mem: &Mem, bufs: &[Buf]) -> u16 {
        let table = self.bump.alloc(16 * bufs.len() as u64);
        write_indirect_table(mem, table, bufs);
        let d = SplitDescriptor::new(table, 16 * bufs.len() as u32, F_INDIRECT, 0);
        self.push_raw(&[d], 0)
    }

    /// Pops every available chain.
    pub fn pop_all<'m>(&mut self, mem: &'m Mem) -> Vec<DescriptorChain<&'m Mem>> {
        self.queue.iter(mem).unwrap().collect()
    }
}

/// Writes an indirect descriptor table for `bufs` at `table`.
pub fn write_indirect_table(mem: &Mem, table: u64, bufs: &[Buf]) {
    let n = bufs.len() as u16;
    for (i, b) in bufs.iter().enumerate() {
        let last = i as u16 + 1 == n;
        let flags = if b.write { F_WRITE } else { 0 } | if last { 0 } else { F_NEXT };
        let d = RawDescriptor::from(SplitDescriptor::new(b.addr, b.len, flags, i as u16 + 1));
        mem.write_obj(d, GuestAddress(table + 16 * i as u64))
            .unwrap();
    }
}

/// Records completions; chains with a ticket below [`MockRing::stop`]'s are stale.
#[derive(Default)]
pub struct MockRing {
    done: Mutex<Vec<(u16, u32, u64)>>,
    /// The thread that completed each chain, in completion order.
    threads: Mutex<Vec<(u16, String)>>,
    cv: Condvar,
    first_current: AtomicU64,
    /// If nonzero: the ring stops at this many more `is_current` checks.
    stop_in: AtomicU64,
}

impl UsedRing for MockRing {
    fn complete(&self, head: u16, len: u32, ticket: u64) {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        self.threads.lock().unwrap().push((head, name));
        self.done.lock().unwrap().push((head, len, ticket));
        self.cv.notify_all();
    }

    fn is_current(&self, ticket: u64) -> bool {
        let left = self.stop_in.load(Ordering::SeqCst);
        if left > 0 {
            self.stop_in.store(left - 1, Ordering::SeqCst);
            if left == 1 {
                self.stop(u64::MAX);
            }
        }
        ticket >= self.first_current.load(Ordering::SeqCst)
    }
}

impl MockRing {
    /// Makes tickets below `ticket` stale (a ring stop).
    pub fn stop(&self, ticket: u64) {
        self.first_current.store(ticket, Ordering::SeqCst);
    }

    /// Stops the ring (every ticket stale) at the `checks`-th `is_current` check from now:
    /// `stop_after(1)` lets the next check pass and stops the ring right after it.
    pub fn stop_after(&self, checks: u64) {
        self.stop_in.store(checks + 1, Ordering::SeqCst);
    }

    /// Waits for chain `head`'s completion: its length.
    pub fn wait(&self, head: u16) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut g = self.done.lock().unwrap();
        loop {
            if let Some(i) = g.iter().position(|c| c.0 == head) {
                return g.remove(i).1;
            }
            let now = Instant::now();
            assert!(now < deadline, "chain {head} never completed");
            g = self.cv.wait_timeout(g, deadline - now).unwrap().0;
        }
    }

    /// Completions so far, in order, taken.
    pub fn take(&self) -> Vec<(u16, u32, u64)> {
        std::mem::take(&mut *self.done.lock().unwrap())
    }

    /// The names of the threads that completed chains so far, with the chains' heads, in
    /// completion order, taken.
    pub fn take_threads(&self) -> Vec<(u16, String)> {
        std::mem::take(&mut *self.threads.lock().unwrap())
    }
}

// ---------------------------------------------------------------------------------------
// Executors for tests
// ---------------------------------------------------------------------------------------

/// CPU executor settings for tests: 256 MiB of device memory, one kernel thread.
pub fn cpu_factory() -> Arc<CpuFactory> {
    Arc::new(CpuFactory::new(CpuConfig {
        memory: 256 << 20,
        threads: 1,
        ..Default::default()
    }))
}

/// The CPU executor, except that `StreamSynchronize` first sleeps `slow_sync` (ending early
/// with `cudaErrorLaunchFailure` if the session is cancelled, as a real executor's waits do)
/// and every `Launch` faults with `cudaErrorIllegalAddress` (a sticky error).
pub struct TestFactory {
    inner: Arc<CpuFactory>,
    /// How long a stream synchronize sleeps.
    pub slow_sync: Duration,
    /// Host mappings last reported by `guest_memory_changed`.
    pub regions: Mutex<Vec<(usize, usize)>>,
}

impl TestFactory {
    /// Over [`cpu_factory`].
    pub fn new(slow_sync: Duration) -> Arc<Self> {
        Arc::new(Self {
            inner: cpu_factory(),
            slow_sync,
            regions: Mutex::default(),
        })
    }
}

impl ExecutorFactory for TestFactory {
    fn kind(&self) -> ExecutorKind {
        self.inner.kind()
    }
    fn new_session(&self, tenant: Tenant) -> ExecResult<Box<dyn Executor>> {
        Ok(Box::new(TestExecutor {
            inner: self.inner.new_session(tenant)?,
            slow_sync: self.slow_sync,
            cancel: None,
        }))
    }
    fn guest_memory_changed(&self, regions: &[(usize, usize)]) {
        *self.regions.lock().unwrap() = regions.to_vec();
    }
}

struct TestExecutor {
    inner: Box<dyn Executor>,
    slow_sync: Duration,
    cancel: Option<Cancel>,
}

// Every domain of calls: the CPU executor's answers, except the slow stream synchronize
// and the faulting launch; the domains and calls these tests do not use answer that the
// executor has none.

impl DeviceOps for TestExecutor {
    fn set_cancel(&mut self, cancel: Cancel) {
        self.cancel = Some(cancel.clone());
        self.inner.set_cancel(cancel)
    }
    fn set_address_range(&mut self, base: u64, len: u64) {
        self.inner.set_address_range(base, len)
    }
    fn device_count(&self) -> u32 {
        self.inner.device_count()
    }
    fn driver_version(&self) -> u32 {
        self.inner.driver_version()
    }
    fn device_info(&mut self, device: u32) -> ExecResult<DeviceInfo> {
        self.inner.device_info(device)
    }
    fn device_synchronize(&mut self, device: u32) -> ExecResult<()> {
        self.inner.device_synchronize(device)
    }
    fn device_reset(&mut self, device: u32) -> ExecResult<()> {
        self.inner.device_reset(device)
    }
    fn memory_charged(&self) -> (u64, u64) {
        self.inner.memory_charged()
    }
    fn mem_get_info(&mut self, device: u32) -> ExecResult<(u64, u64)> {
        self.inner.mem_get_info(device)
    }
    fn set_limit(&mut self, device: u32, limit: u32, value: u64) -> ExecResult<()> {
        self.inner.set_limit(device, limit, value)
    }
    fn get_limit(&mut self, device: u32, limit: u32) -> ExecResult<u64> {
        self.inner.get_limit(device, limit)
    }
    fn take_stdout(&mut self) -> Vec<u8> {
        self.inner.take_stdout()
    }
}

impl MemoryOps for TestExecutor {
    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.inner.malloc(device, size)
    }
    fn free(&mut self, ptr: u64) -> ExecResult<()> {
        self.inner.free(ptr)
    }
    fn memcpy_htod(&mut self, req: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        self.inner.memcpy_htod(req, src)
    }
    fn memcpy_dtoh(&mut self, req: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        self.inner.memcpy_dtoh(req, dst)
    }
    fn memcpy_dtod(&mut self, req: &MemcpyDtoDReq) -> ExecResult<()> {
        self.inner.memcpy_dtod(req)
    }
    fn memset(&mut self, req: &MemsetReq) -> ExecResult<()> {
        self.inner.memset(req)
    }
}

impl HostMemoryOps for TestExecutor {
    fn host_memory_shared(&mut self, _addr: usize, _len: usize) {}
    fn host_memory_unshared(&mut self, _addr: usize) {}
    fn can_map_host_memory(&self) -> bool {
        false
    }
    fn maps_host_memory_in_place(&self) -> bool {
        false
    }
    fn mapped_memory_is_guest_pages(&mut self) {}
    fn prefers_managed_on_device(&self) -> bool {
        false
    }
    fn host_memory_map(&mut self, _addr: u64, _host: usize, _len: usize) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn host_memory_unmap(&mut self, _addr: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
}

impl ArrayOps for TestExecutor {
    fn array_create(&mut self, _req: &ArrayCreateReq) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
    fn array_destroy(&mut self, _array: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
    fn memcpy_array(&mut self, _req: &MemcpyArrayReq) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
    fn mipmapped_array_create(&mut self, _req: &MipmappedArrayCreateReq) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
    fn mipmapped_array_destroy(&mut self, _handle: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
    fn mipmapped_array_level(&mut self, _handle: u64, _level: u32) -> ExecResult<u64> {
        Err(Status::INVALID_VALUE)
    }
    fn tex_object_create(&mut self, _req: &TexObjectCreateReq) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
    fn tex_object_destroy(&mut self, _handle: u64, _surface: bool) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
}

impl StreamOps for TestExecutor {
    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64> {
        self.inner.stream_create(device, flags, priority)
    }
    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()> {
        self.inner.stream_destroy(stream)
    }
    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()> {
        let end = Instant::now() + self.slow_sync;
        while Instant::now() < end {
            if self.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
                return Err(Status(status::LAUNCH_FAILURE));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.inner.stream_synchronize(stream)
    }
    fn stream_query(&mut self, stream: u64) -> ExecResult<()> {
        self.inner.stream_query(stream)
    }
    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()> {
        self.inner.stream_wait_event(stream, event, flags)
    }
    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.inner.event_create(device, flags)
    }
    fn event_destroy(&mut self, event: u64) -> ExecResult<()> {
        self.inner.event_destroy(event)
    }
    fn event_record(&mut self, event: u64, stream: u64, flags: u32) -> ExecResult<()> {
        self.inner.event_record(event, stream, flags)
    }
    fn event_synchronize(&mut self, event: u64) -> ExecResult<()> {
        self.inner.event_synchronize(event)
    }
    fn event_query(&mut self, event: u64) -> ExecResult<()> {
        self.inner.event_query(event)
    }
    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp> {
        self.inner.event_elapsed(start, end)
    }
}

impl ModuleOps for TestExecutor {
    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        self.inner.module_load(image)
    }
    fn module_unload(&mut self, module: u64) -> ExecResult<()> {
        self.inner.module_unload(module)
    }
    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo> {
        self.inner.function_get(module, name)
    }
    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        self.inner.symbol_get(module, name)
    }
    fn module_function(&mut self, _module: u64, _index: u32) -> ExecResult<(u32, Option<String>)> {
        Err(Status::NOT_SUPPORTED)
    }
    fn symbol_bind(&mut self, _module: u64, _name: &str, _addr: u64, _size: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn launch(&mut self, _req: &LaunchReq, _params: &[u8]) -> ExecResult<()> {
        Err(Status::ILLEGAL_ADDRESS)
    }
    fn launch_cooperative(&mut self, _req: &LaunchReq, _params: &[u8]) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn launch_cluster(&mut self, _req: &LaunchReq, _c: [u32; 3], _params: &[u8]) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn occupancy_cluster(&mut self, req: &OccupancyClusterReq) -> ExecResult<OccupancyClusterResp> {
        self.inner.occupancy_cluster(req)
    }
    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        self.inner.func_set_attribute(function, attr, value)
    }
    fn tensor_map_encode(&mut self, req: &TensorMapEncodeReq) -> ExecResult<TensorMapResp> {
        self.inner.tensor_map_encode(req)
    }
    fn tensor_map_replace_address(
        &mut self,
        map: [u64; 16],
        address: u64,
    ) -> ExecResult<TensorMapResp> {
        self.inner.tensor_map_replace_address(map, address)
    }
}

impl GraphOps for TestExecutor {
    fn graph_instantiate(&mut self, _nodes: &[GraphNode]) -> ExecResult<Option<u64>> {
        Ok(None)
    }
    fn graph_launch(&mut self, _graph: u64, _stream: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
    fn graph_destroy(&mut self, _graph: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
}

impl VmmOps for TestExecutor {
    fn vmm_create(&mut self, _device: u32, _size: u64) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_release(&mut self, _handle: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_reserve(&mut self, _size: u64, _alignment: u64, _addr: u64) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_free(&mut self, _ptr: u64, _size: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_map(&mut self, _ptr: u64, _size: u64, _offset: u64, _handle: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_unmap(&mut self, _ptr: u64, _size: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn vmm_set_access(
        &mut self,
        _ptr: u64,
        _size: u64,
        _device: u32,
        _flags: u32,
    ) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
}

impl IpcOps for TestExecutor {
    fn ipc_get_mem_handle(&mut self, _ptr: u64) -> ExecResult<[u8; 64]> {
        Err(Status::NOT_SUPPORTED)
    }
    fn ipc_open_mem_handle(&mut self, _handle: &[u8; 64], _flags: u32) -> ExecResult<(u64, u64)> {
        Err(Status::NOT_SUPPORTED)
    }
    fn ipc_close_mem_handle(&mut self, _ptr: u64) -> ExecResult<()> {
        Err(Status::NOT_SUPPORTED)
    }
    fn ipc_get_event_handle(&mut self, _event: u64) -> ExecResult<[u8; 64]> {
        Err(Status::NOT_SUPPORTED)
    }
    fn ipc_open_event_handle(&mut self, _handle: &[u8; 64]) -> ExecResult<u64> {
        Err(Status::NOT_SUPPORTED)
    }
}

impl BlasOps for TestExecutor {
    fn blas_create(&mut self, _device: u32) -> ExecResult<u64> {
        Err(Status(lib::BLAS_NOT_SUPPORTED))
    }
    fn blas_destroy(&mut self, _handle: u64) -> ExecResult<()> {
        Err(Status(lib::BLAS_NOT_INITIALIZED))
    }
    fn blas_call(&mut self, _req: &BlasCallReq) -> ExecResult<[u8; 16]> {
        Err(Status(lib::BLAS_NOT_SUPPORTED))
    }
}

impl RandOps for TestExecutor {
    fn rand_create(&mut self, _rng_type: u32, _flags: u32) -> ExecResult<u64> {
        Err(Status(lib::RAND_INITIALIZATION_FAILED))
    }
    fn rand_destroy(&mut self, _handle: u64) -> ExecResult<()> {
        Err(Status(lib::RAND_NOT_INITIALIZED))
    }
    fn rand_set(&mut self, _req: &RandSetReq) -> ExecResult<()> {
        Err(Status(lib::RAND_NOT_INITIALIZED))
    }
    fn rand_generate(&mut self, _req: &RandGenerateReq, _out: &DataSegs<'_>) -> ExecResult<u64> {
        Err(Status(lib::RAND_NOT_INITIALIZED))
    }
}

impl StateOps for TestExecutor {
    fn save_state(
        &mut self,
        known: Option<vcuda_backend::migrate::Known<'_>>,
    ) -> Result<(ExecState, Vec<Arc<ModuleImage>>), MigrateError> {
        self.inner.save_state(known)
    }
    fn load_state(&mut self, state: ExecState, images: &Images) -> Result<(), MigrateError> {
        self.inner.load_state(state, images)
    }
    fn link_state(&mut self) -> Result<(), MigrateError> {
        self.inner.link_state()
    }
    fn precopy_block(
        &mut self,
        after: Option<(u64, u32)>,
        known: vcuda_backend::migrate::Known<'_>,
    ) -> Option<vcuda_backend::migrate::precopy::ChunkRead> {
        self.inner.precopy_block(after, known)
    }
}

// ---------------------------------------------------------------------------------------
// A userspace virtio driver over vhost-user
// ---------------------------------------------------------------------------------------

/// Guest RAM: a memfd mapped here as two adjacent regions (so buffers can straddle a
/// region boundary, as they can across QEMU's RAM blocks), shared with the backend.
pub struct GuestRam {
    /// The mapping.
    pub mem: Mem,
    file: File,
    /// Bytes in all.
    pub size: u64,
}

impl GuestRam {
    /// `size` bytes (a multiple of 2 MiB).
    pub fn new(size: u64) -> Self {
        let fd =
            nix::sys::memfd::memfd_create(c"vcuda-guest", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
                .expect("memfd_create");
        let file = File::from(fd);
        file.set_len(size).unwrap();
        let half = size / 2;
        let mem = Mem::from_ranges_with_files([
            (
                GuestAddress(0),
                half as usize,
                Some(FileOffset::new(file.try_clone().unwrap(), 0)),
            ),
            (
                GuestAddress(half),
                half as usize,
                Some(FileOffset::new(file.try_clone().unwrap(), half)),
            ),
        ])
        .unwrap();
        Self { mem, file, size }
    }

    /// The regions for `SET_MEM_TABLE`.
    pub fn regions(&self) -> Vec<VhostUserMemoryRegionInfo> {
        self.mem
            .iter()
            .map(|r| VhostUserMemoryRegionInfo::from_guest_region(r).unwrap())
            .collect()
    }

    /// This process's address of guest address `gpa` (what QEMU puts in `SET_VRING_ADDR`).
    pub fn hva(&self, gpa: u64) -> u64 {
        self.mem.get_host_address(GuestAddress(gpa)).unwrap() as u64
    }

    /// The memfd.
    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }
}

/// Queue size of the driver's queues (what QEMU 10 uses).
pub const DRIVER_QUEUE_SIZE: u16 = 1024;
/// Guest memory reserved per queue for its rings.
const RING_STRIDE: u64 = 64 << 10;

/// The driver side of one split virtqueue.
pub struct DriverQueue {
    index: usize,
    size: u16,
    desc: u64,
    avail: u64,
    used: u64,
    free: Vec<u16>,
    chains: HashMap<u16, Vec<u16>>,
    avail_idx: u16,
    last_used: u16,
    done: HashMap<u16, u32>,
    /// Kick eventfd (driver -> device).
    pub kick: EventFd,
    /// Call eventfd (device -> driver).
    pub call: EventFd,
    /// Wait for completions by polling the used ring, with interrupts suppressed, instead
    /// of sleeping on the call eventfd (what a polling driver does).
    pub poll: bool,
}

impl DriverQueue {
    fn new(index: usize) -> Self {
        let base = index as u64 * RING_STRIDE;
        let size = DRIVER_QUEUE_SIZE;
        Self {
            index,
            size,
            desc: base,
            avail: base + 16 * u64::from(size),
            used: (base + 16 * u64::from(size) + 6 + 2 * u64::from(size)).next_multiple_of(4),
            free: (0..size).rev().collect(),
            chains: HashMap::new(),
            avail_idx: 0,
            last_used: 0,
            done: HashMap::new(),
            kick: EventFd::new(EFD_NONBLOCK).unwrap(),
            call: EventFd::new(EFD_NONBLOCK).unwrap(),
            poll: false,
        }
    }

    /// Zeroes the rings and forgets every chain (a driver reset).
    fn reset(&mut self, mem: &Mem) {
        let len = (self.used + 6 + 8 * u64::from(self.size) - self.desc) as usize;
        mem.write_slice(&vec![0u8; len], GuestAddress(self.desc))
            .unwrap();
        self.free = (0..self.size).rev().collect();
        self.chains.clear();
        self.avail_idx = 0;
        self.last_used = 0;
        self.done.clear();
    }

    fn config(&self, ram: &GuestRam) -> VringConfigData {
        VringConfigData {
            queue_max_size: self.size,
            queue_size: self.size,
            flags: 0,
            desc_table_addr: ram.hva(self.desc),
            used_ring_addr: ram.hva(self.used),
            avail_ring_addr: ram.hva(self.avail),
            log_addr: None,
        }
    }

    /// Posts a chain; `indirect` is where to put an indirect table for it, if any.
    pub fn add(&mut self, mem: &Mem, bufs: &[Buf], indirect: Option<u64>) -> u16 {
        let descs: Vec<(u64, u32, u16)> = match indirect {
            Some(table) => {
                write_indirect_table(mem, table, bufs);
                vec![(table, 16 * bufs.len() as u32, F_INDIRECT)]
            }
            None => bufs
                .iter()
                .map(|b| (b.addr, b.len, if b.write { F_WRITE } else { 0 }))
                .collect(),
        };
        assert!(descs.len() <= self.free.len(), "queue full");
        let ids: Vec<u16> = (0..descs.len()).map(|_| self.free.pop().unwrap()).collect();
        for (i, &(addr, len, flags)) in descs.iter().enumerate() {
            let (flags, next) = match ids.get(i + 1) {
                Some(&n) => (flags | F_NEXT, n),
                None => (flags, 0),
            };
            let d = RawDescriptor::from(SplitDescriptor::new(addr, len, flags, next));
            mem.write_obj(d, GuestAddress(self.desc + 16 * u64::from(ids[i])))
                .unwrap();
        }
        let head = ids[0];
        let slot = self.avail + 4 + 2 * u64::from(self.avail_idx % self.size);
        mem.write_obj(head, GuestAddress(slot)).unwrap();
        self.avail_idx = self.avail_idx.wrapping_add(1);
        mem.store(
            self.avail_idx,
            GuestAddress(self.avail + 2),
            Ordering::Release,
        )
        .unwrap();
        self.chains.insert(head, ids);
        head
    }

    /// Notifies the device.
    pub fn kick(&self) {
        self.kick.write(1).unwrap();
    }

    /// The driver's available index (chains posted so far, modulo 2^16).
    pub fn avail_idx(&self) -> u16 {
        self.avail_idx
    }

    /// The device's `avail_event` (VIRTIO_RING_F_EVENT_IDX): kick when posting past it.
    pub fn avail_event(&self, mem: &Mem) -> u16 {
        let at = self.used + 4 + 8 * u64::from(self.size);
        mem.load(GuestAddress(at), Ordering::Acquire).unwrap()
    }

    /// Whether the chains posted since the available index was `old` need a kick
    /// (VIRTIO_RING_F_EVENT_IDX, as Linux's `virtqueue_kick_prepare`).
    pub fn needs_kick(&self, mem: &Mem, old: u16) -> bool {
        // The index store must be visible before avail_event is read.
        std::sync::atomic::fence(Ordering::SeqCst);
        let event = self.avail_event(mem);
        let new = self.avail_idx;
        new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
    }

    fn reap(&mut self, mem: &Mem) {
        let used_idx: u16 = mem
            .load(GuestAddress(self.used + 2), Ordering::Acquire)
            .unwrap();
        while self.last_used != used_idx {
            let at = self.used + 4 + 8 * u64::from(self.last_used % self.size);
            let id: u32 = mem.read_obj(GuestAddress(at)).unwrap();
            let len: u32 = mem.read_obj(GuestAddress(at + 4)).unwrap();
            let head = id as u16;
            let ids = self.chains.remove(&head).expect("used id not in flight");
            self.free.extend(ids);
            self.done.insert(head, len);
            self.last_used = self.last_used.wrapping_add(1);
        }
        // VIRTIO_RING_F_EVENT_IDX: interrupt me at the next completion; a polling driver
        // puts the event half the ring's index space ahead, so no completion interrupts.
        let used_event = self.avail + 4 + 2 * u64::from(self.size);
        let event = if self.poll {
            self.last_used.wrapping_add(0x8000)
        } else {
            self.last_used
        };
        mem.store(event, GuestAddress(used_event), Ordering::Release)
            .unwrap();
    }

    /// Waits for chain `head` to be used: its `used.len`.
    pub fn wait(&mut self, mem: &Mem, head: u16, timeout: Duration) -> Option<u32> {
        let deadline = Instant::now() + timeout;
        if self.poll {
            let mut spins = 0u32;
            loop {
                self.reap(mem);
                if let Some(len) = self.done.remove(&head) {
                    return Some(len);
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) && Instant::now() >= deadline {
                    return None;
                }
                std::hint::spin_loop();
            }
        }
        loop {
            self.reap(mem);
            if let Some(len) = self.done.remove(&head) {
                return Some(len);
            }
            // Re-check after publishing used_event, then sleep on the call eventfd.
            self.reap(mem);
            if let Some(len) = self.done.remove(&head) {
                return Some(len);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            let ms = (deadline - now).as_millis().min(100) as i32;
            let mut pfd = libc::pollfd {
                fd: self.call.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is a valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut pfd, 1, ms) };
            let _ = self.call.read();
        }
    }

    /// Chains posted and not yet used.
    pub fn in_flight(&self) -> usize {
        self.chains.len()
    }
}

/// A call posted and not yet waited for.
#[derive(Debug)]
pub struct Pending {
    /// The queue.
    pub queue: usize,
    /// The chain's head.
    pub head: u16,
    /// Its buffers.
    pub laid: Laid,
}

/// Everything a vhost-user frontend (QEMU) and a guest driver do, in one object.
pub struct VhostClient {
    /// The vhost-user connection.
    pub frontend: Frontend,
    /// Guest RAM.
    pub ram: GuestRam,
    /// The queues.
    pub queues: Vec<DriverQueue>,
    /// Buffers for calls.
    pub bump: Bump,
    /// What `GET_CONFIG` returned.
    pub config: VirtioCudaConfig,
    /// How calls are cut into descriptors.
    pub spec: ChainSpec,
    /// Waiting limit of a call.
    pub timeout: Duration,
}

/// The virtio features the test driver acks.
pub fn driver_features() -> u64 {
    (1 << 32) | (1 << 29) | (1 << 28) | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()
}

impl VhostClient {
    /// Connects to a backend on `path` and sets up `queues` queues over `ram_size` bytes of
    /// guest RAM, in QEMU's order.
    pub fn connect(path: &Path, queues: usize, ram_size: u64) -> Self {
        let mut fe = Frontend::connect(path, queues as u64).expect("connect");
        fe.set_owner().unwrap();
        let features = fe.get_features().unwrap();
        assert_eq!(
            features & driver_features(),
            driver_features(),
            "{features:#x}"
        );
        let pf = fe.get_protocol_features().unwrap();
        let want = VhostUserProtocolFeatures::CONFIG
            | VhostUserProtocolFeatures::REPLY_ACK
            | VhostUserProtocolFeatures::MQ
            | VhostUserProtocolFeatures::DEVICE_STATE;
        assert!(pf.contains(want), "{pf:?}");
        fe.set_protocol_features(want).unwrap();
        assert_eq!(fe.get_queue_num().unwrap(), queues as u64);
        fe.set_features(driver_features()).unwrap();
        let (_, cfg) = fe
            .get_config(0, 32, VhostUserConfigFlags::WRITABLE, &[0u8; 32])
            .unwrap();
        let config = VirtioCudaConfig::read_from_bytes(&cfg).unwrap();
        let ram = GuestRam::new(ram_size);
        let bump = Bump::new(queues as u64 * RING_STRIDE + (1 << 20), ram_size);
        let mut c = Self {
            frontend: fe,
            ram,
            queues: (0..queues).map(DriverQueue::new).collect(),
            bump,
            config,
            spec: ChainSpec::default(),
            timeout: Duration::from_secs(20),
        };
        c.frontend.set_mem_table(&c.ram.regions()).unwrap();
        c.start_rings(&vec![0; queues]);
        c
    }

    /// Configures and enables every ring at the given positions (`SET_VRING_NUM`, `_BASE`,
    /// `_ADDR`, `_KICK`, `_CALL`, then `_ENABLE`), then kicks each twice, as QEMU does.
    pub fn start_rings(&mut self, bases: &[u16]) {
        for (q, base) in self.queues.iter().zip(bases) {
            let i = q.index;
            self.frontend.set_vring_num(i, q.size).unwrap();
            self.frontend.set_vring_base(i, *base).unwrap();
            self.frontend
                .set_vring_addr(i, &q.config(&self.ram))
                .unwrap();
            self.frontend.set_vring_kick(i, &q.kick).unwrap();
            self.frontend.set_vring_call(i, &q.call).unwrap();
        }
        for q in &self.queues {
            self.frontend.set_vring_enable(q.index, true).unwrap();
        }
        for q in &self.queues {
            q.kick();
            q.kick();
        }
    }

    /// Stops every ring (`GET_VRING_BASE`): the positions.
    pub fn stop_rings(&mut self) -> Vec<u16> {
        (0..self.queues.len())
            .map(|i| self.frontend.get_vring_base(i).unwrap() as u16)
            .collect()
    }

    /// A guest reset: rings stopped, zeroed and started again from 0, as after a reboot.
    pub fn reset_rings(&mut self) {
        self.stop_rings();
        for q in &mut self.queues {
            q.reset(&self.ram.mem);
        }
        self.bump.reset();
        let zeros = vec![0; self.queues.len()];
        self.frontend.set_mem_table(&self.ram.regions()).unwrap();
        self.start_rings(&zeros);
    }

    /// Posts a call on queue `q` and kicks if the device asked for it (EVENT_IDX).
    pub fn submit(&mut self, q: usize, call: &Call<'_>) -> Pending {
        let laid = lay_out(&self.ram.mem, &mut self.bump, call, &self.spec);
        let indirect = (laid.bufs.len() > self.spec.indirect_over)
            .then(|| self.bump.alloc(16 * laid.bufs.len() as u64));
        let queue = &mut self.queues[q];
        let old = queue.avail_idx();
        let head = queue.add(&self.ram.mem, &laid.bufs, indirect);
        if queue.needs_kick(&self.ram.mem, old) {
            queue.kick();
        }
        Pending {
            queue: q,
            head,
            laid,
        }
    }

    /// Posts a call laid out before (its buffers reused as they are) and kicks if the
    /// device asked for it (EVENT_IDX).
    pub fn post(&mut self, q: usize, laid: &Laid, indirect: Option<u64>) -> u16 {
        let queue = &mut self.queues[q];
        let old = queue.avail_idx();
        let head = queue.add(&self.ram.mem, &laid.bufs, indirect);
        if queue.needs_kick(&self.ram.mem, old) {
            queue.kick();
        }
        head
    }

    /// Waits for chain `head` of queue `q`: its `used.len`.
    pub fn wait_used(&mut self, q: usize, head: u16) -> u32 {
        self.queues[q]
            .wait(&self.ram.mem, head, self.timeout)
            .unwrap_or_else(|| panic!("chain {head} on queue {q} never completed"))
    }

    /// The status of the first record in a laid-out call's reply area.
    pub fn first_status(&self, laid: &Laid) -> u32 {
        let at = laid.reply.0 + size_of::<ReplyHeader>() as u64 + 8;
        self.ram.mem.read_obj(GuestAddress(at)).unwrap()
    }

    /// Waits for a posted call.
    pub fn wait(&mut self, p: Pending) -> Reply {
        let len = self.queues[p.queue]
            .wait(&self.ram.mem, p.head, self.timeout)
            .unwrap_or_else(|| panic!("chain {} on queue {} never completed", p.head, p.queue));
        let r = read_reply(&self.ram.mem, &p.laid, len);
        if self.queues.iter().all(|q| q.in_flight() == 0) {
            self.bump.reset();
        }
        r
    }

    /// A call: posts and waits.
    pub fn call(&mut self, q: usize, call: &Call<'_>) -> Reply {
        let p = self.submit(q, call);
        self.wait(p)
    }

    /// Opens session `id` on queue `q`; its status.
    pub fn open(&mut self, q: usize, id: u64) -> u32 {
        let r = self.call(q, &Call::op(id, ChainOp::OpenSession));
        r.records[0].status
    }

    /// Closes session `id` on queue `q`; its status.
    pub fn close(&mut self, q: usize, id: u64) -> u32 {
        let r = self.call(q, &Call::op(id, ChainOp::CloseSession));
        r.records[0].status
    }

    /// Sends a message to session `id` on queue `q`.
    pub fn send(&mut self, q: usize, id: u64, msg: &mut Msg) -> Reply {
        self.send_flags(q, id, msg, 0)
    }

    /// Sends a message with message flags.
    pub fn send_flags(&mut self, q: usize, id: u64, msg: &mut Msg, flags: u16) -> Reply {
        let in_len = msg.in_len();
        let (ctrl, out) = msg.finish(flags);
        self.call(q, &Call::submit(id, &ctrl, &out, in_len))
    }
}
