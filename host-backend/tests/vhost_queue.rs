// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Queue handling without QEMU: chains built on virtio-queue's `MockSplitQueue` in a
//! `GuestMemoryMmap`, handed to the device core, replies read back from guest memory.

mod testutils;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use testutils::*;
use vcuda_backend::Backend;
use vcuda_backend::session::SEQ_MALFORMED;
use vcuda_backend::vhost_user::device::{
    BAD_CHAIN, Completion, Device, DeviceConfig, NO_SESSION, QueueThreadCalls, TOO_MANY_SESSIONS,
    Threading,
};
use vcuda_protocol::status;
use vcuda_protocol::virtio::{ChainHeader, ChainOp, MAX_CHAIN_DESCRIPTORS};
use vcuda_protocol::*;
use virtio_queue::desc::split::Descriptor as SplitDescriptor;
use vm_memory::{Bytes, GuestAddress};
use zerocopy::IntoBytes;

struct Rig {
    mem: Arc<Mem>,
    dev: Device,
    ring: Arc<MockRing>,
}

fn rig_with(threading: Threading, max_sessions: usize, slow: Duration) -> Rig {
    rig_calls(threading, max_sessions, slow, QueueThreadCalls::None)
}

fn rig_calls(
    threading: Threading,
    max_sessions: usize,
    slow: Duration,
    queue_thread_calls: QueueThreadCalls,
) -> Rig {
    Rig {
        mem: mock_mem(),
        dev: Device::new(
            Backend::new(TestFactory::new(slow)),
            DeviceConfig {
                max_sessions,
                threading,
                queue_thread_calls,
            },
        ),
        ring: Arc::new(MockRing::default()),
    }
}

fn rig() -> Rig {
    rig_with(Threading::Inline, 8, Duration::ZERO)
}

impl Rig {
    /// Hands every available chain to the device.
    fn run(&self, q: &mut MockQueue<'_>) {
        for c in q.pop_all(&self.mem) {
            let head = c.head_index();
            let ring: Arc<dyn vcuda_backend::vhost_user::device::UsedRing> = self.ring.clone();
            self.dev
                .handle_chain(&self.mem, c, Completion::new(ring, head, 0));
        }
    }

    /// Posts raw buffers as one chain, runs it: its used length.
    fn post(&self, q: &mut MockQueue<'_>, bufs: &[Buf]) -> u32 {
        let head = q.push(bufs);
        self.run(q);
        self.ring.wait(head)
    }

    fn call_spec(&self, q: &mut MockQueue<'_>, call: &Call<'_>, spec: &ChainSpec) -> Reply {
        let laid = lay_out(&self.mem, &mut q.bump, call, spec);
        let head = if laid.bufs.len() > spec.indirect_over {
            q.push_indirect(&self.mem, &laid.bufs)
        } else {
            q.push(&laid.bufs)
        };
        self.run(q);
        let len = self.ring.wait(head);
        let r = read_reply(&self.mem, &laid, len);
        q.bump.reset();
        r
    }

    fn send(&self, q: &mut MockQueue<'_>, session: u64, msg: &mut Msg) -> Reply {
        self.send_spec(q, session, msg, &ChainSpec::default())
    }

    fn send_spec(
        &self,
        q: &mut MockQueue<'_>,
        session: u64,
        msg: &mut Msg,
        spec: &ChainSpec,
    ) -> Reply {
        let in_len = msg.in_len();
        let (ctrl, out) = msg.finish(0);
        self.call_spec(q, &Call::submit(session, &ctrl, &out, in_len), spec)
    }

    fn op(&self, q: &mut MockQueue<'_>, session: u64, op: ChainOp) -> Reply {
        self.call_spec(q, &Call::op(session, op), &ChainSpec::default())
    }

    /// Opens a session and says hello.
    fn open(&self, q: &mut MockQueue<'_>, session: u64) {
        let r = self.op(q, session, ChainOp::OpenSession);
        assert_eq!(r.statuses(), [0]);
        assert_eq!(r.used_len, 64);
        self.send(q, session, Msg::new().hello()).ok();
    }

    /// The session still answers.
    fn alive(&self, q: &mut MockQueue<'_>, session: u64) {
        self.send(q, session, Msg::new().nop()).ok();
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn open_submit_close() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 7);
    assert_eq!(rig.dev.session_count(), 1);

    let r = rig.send(&mut q, 7, Msg::new().malloc(1 << 20));
    let ptr = r.ok().get::<PtrResp>().ptr;
    // 20 KiB of out data in 4 KiB descriptors, read back the same way.
    let data = pattern(20 << 10, 1);
    let r = rig.send(
        &mut q,
        7,
        Msg::new().htod(ptr, &data).dtoh(ptr, data.len() as u64),
    );
    assert_eq!(r.statuses(), [0, 0]);
    assert_eq!(r.rec(2).in_len, data.len() as u64);
    assert_eq!(r.in_data, data);
    // used.len = reply bytes + in data bytes.
    assert_eq!(r.used_len as usize, 32 + 2 * 32 + data.len());

    let r = rig.op(&mut q, 7, ChainOp::CloseSession);
    assert_eq!(r.statuses(), [0]);
    assert_eq!(rig.dev.session_count(), 0);
    let r = rig.send(&mut q, 7, Msg::new().nop());
    assert_eq!(r.statuses(), [NO_SESSION]);
    assert_eq!(r.records[0].seq, SEQ_MALFORMED);
}

#[test]
fn indirect_chains_and_split_headers() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let ptr = rig
        .send(&mut q, 1, Msg::new().malloc(1 << 20))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let data = pattern(100_000, 3);
    // 512-byte descriptors: ~400 of them, through an indirect table; the chain header is
    // cut in the middle of its session id.
    let spec = ChainSpec {
        seg: 512,
        header_cut: 5,
        indirect_over: 8,
        ..Default::default()
    };
    let r = rig.send_spec(
        &mut q,
        1,
        Msg::new().htod(ptr, &data).dtoh(ptr, 100_000),
        &spec,
    );
    assert_eq!(r.statuses(), [0, 0]);
    assert_eq!(r.in_data, data);
}

#[test]
fn data_across_a_region_boundary() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let ptr = rig
        .send(&mut q, 1, Msg::new().malloc(8192))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let data = pattern(8192, 9);
    let mut m = Msg::new();
    m.htod(ptr, &data);
    let (ctrl, _) = m.finish(0);
    // Out data in one descriptor that starts 100 bytes before the 4 MiB region boundary.
    let boundary = 4u64 << 20;
    rig.mem
        .write_slice(&data, GuestAddress(boundary - 100))
        .unwrap();
    let hdr = q.bump.alloc(16 + ctrl.len() as u64);
    let mut head = ChainHeader {
        session: 1,
        op: ChainOp::Submit as u32,
        reply_capacity: 4096,
    }
    .as_bytes()
    .to_vec();
    head.extend_from_slice(&ctrl);
    rig.mem.write_slice(&head, GuestAddress(hdr)).unwrap();
    let reply = q.bump.alloc(4096);
    let len = rig.post(
        &mut q,
        &[
            Buf {
                addr: hdr,
                len: head.len() as u32,
                write: false,
            },
            Buf {
                addr: boundary - 100,
                len: 8192,
                write: false,
            },
            Buf {
                addr: reply,
                len: 4096,
                write: true,
            },
        ],
    );
    assert_eq!(len, 64);
    let r = rig.send(&mut q, 1, Msg::new().dtoh(ptr, 8192));
    assert_eq!(r.in_data, data);
}

/// A chain header and reply area for hand-made chains.
fn header_buf(rig: &Rig, q: &mut MockQueue<'_>, h: ChainHeader, extra: &[u8]) -> Buf {
    let mut b = h.as_bytes().to_vec();
    b.extend_from_slice(extra);
    let at = q.bump.alloc(b.len() as u64);
    rig.mem.write_slice(&b, GuestAddress(at)).unwrap();
    Buf {
        addr: at,
        len: b.len() as u32,
        write: false,
    }
}

fn reply_buf(q: &mut MockQueue<'_>, len: u32) -> Buf {
    Buf {
        addr: q.bump.alloc(u64::from(len)),
        len,
        write: true,
    }
}

fn hdr(session: u64, op: u32, cap: u32) -> ChainHeader {
    ChainHeader {
        session,
        op,
        reply_capacity: cap,
    }
}

fn reply_at(rig: &Rig, b: &Buf) -> Vec<testutils::Record> {
    let mut bytes = vec![0u8; b.len as usize];
    rig.mem
        .read_slice(&mut bytes, GuestAddress(b.addr))
        .unwrap();
    parse_reply(&bytes)
}

#[test]
fn malformed_chains_get_error_replies_or_len_zero() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let submit = ChainOp::Submit as u32;

    // Unknown chain op: an error reply in the reply area.
    let h = header_buf(&rig, &mut q, hdr(1, 9, 4096), &[]);
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[h, rb]), 64);
    let recs = reply_at(&rig, &rb);
    assert_eq!((recs[0].seq, recs[0].status), (SEQ_MALFORMED, BAD_CHAIN));
    rig.alive(&mut q, 1);

    // Bad message magic.
    let bad = MessageHeader {
        magic: 0x1234,
        ..Default::default()
    };
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), bad.as_bytes());
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[h, rb]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);

    // Out data shorter than the header says.
    let mut m = Msg::new();
    m.htod(0x1000, &[1; 100]);
    let (ctrl, _) = m.finish(0);
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &ctrl);
    let out = Buf {
        addr: q.bump.alloc(100),
        len: 99,
        write: false,
    };
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[h, out, rb]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);

    // In area shorter than the header says.
    let mut m = Msg::new();
    m.dtoh(0x1000, 100);
    let (ctrl, _) = m.finish(0);
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &ctrl);
    let rb = reply_buf(&mut q, 4096);
    let inp = Buf {
        addr: q.bump.alloc(100),
        len: 50,
        write: true,
    };
    assert_eq!(rig.post(&mut q, &[h, rb, inp]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);

    // Reply area below MIN_REPLY_CAPACITY: still room for the error reply.
    let h = header_buf(&rig, &mut q, hdr(1, submit, 100), &[]);
    let rb = reply_buf(&mut q, 100);
    assert_eq!(rig.post(&mut q, &[h, rb]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);

    // reply_capacity beyond the writable part: the error goes in what there is.
    let h = header_buf(&rig, &mut q, hdr(1, submit, 8192), &[]);
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[h, rb]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);

    // No usable reply area: returned with len 0.
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &[]);
    let rb = reply_buf(&mut q, 32);
    assert_eq!(rig.post(&mut q, &[h, rb]), 0);
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &[]);
    assert_eq!(rig.post(&mut q, &[h]), 0);

    // Readable part too short for a chain header.
    let short = Buf {
        addr: q.bump.alloc(8),
        len: 8,
        write: false,
    };
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[short, rb]), 0);

    // Writable before readable.
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &[]);
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[rb, h]), 0);

    // A buffer outside guest memory, readable or writable.
    let h = header_buf(&rig, &mut q, hdr(1, submit, 4096), &[]);
    let rb = reply_buf(&mut q, 4096);
    let far = Buf {
        addr: UNMAPPED,
        len: 16,
        write: false,
    };
    assert_eq!(rig.post(&mut q, &[h, far, rb]), 0);
    let edge = Buf {
        addr: (8 << 20) - 8,
        len: 16,
        write: true,
    };
    assert_eq!(rig.post(&mut q, &[h, rb, edge]), 0);

    // More descriptors than MAX_CHAIN_DESCRIPTORS, through an indirect table.
    let mut bufs = vec![h];
    bufs.extend((0..MAX_CHAIN_DESCRIPTORS).map(|_| Buf {
        addr: h.addr,
        len: 1,
        write: false,
    }));
    bufs.push(rb);
    let head = q.push_indirect(&rig.mem, &bufs);
    rig.run(&mut q);
    assert_eq!(rig.ring.wait(head), 0);

    // A descriptor that loops to itself, and one whose next is out of the table.
    let base = q.push_raw(&[SplitDescriptor::new(h.addr, h.len, 1, 0)], 0);
    rig.mem
        .write_obj(
            vcuda_backend_raw(SplitDescriptor::new(h.addr, h.len, 1, base)),
            GuestAddress(16 * u64::from(base)),
        )
        .unwrap();
    rig.run(&mut q);
    assert_eq!(rig.ring.wait(base), 0);
    let base = q.push_raw(&[SplitDescriptor::new(h.addr, h.len, 1, 999)], 0);
    rig.run(&mut q);
    assert_eq!(rig.ring.wait(base), 0);

    // An indirect table whose length is not a multiple of 16.
    let base = q.push_raw(&[SplitDescriptor::new(h.addr, 15, 4, 0)], 0);
    rig.run(&mut q);
    assert_eq!(rig.ring.wait(base), 0);

    // Open and close chains with extra bytes.
    let h = header_buf(
        &rig,
        &mut q,
        hdr(5, ChainOp::OpenSession as u32, 4096),
        &[0; 8],
    );
    let rb = reply_buf(&mut q, 4096);
    assert_eq!(rig.post(&mut q, &[h, rb]), 64);
    assert_eq!(reply_at(&rig, &rb)[0].status, BAD_CHAIN);
    assert_eq!(rig.dev.session_count(), 1);

    // Through all of it, the session kept working and nothing leaked.
    rig.alive(&mut q, 1);
    assert!(rig.ring.take().is_empty());
}

fn vcuda_backend_raw(d: SplitDescriptor) -> virtio_queue::desc::RawDescriptor {
    virtio_queue::desc::RawDescriptor::from(d)
}

#[test]
fn session_ids_and_limits() {
    let rig = rig_with(Threading::Inline, 2, Duration::ZERO);
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    // Opening an id in use fails; the session is untouched.
    assert_eq!(
        rig.op(&mut q, 1, ChainOp::OpenSession).statuses(),
        [BAD_CHAIN]
    );
    rig.alive(&mut q, 1);
    // Closing an unknown id fails.
    assert_eq!(
        rig.op(&mut q, 99, ChainOp::CloseSession).statuses(),
        [BAD_CHAIN]
    );
    rig.open(&mut q, 2);
    assert_eq!(
        rig.op(&mut q, 3, ChainOp::OpenSession).statuses(),
        [TOO_MANY_SESSIONS]
    );
    assert_eq!(rig.op(&mut q, 1, ChainOp::CloseSession).statuses(), [0]);
    rig.open(&mut q, 3);
    assert_eq!(rig.dev.drop_all_sessions(), 2);
    assert_eq!(rig.dev.session_count(), 0);
}

#[test]
fn errors_and_sticky_errors_through_the_queue() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    assert_eq!(rig.op(&mut q, 1, ChainOp::OpenSession).statuses(), [0]);
    // Before Hello.
    let r = rig.send(&mut q, 1, Msg::new().malloc(64));
    assert_eq!(r.statuses(), [status::INITIALIZATION_ERROR]);
    rig.send(&mut q, 1, Msg::new().hello()).ok();
    // A bad device pointer.
    let r = rig.send(&mut q, 1, Msg::new().dtoh(0xdead_0000, 16));
    assert_eq!(r.statuses(), [status::INVALID_VALUE]);
    // A faulting kernel is sticky until DeviceReset.
    let ptr = rig
        .send(&mut q, 1, Msg::new().malloc(64))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let r = rig.send(&mut q, 1, Msg::new().launch(1, 0).memset(ptr, 0, 64));
    assert_eq!(
        r.statuses(),
        [status::ILLEGAL_ADDRESS, status::ILLEGAL_ADDRESS]
    );
    let r = rig.send(&mut q, 1, Msg::new().device_reset().malloc(64));
    assert_eq!(r.statuses(), [0, 0]);
}

/// A detached chain (posted calls nobody waits for) gets no reply; what its reply would
/// have held comes at the front of the session's next reply, and a detached chain that asks
/// for in data is refused.
#[test]
fn detached_chains_hand_their_errors_to_the_next_reply() {
    detached_chains(rig());
}

/// The same with a worker per session and short calls on the queue thread, as a VM runs.
#[test]
fn detached_chains_hand_their_records_on_with_workers() {
    detached_chains(rig_calls(
        Threading::PerSession,
        8,
        Duration::ZERO,
        QueueThreadCalls::Short,
    ));
}

fn detached_chains(rig: Rig) {
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let detached = |q: &mut MockQueue<'_>, msg: &mut Msg| {
        let in_len = msg.in_len();
        let (ctrl, out) = msg.finish(MSG_NO_WAIT);
        let call = Call {
            op: ChainOp::SubmitDetached,
            ..Call::submit(1, &ctrl, &out, in_len)
        };
        rig.call_spec(q, &call, &ChainSpec::default())
    };
    let ptr = rig
        .send(&mut q, 1, Msg::new().malloc(64))
        .ok()
        .get::<PtrResp>()
        .ptr;
    // Posted calls that succeed: nothing written, nothing held.
    let r = detached(
        &mut q,
        Msg::new()
            .raw(Opcode::Nop, REQ_REPLY_ON_ERROR, &[], &[], &[])
            .raw(Opcode::Nop, REQ_REPLY_ON_ERROR, &[], &[], &[]),
    );
    assert_eq!((r.used_len, r.records.len()), (0, 0), "{r:?}");
    assert_eq!(rig.send(&mut q, 1, Msg::new().nop()).statuses(), [0]);
    // A request that always answers: its record comes with the next reply.
    let in_len = 0;
    let (ctrl, out) = Msg::new().nop().finish(0);
    let call = Call {
        op: ChainOp::SubmitDetached,
        ..Call::submit(1, &ctrl, &out, in_len)
    };
    let r = rig.call_spec(&mut q, &call, &ChainSpec::default());
    assert_eq!((r.used_len, r.records.len()), (0, 0), "{r:?}");
    assert_eq!(rig.send(&mut q, 1, Msg::new().nop()).statuses(), [0, 0]);
    // A posted memset of a bad pointer: its error waits for the next reply.
    let bad = MemsetReq {
        dst: 0xdead_0000,
        width: 16,
        height: 1,
        elem_size: 1,
        ..Default::default()
    };
    let good = MemsetReq {
        dst: ptr,
        width: 64,
        height: 1,
        elem_size: 1,
        ..Default::default()
    };
    let r = detached(
        &mut q,
        Msg::new()
            .raw(
                Opcode::Memset,
                REQ_REPLY_ON_ERROR,
                &[],
                good.as_bytes(),
                &[],
            )
            .raw(Opcode::Memset, REQ_REPLY_ON_ERROR, &[], bad.as_bytes(), &[]),
    );
    assert_eq!((r.used_len, r.records.len()), (0, 0), "{r:?}");
    let r = rig.send(&mut q, 1, Msg::new().nop());
    assert_eq!(r.records.len(), 2, "{r:?}");
    let (held, nop) = (&r.records[0], &r.records[1]);
    assert_eq!(
        (held.kind, held.seq, held.status),
        (RecordKind::AsyncError as u16, 2, status::INVALID_VALUE)
    );
    assert_eq!(
        (nop.kind, nop.seq, nop.status),
        (RecordKind::Reply as u16, 1, 0)
    );
    // Delivered once.
    assert_eq!(rig.send(&mut q, 1, Msg::new().nop()).statuses(), [0]);
    // In data in a detached chain: refused before it runs (the reply area gets the error).
    let r = detached(&mut q, Msg::new().dtoh(ptr, 16));
    assert_eq!(r.statuses(), [status::INVALID_VALUE], "{r:?}");
    assert_eq!(rig.send(&mut q, 1, Msg::new().nop()).statuses(), [0]);
}

/// A guest that floods detached chains whose records would all be held cannot grow the
/// backend: what waits is bounded (`MAX_HELD`), the next reply carries at most that, and the
/// session goes on.
#[test]
fn held_records_are_bounded() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let mut m = Msg::new();
    for _ in 0..64 {
        m.nop();
    }
    let (ctrl, out) = m.finish(0);
    let call = Call {
        op: ChainOp::SubmitDetached,
        ..Call::submit(1, &ctrl, &out, 0)
    };
    for _ in 0..100 {
        let r = rig.call_spec(&mut q, &call, &ChainSpec::default());
        assert_eq!(r.used_len, 0);
    }
    let spec = ChainSpec {
        reply_capacity: 64 << 10,
        ..ChainSpec::default()
    };
    let r = rig.send_spec(&mut q, 1, Msg::new().nop(), &spec);
    let held = r.records.len() - 1;
    let max = (vcuda_backend::session::MAX_HELD - 32) / 32;
    assert!(
        (1..=max).contains(&held),
        "{held} records held, at most {max}"
    );
    assert_eq!(r.records.last().map(|x| (x.seq, x.status)), Some((1, 0)));
    // Delivered once; the session goes on.
    assert_eq!(rig.send(&mut q, 1, Msg::new().nop()).statuses(), [0]);
}

#[test]
fn a_blocked_session_does_not_stall_others_and_order_is_kept() {
    blocked_session(QueueThreadCalls::None);
}

#[test]
fn a_blocked_session_does_not_stall_others_and_order_is_kept_with_queue_thread_calls() {
    // Session 2's small copies are short on the CPU executor: they run on this thread.
    blocked_session(QueueThreadCalls::Short);
}

fn blocked_session(calls: QueueThreadCalls) {
    let rig = rig_calls(Threading::PerSession, 8, Duration::from_millis(400), calls);
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    rig.open(&mut q, 2);
    let ptr = rig
        .send(&mut q, 2, Msg::new().malloc(4096))
        .ok()
        .get::<PtrResp>()
        .ptr;

    // Session 1 synchronizes (slow); session 2 then sends 8 dependent copies. All popped
    // in one go from the same queue.
    let mut m = Msg::new();
    m.on_handle(Opcode::StreamSynchronize, STREAM_LEGACY);
    let (ctrl, _) = m.finish(0);
    let spec = ChainSpec::default();
    let slow = lay_out(
        &rig.mem,
        &mut q.bump,
        &Call::submit(1, &ctrl, &[], 0),
        &spec,
    );
    let slow_head = q.push(&slow.bufs);
    let mut fast = Vec::new();
    for i in 0..8u8 {
        let mut m = Msg::new();
        m.dtoh(ptr, 64).htod(ptr, &[i; 64]);
        let in_len = m.in_len();
        let (ctrl, out) = m.finish(0);
        let laid = lay_out(
            &rig.mem,
            &mut q.bump,
            &Call::submit(2, &ctrl, &out, in_len),
            &spec,
        );
        fast.push((q.push(&laid.bufs), laid));
    }
    let t0 = std::time::Instant::now();
    rig.run(&mut q);
    for (i, (head, laid)) in fast.iter().enumerate() {
        let r = read_reply(&rig.mem, laid, rig.ring.wait(*head));
        assert_eq!(r.statuses(), [0, 0]);
        // Each copy sees the previous one's data: the session's order held.
        let want = if i == 0 { 0 } else { i as u8 - 1 };
        assert!(r.in_data.iter().all(|&b| b == want), "chain {i}");
    }
    assert!(
        t0.elapsed() < Duration::from_millis(350),
        "session 2 waited for session 1"
    );
    let r = read_reply(&rig.mem, &slow, rig.ring.wait(slow_head));
    assert_eq!(r.statuses(), [0]);
    assert!(t0.elapsed() >= Duration::from_millis(400));

    // Closing frees the session's memory: visible from another session.
    let free = |rig: &Rig, q: &mut MockQueue<'_>| {
        rig.send(q, 1, Msg::new().mem_get_info())
            .ok()
            .get::<MemGetInfoResp>()
            .free
    };
    let before = free(&rig, &mut q);
    rig.send(&mut q, 2, Msg::new().malloc(8 << 20)).ok();
    assert!(free(&rig, &mut q) <= before - (8 << 20));
    assert_eq!(rig.op(&mut q, 2, ChainOp::CloseSession).statuses(), [0]);
    // Session 2's earlier 4 KiB allocation is freed too, at what it was charged.
    let charged = vcuda_backend::executor::cpu::memory::charge(4096).unwrap();
    assert_eq!(free(&rig, &mut q), before + charged);
    assert_eq!(rig.dev.drop_all_sessions(), 1);
    assert!(rig.dev.wait_idle(Duration::from_secs(5)));
}

/// Submits a 4 KiB `cudaMalloc` to session 1 with ticket 0 (the ring's stop decided by
/// `stop`, called before the chain is handed in); the reply area's first bytes once the chain
/// completed, and the used length.
fn malloc_with_ticket_0(
    rig: &Rig,
    q: &mut MockQueue<'_>,
    stop: impl FnOnce(&MockRing),
) -> (Vec<u8>, u32) {
    let mut m = Msg::new();
    m.malloc(4096);
    let (ctrl, _) = m.finish(0);
    let laid = lay_out(
        &rig.mem,
        &mut q.bump,
        &Call::submit(1, &ctrl, &[], 0),
        &ChainSpec::default(),
    );
    let head = q.push(&laid.bufs);
    stop(&rig.ring);
    for c in q.pop_all(&rig.mem) {
        let ring: Arc<dyn vcuda_backend::vhost_user::device::UsedRing> = rig.ring.clone();
        rig.dev
            .handle_chain(&rig.mem, c, Completion::new(ring, head, 0));
    }
    let len = rig.ring.wait(head);
    let mut reply = vec![0u8; 64];
    rig.mem
        .read_slice(&mut reply, GuestAddress(laid.reply.0))
        .unwrap();
    (reply, len)
}

#[test]
fn chains_of_a_stopped_ring_are_not_run() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let (reply, len) = malloc_with_ticket_0(&rig, &mut q, |r| r.stop(1));
    assert_eq!(len, 0);
    assert!(reply.iter().all(|&b| b == 0xee), "reply area written");
    rig.ring.stop(0);
    let r = rig.send(&mut q, 1, Msg::new().mem_get_info());
    let info = r.ok().get::<MemGetInfoResp>();
    assert_eq!(info.free, info.total, "the stale malloc ran");
}

#[test]
fn a_call_whose_ring_stops_while_it_runs_writes_no_reply() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    // The check before the call passes; the ring stops while the call runs (a driver reset
    // under a long kernel), so its reply must not be written: the driver may have reused
    // the reply area since.
    let (reply, _) = malloc_with_ticket_0(&rig, &mut q, |r| r.stop_after(1));
    assert!(
        reply.iter().all(|&b| b == 0xee),
        "reply area written after the stop"
    );
    rig.ring.stop(0);
    let r = rig.send(&mut q, 1, Msg::new().mem_get_info());
    let info = r.ok().get::<MemGetInfoResp>();
    assert!(info.free < info.total, "the call did not run");
}

#[test]
fn epochs_select_sessions_to_drop() {
    let rig = rig();
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    let e = rig.dev.next_epoch();
    rig.open(&mut q, 2);
    assert_eq!(rig.dev.drop_sessions_before(e), 1);
    rig.alive(&mut q, 2);
    let r = rig.send(&mut q, 1, Msg::new().nop());
    assert_eq!(r.statuses(), [NO_SESSION]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary descriptors over arbitrary memory: never a panic, every chain returned.
    #[test]
    fn arbitrary_chains_never_panic(
        descs in proptest::collection::vec((0u64..0x9000, 0u32..0x3000, 0u16..8, 0u16..300), 1..12),
        bytes in proptest::collection::vec(any::<u8>(), 0..0x800),
        op in prop_oneof![Just(0u32), Just(1), Just(3)],
        cap in prop_oneof![Just(4096u32), 0u32..0x3000],
    ) {
        let rig = rig();
        let mut q = MockQueue::new(&rig.mem);
        rig.open(&mut q, 1);
        // Memory under the buffers: random bytes, with a plausible chain header at 0x8000.
        rig.mem.write_slice(&bytes, GuestAddress(0x8000)).unwrap();
        rig.mem.write_slice(hdr(1, op, cap).as_bytes(), GuestAddress(0x8000)).unwrap();
        let raw: Vec<SplitDescriptor> = descs
            .iter()
            .map(|&(a, l, f, n)| SplitDescriptor::new(0x8000 + a, l, f, n))
            .collect();
        let base = q.push_raw(&raw, 0);
        rig.run(&mut q);
        let len = rig.ring.wait(base);
        prop_assert!(len <= 0x3000 * 12);
        rig.alive(&mut q, 1);
    }
}

/// Whether `name` is a session worker's thread.
fn on_worker(name: &str) -> bool {
    name.starts_with("vcuda-s")
}

/// Sends the message `msg` builds to `session` until it ran on the calling thread (the
/// worker may still be counting its last chain out right after completing it); the reply.
fn on_queue_thread(
    rig: &Rig,
    q: &mut MockQueue<'_>,
    session: u64,
    msg: impl Fn(&mut Msg) -> &mut Msg,
) -> Reply {
    for _ in 0..100 {
        rig.ring.take_threads();
        let r = rig.send(q, session, msg(&mut Msg::new()));
        let threads = rig.ring.take_threads();
        if !on_worker(&threads[0].1) {
            return r;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("never ran on the queue thread");
}

#[test]
fn short_calls_run_on_the_queue_thread_when_the_session_is_idle() {
    let rig = rig_calls(
        Threading::PerSession,
        8,
        Duration::ZERO,
        QueueThreadCalls::Short,
    );
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    rig.ring.take_threads();
    // Opening and Hello ran on the worker.
    let r = on_queue_thread(&rig, &mut q, 1, |m| m.nop().mem_get_info());
    assert_eq!(r.statuses(), [0, 0]);
    let ptr = rig
        .send(&mut q, 1, Msg::new().malloc(8192))
        .ok()
        .get::<PtrResp>()
        .ptr;
    // A long call (an allocation) goes to the worker, whenever it comes.
    let threads = rig.ring.take_threads();
    assert!(on_worker(&threads[0].1), "{threads:?}");
    // A 4 KiB copy each way is short on the CPU executor; the data is right.
    let data = pattern(4096, 4);
    let r = on_queue_thread(&rig, &mut q, 1, |m| m.htod(ptr, &data).dtoh(ptr, 4096));
    assert_eq!(r.statuses(), [0, 0]);
    assert_eq!(r.in_data, data);
    // A message with one long request goes to the worker as a whole.
    for _ in 0..10 {
        rig.send(&mut q, 1, Msg::new().nop().free(ptr).malloc(8192));
        let threads = rig.ring.take_threads();
        assert!(on_worker(&threads[0].1), "{threads:?}");
    }
    // Errors of a short call (an unknown stream) come back as from the worker.
    let r = on_queue_thread(&rig, &mut q, 1, |m| m.on_handle(Opcode::StreamQuery, 0xbad));
    assert_eq!(r.statuses(), [status::INVALID_RESOURCE_HANDLE]);
    // Closing still works, and frees the session on its worker.
    assert_eq!(rig.op(&mut q, 1, ChainOp::CloseSession).statuses(), [0]);
    assert!(rig.dev.wait_idle(Duration::from_secs(5)));
}

#[test]
fn without_queue_thread_calls_everything_runs_on_the_worker() {
    let rig = rig_with(Threading::PerSession, 8, Duration::ZERO);
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    for _ in 0..10 {
        rig.alive(&mut q, 1);
        let threads = rig.ring.take_threads();
        assert!(threads.iter().all(|t| on_worker(&t.1)), "{threads:?}");
    }
}

#[test]
fn a_short_call_behind_a_long_one_waits_its_turn() {
    let rig = rig_calls(
        Threading::PerSession,
        8,
        Duration::from_millis(300),
        QueueThreadCalls::Short,
    );
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    rig.open(&mut q, 2);
    // Session 1's worker is idle again.
    on_queue_thread(&rig, &mut q, 1, Msg::nop);
    on_queue_thread(&rig, &mut q, 2, Msg::nop);

    // Popped in one go: session 1 synchronizes (slow), then asks for a Nop and its memory
    // information (short); session 2, idle, asks for a Nop.
    let spec = ChainSpec::default();
    let post = |q: &mut MockQueue<'_>, session: u64, m: &mut Msg| {
        let (ctrl, _) = m.finish(0);
        let laid = lay_out(
            &rig.mem,
            &mut q.bump,
            &Call::submit(session, &ctrl, &[], 0),
            &spec,
        );
        (q.push(&laid.bufs), laid)
    };
    let sync = post(
        &mut q,
        1,
        Msg::new().on_handle(Opcode::StreamSynchronize, STREAM_LEGACY),
    );
    let nop = post(&mut q, 1, Msg::new().nop());
    let info = post(&mut q, 1, Msg::new().mem_get_info());
    let other = post(&mut q, 2, Msg::new().nop());
    rig.ring.take_threads();
    let t0 = std::time::Instant::now();
    rig.run(&mut q);
    // Session 2's Nop ran here, at once.
    let threads = rig.ring.take_threads();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(threads[0].0, other.0);
    assert!(!on_worker(&threads[0].1));
    assert!(t0.elapsed() < Duration::from_millis(250));
    for (head, laid) in [&sync, &nop, &info, &other] {
        let r = read_reply(&rig.mem, laid, rig.ring.wait(*head));
        assert_eq!(r.statuses(), [0]);
    }
    // Session 1's short calls waited for its synchronize, on its worker, in order.
    assert!(t0.elapsed() >= Duration::from_millis(300));
    let threads = rig.ring.take_threads();
    let heads: Vec<u16> = threads.iter().map(|t| t.0).collect();
    assert_eq!(heads, [sync.0, nop.0, info.0]);
    assert!(threads.iter().all(|t| on_worker(&t.1)), "{threads:?}");
    assert_eq!(rig.dev.drop_all_sessions(), 2);
    assert!(rig.dev.wait_idle(Duration::from_secs(5)));
}

#[test]
fn a_short_call_of_a_stopped_ring_is_not_run() {
    let rig = rig_calls(
        Threading::PerSession,
        8,
        Duration::ZERO,
        QueueThreadCalls::Short,
    );
    let mut q = MockQueue::new(&rig.mem);
    rig.open(&mut q, 1);
    on_queue_thread(&rig, &mut q, 1, Msg::nop);
    // A Nop popped before the ring stopped (ticket 0): nothing written, len 0, and it was
    // decided on this thread.
    let (ctrl, _) = Msg::new().nop().finish(0);
    let laid = lay_out(
        &rig.mem,
        &mut q.bump,
        &Call::submit(1, &ctrl, &[], 0),
        &ChainSpec::default(),
    );
    let head = q.push(&laid.bufs);
    rig.ring.stop(1);
    for c in q.pop_all(&rig.mem) {
        let ring: Arc<dyn vcuda_backend::vhost_user::device::UsedRing> = rig.ring.clone();
        rig.dev
            .handle_chain(&rig.mem, c, Completion::new(ring, head, 0));
    }
    assert_eq!(rig.ring.wait(head), 0);
    let mut reply = vec![0u8; 64];
    rig.mem
        .read_slice(&mut reply, GuestAddress(laid.reply.0))
        .unwrap();
    assert!(reply.iter().all(|&b| b == 0xee), "reply area written");
    rig.ring.stop(0);
    rig.alive(&mut q, 1);
}
