// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vhost-user backend end to end, without QEMU: the real server on a temporary socket in
//! a thread, this test playing QEMU's part (the `vhost` crate's frontend, memfd-backed guest
//! memory shared through SET_MEM_TABLE) and the guest driver's (split virtqueues in that
//! memory, kicks and calls through eventfds).

mod testutils;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use testutils::*;
use vcuda_backend::Backend;
use vcuda_backend::executor::ExecutorFactory;
use vcuda_backend::vhost_user::device::NO_SESSION;
use vcuda_backend::vhost_user::{ConnectionEnd, Server, VhostUserConfig};
use vcuda_protocol::status;
use vcuda_protocol::virtio::{CONFIG_MAGIC, ChainOp, MAX_CHAIN_DESCRIPTORS};
use vcuda_protocol::*;
use vm_memory::{Bytes, GuestAddress};
use zerocopy::IntoBytes;

const RAM: u64 = 32 << 20;

struct Rig {
    _dir: tempfile::TempDir,
    path: PathBuf,
    server: Option<JoinHandle<Vec<ConnectionEnd>>>,
    precopy: Option<Arc<vcuda_backend::vhost_user::Precopy>>,
}

impl Rig {
    /// A server for `connections` connections in turn, with `queues` queues.
    fn new(factory: Arc<dyn ExecutorFactory>, queues: u32, connections: usize) -> Self {
        Self::with(factory, queues, connections, |_| {})
    }

    /// [`Rig::new`], its configuration changed by `config`.
    fn with(
        factory: Arc<dyn ExecutorFactory>,
        queues: u32,
        connections: usize,
        config: impl FnOnce(&mut VhostUserConfig),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vcuda.sock");
        let mut c = VhostUserConfig {
            max_sessions: 16,
            ..VhostUserConfig::new(path.clone(), queues)
        };
        config(&mut c);
        let mut server = Server::new(c, Backend::new(factory)).unwrap();
        let precopy = server.precopy();
        let server = std::thread::spawn(move || {
            (0..connections)
                .map(|_| server.serve_one().unwrap())
                .collect()
        });
        Self {
            _dir: dir,
            path,
            server: Some(server),
            precopy,
        }
    }

    fn connect(&self, queues: usize) -> VhostClient {
        VhostClient::connect(&self.path, queues, RAM)
    }

    /// Waits for the server to have served all its connections; each must end cleanly.
    fn finish(mut self) {
        let ends = self.server.take().unwrap().join().unwrap();
        for e in ends {
            assert!(e.error.is_none(), "{e:?}");
        }
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
        .collect()
}

fn free_mem(c: &mut VhostClient, q: usize, id: u64) -> u64 {
    c.send(q, id, Msg::new().mem_get_info())
        .ok()
        .get::<MemGetInfoResp>()
        .free
}

#[test]
fn protocol_suite() {
    let factory = TestFactory::new(Duration::ZERO);
    let rig = Rig::new(factory.clone(), 2, 1);
    let mut c = rig.connect(2);

    // Config space and memory table.
    assert_eq!(c.config.magic, CONFIG_MAGIC);
    assert_eq!(c.config.num_request_queues, 2);
    assert_eq!(c.config.max_chain_descriptors, MAX_CHAIN_DESCRIPTORS);
    assert_eq!(c.config.protocol_version, u32::from(PROTOCOL_VERSION));

    // Hello, on each queue.
    assert_eq!(c.open(0, 0xa), 0);
    // SET_MEM_TABLE is asynchronous; a completed chain proves it was applied.
    let regions = factory.regions.lock().unwrap().clone();
    assert_eq!(regions.len(), 2);
    assert_eq!(regions.iter().map(|r| r.1 as u64).sum::<u64>(), RAM);
    assert_eq!(c.open(1, 0xb), 0);
    let r = c.send(0, 0xa, Msg::new().hello());
    let h = r.ok().get::<HelloResp>();
    assert_eq!(h.protocol_version, u32::from(PROTOCOL_VERSION));
    assert_eq!(h.executor, ExecutorKind::Cpu as u32);
    c.send(1, 0xb, Msg::new().hello()).ok();

    // Malloc, then copies whose data spans many descriptors: 256 KiB in 4 KiB pieces goes
    // through an indirect table; 40 KiB in 4 KiB pieces is a direct chain of 13.
    let ptr = c
        .send(0, 0xa, Msg::new().malloc(1 << 20))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let data = pattern(256 << 10, 5);
    let r = c.send(0, 0xa, Msg::new().htod(ptr, &data));
    assert_eq!(r.statuses(), [0]);
    let r = c.send(0, 0xa, Msg::new().dtoh(ptr, data.len() as u64));
    assert_eq!(r.ok().in_len, data.len() as u64);
    assert_eq!(r.in_data, data);
    assert_eq!(r.used_len as usize, 64 + data.len());
    c.spec.indirect_over = 64;
    let small = pattern(40 << 10, 7);
    let r = c.send(
        0,
        0xa,
        Msg::new()
            .htod(ptr + 8, &small)
            .dtoh(ptr + 8, small.len() as u64),
    );
    assert_eq!(r.in_data, small);
    c.spec.indirect_over = 16;

    // Memset.
    let r = c.send(0, 0xa, Msg::new().memset(ptr, 0x5a, 4096).dtoh(ptr, 4096));
    assert_eq!(r.statuses(), [0, 0]);
    assert!(r.in_data.iter().all(|&b| b == 0x5a));

    // Streams and events.
    let s = c
        .send(0, 0xa, Msg::new().stream_create())
        .ok()
        .get::<HandleResp>()
        .handle;
    let r = c.send(0, 0xa, Msg::new().event_create().event_create());
    let (e0, e1) = (
        r.rec(1).get::<HandleResp>().handle,
        r.rec(2).get::<HandleResp>().handle,
    );
    let r = c.send(
        0,
        0xa,
        Msg::new()
            .event_record(e0, s)
            .memset(ptr, 1, 1 << 20)
            .event_record(e1, s)
            .on_handle(Opcode::EventSynchronize, e1)
            .event_elapsed(e0, e1)
            .on_handle(Opcode::StreamSynchronize, s)
            .on_handle(Opcode::StreamQuery, s)
            .on_handle(Opcode::EventDestroy, e0)
            .on_handle(Opcode::EventDestroy, e1)
            .on_handle(Opcode::StreamDestroy, s),
    );
    assert!(r.statuses().iter().all(|&s| s == 0), "{r:?}");
    assert!(r.rec(5).get::<EventElapsedResp>().ms >= 0.0);

    // A graph (a memset, then a copy of its first half to its second half) made once and
    // launched whole; malformed graphs and unknown handles are errors.
    {
        use vcuda_protocol::graph::{Node, NodeWork};
        let set = Node {
            work: NodeWork::Memset(MemsetReq {
                dst: ptr,
                pitch: 4096,
                width: 4096,
                height: 1,
                value: 0x33,
                elem_size: 1,
                ..Default::default()
            }),
            deps: vec![],
        };
        let copy = Node {
            work: NodeWork::Copy(MemcpyDtoDReq {
                dst: ptr + 4096,
                dpitch: 4096,
                src: ptr,
                spitch: 4096,
                width: 4096,
                height: 1,
                ..Default::default()
            }),
            deps: vec![0],
        };
        let nodes = [set, copy];
        let g = c
            .send(0, 0xa, Msg::new().graph_create(&nodes))
            .ok()
            .get::<HandleResp>()
            .handle;
        let r = c.send(
            0,
            0xa,
            Msg::new()
                .memset(ptr, 0, 8192)
                .graph_launch(g, STREAM_LEGACY)
                .graph_launch(g, STREAM_LEGACY)
                .dtoh(ptr, 8192),
        );
        assert_eq!(r.statuses(), [0, 0, 0, 0]);
        assert!(r.in_data.iter().all(|&b| b == 0x33));
        // A dependency on a later node; an unknown graph; a destroyed graph.
        let mut bad = nodes.clone();
        bad[0].deps = vec![1];
        let r = c.send(
            0,
            0xa,
            Msg::new()
                .graph_create(&bad)
                .graph_launch(g + 1, STREAM_LEGACY)
                .on_handle(Opcode::GraphDestroy, g)
                .graph_launch(g, STREAM_LEGACY),
        );
        assert_eq!(
            r.statuses(),
            [
                status::INVALID_VALUE,
                status::INVALID_VALUE,
                0,
                status::INVALID_VALUE
            ]
        );
        // A graph whose copy reaches past the allocation fails when launched, and the
        // session goes on.
        let mut far = nodes.clone();
        if let NodeWork::Copy(cp) = &mut far[1].work {
            cp.dst = ptr + (1 << 20) - 100;
        }
        let g = c
            .send(0, 0xa, Msg::new().graph_create(&far))
            .ok()
            .get::<HandleResp>()
            .handle;
        let r = c.send(0, 0xa, Msg::new().graph_launch(g, STREAM_LEGACY).nop());
        assert_ne!(r.statuses()[0], 0);
        assert_eq!(r.statuses()[1], 0);
    }

    // Errors: a bad pointer, an unknown handle; the session goes on.
    let r = c.send(
        0,
        0xa,
        Msg::new()
            .dtoh(0xdead_0000, 64)
            .on_handle(Opcode::StreamSynchronize, 77)
            .nop(),
    );
    assert_eq!(r.statuses()[0], status::INVALID_VALUE);
    assert_ne!(r.statuses()[1], 0);
    assert_eq!(r.statuses()[2], 0);

    // Asynchronous errors: a fire-and-forget message gets an empty reply when all went
    // well, and an AsyncError record when something failed.
    let mut m = Msg::new();
    m.raw(Opcode::Nop, REQ_REPLY_ON_ERROR, &[], &[], &[]);
    let r = c.send_flags(0, 0xa, &mut m, MSG_NO_WAIT);
    assert_eq!((r.used_len, r.records.len()), (32, 0));
    let mut m = Msg::new();
    m.raw(
        Opcode::Free,
        REQ_REPLY_ON_ERROR,
        &[],
        PtrReq { ptr: 0xdead }.as_bytes(),
        &[],
    );
    let r = c.send_flags(0, 0xa, &mut m, MSG_NO_WAIT);
    assert_eq!(r.records.len(), 1);
    assert_eq!(r.records[0].kind, RecordKind::AsyncError as u16);
    assert_ne!(r.records[0].status, 0);

    // Sticky errors: a faulting launch poisons the session until DeviceReset.
    let r = c.send(1, 0xb, Msg::new().launch(1, 0));
    assert_eq!(r.statuses(), [status::ILLEGAL_ADDRESS]);
    let r = c.send(1, 0xb, Msg::new().malloc(16).nop());
    assert_eq!(r.statuses(), [status::ILLEGAL_ADDRESS, 0]);
    // Session 0xa is not affected.
    c.send(0, 0xa, Msg::new().malloc(16)).ok();
    let r = c.send(1, 0xb, Msg::new().device_reset().malloc(16));
    assert_eq!(r.statuses(), [0, 0]);

    // Closing a session frees what it owns (seen from the other session).
    let before = free_mem(&mut c, 0, 0xa);
    c.send(1, 0xb, Msg::new().malloc(32 << 20)).ok();
    assert!(free_mem(&mut c, 0, 0xa) <= before - (32 << 20));
    assert_eq!(c.close(1, 0xb), 0);
    assert!(free_mem(&mut c, 0, 0xa) >= before);
    let r = c.send(1, 0xb, Msg::new().nop());
    assert_eq!(r.statuses(), [NO_SESSION]);

    // A malformed chain (a buffer beyond guest RAM) comes back empty; nothing else changes.
    let laid = lay_out(
        &c.ram.mem,
        &mut c.bump,
        &Call::submit(0xa, &[0; 32], &[], 0),
        &c.spec,
    );
    let mut bufs = laid.bufs.clone();
    bufs[0].addr = RAM + 4096;
    let head = c.queues[0].add(&c.ram.mem, &bufs, None);
    c.queues[0].kick();
    assert_eq!(
        c.queues[0].wait(&c.ram.mem, head, Duration::from_secs(10)),
        Some(0)
    );
    c.send(0, 0xa, Msg::new().nop()).ok();

    assert_eq!(c.close(0, 0xa), 0);
    drop(c);
    rig.finish();
}

/// `SharePages` of `extents` (`(guest address, bytes)`) to session `id`: the record.
fn share_pages(c: &mut VhostClient, id: u64, extents: &[(u64, u64)]) -> Record {
    use vcuda_protocol::virtio::{PageExtent, SharePagesReq};
    let req = SharePagesReq {
        len: extents.iter().map(|e| e.1).sum(),
        n_extents: extents.len() as u32,
        reserved: 0,
    };
    let mut body = req.as_bytes().to_vec();
    for &(addr, len) in extents {
        body.extend_from_slice(PageExtent { addr, len }.as_bytes());
    }
    let call = Call {
        session: id,
        op: ChainOp::SharePages,
        ctrl: &body,
        out: &[],
        in_len: 0,
    };
    c.call(0, &call).records.remove(0)
}

#[test]
fn guest_pages_are_shared_in_place() {
    let rig = Rig::new(cpu_factory(), 1, 1);
    let mut c = rig.connect(1);
    assert_eq!(c.open(0, 1), 0);
    let h = c.send(0, 1, Msg::new().hello()).ok().get::<HelloResp>();
    assert_eq!(
        h.features & (HELLO_FEATURE_SHARED_MEMORY | HELLO_FEATURE_MAP_HOST_MEMORY),
        HELLO_FEATURE_SHARED_MEMORY | HELLO_FEATURE_MAP_HOST_MEMORY
    );
    // Two pages across the boundary of guest RAM's two regions, then one far above: the
    // region is their bytes in that order.
    let half = RAM / 2;
    let far = RAM - (1 << 20);
    let extents = [(half - 4096, 8192), (far, 4096)];
    let data = pattern(3 * 4096, 3);
    c.ram
        .mem
        .write_slice(&data[..8192], GuestAddress(half - 4096))
        .unwrap();
    c.ram
        .mem
        .write_slice(&data[8192..], GuestAddress(far))
        .unwrap();
    let rec = share_pages(&mut c, 1, &extents);
    assert_eq!(rec.status, 0, "{rec:?}");
    let region = rec.get::<HandleResp>().handle;

    // The backend copies out of the guest's pages, and into them, in place.
    let ptr = c
        .send(0, 1, Msg::new().malloc(3 * 4096))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let htod = MemcpyHtoDSharedReq {
        dst: ptr,
        dpitch: 0,
        width: 3 * 4096,
        height: 1,
        region,
        offset: 0,
        ..Default::default()
    };
    let r = c.send(
        0,
        1,
        Msg::new()
            .raw(Opcode::MemcpyHtoDShared, 0, &[], htod.as_bytes(), &[])
            .dtoh(ptr, 3 * 4096),
    );
    assert_eq!(r.statuses(), [0, 0]);
    assert_eq!(r.in_data, data);
    let dtoh = MemcpyDtoHSharedReq {
        src: ptr,
        spitch: 0,
        width: 4096,
        height: 1,
        region,
        offset: 8192,
        ..Default::default()
    };
    let r = c.send(
        0,
        1,
        Msg::new().memset(ptr, 0x77, 4096).raw(
            Opcode::MemcpyDtoHShared,
            0,
            &[],
            dtoh.as_bytes(),
            &[],
        ),
    );
    assert_eq!(r.statuses(), [0, 0]);
    let mut page = vec![0u8; 4096];
    c.ram.mem.read_slice(&mut page, GuestAddress(far)).unwrap();
    assert!(page.iter().all(|&b| b == 0x77));

    // Kernels may reach it at an address the guest names.
    let map = MapHostMemoryReq {
        region,
        offset: 0,
        len: 3 * 4096,
        addr: 0x5000_0000_0000,
    };
    let r = c.send(
        0,
        1,
        Msg::new().raw(Opcode::MapHostMemory, 0, &[], map.as_bytes(), &[]),
    );
    assert_eq!(r.statuses(), [0]);

    // Unsharing ends it (and its mapping for kernels); a second time is an error.
    let unshare = |c: &mut VhostClient, handle: u64| {
        let body = vcuda_protocol::virtio::UnsharePagesReq { handle };
        let call = Call {
            session: 1,
            op: ChainOp::UnsharePages,
            ctrl: body.as_bytes(),
            out: &[],
            in_len: 0,
        };
        c.call(0, &call).records[0].status
    };
    assert_eq!(unshare(&mut c, region), 0);
    assert_eq!(unshare(&mut c, region), status::INVALID_VALUE);
    let r = c.send(
        0,
        1,
        Msg::new().raw(Opcode::MemcpyHtoDShared, 0, &[], htod.as_bytes(), &[]),
    );
    assert_eq!(r.statuses(), [status::INVALID_VALUE]);

    // Malformed requests: pages not whole, outside guest memory, lengths that disagree,
    // no extents at all (the chain itself is refused).
    for bad in [
        vec![(half + 100, 4096)],
        vec![(half, 100)],
        vec![(RAM, 4096)],
        vec![(RAM - 4096, 8192)],
    ] {
        let rec = share_pages(&mut c, 1, &bad);
        assert_eq!(rec.status, status::INVALID_VALUE, "{bad:?}");
    }
    let rec = share_pages(&mut c, 1, &[]);
    assert_ne!(rec.status, 0);
    // A region shared and never unshared goes with the session.
    let rec = share_pages(&mut c, 1, &[(far, 4096)]);
    assert_eq!(rec.status, 0);
    assert_eq!(c.close(0, 1), 0);
    drop(c);
    rig.finish();
}

#[test]
fn a_blocking_call_does_not_stall_other_sessions() {
    let rig = Rig::new(TestFactory::new(Duration::from_millis(500)), 2, 1);
    let mut c = rig.connect(2);
    for id in [1, 2, 3] {
        assert_eq!(c.open(0, id), 0);
        c.send(0, id, Msg::new().hello()).ok();
    }
    let mut m = Msg::new();
    m.on_handle(Opcode::StreamSynchronize, STREAM_LEGACY);
    let (ctrl, _) = m.finish(0);
    let t0 = Instant::now();
    let slow = c.submit(0, &Call::submit(1, &ctrl, &[], 0));
    // Same queue and the other queue.
    for (q, id) in [(0, 2), (1, 3), (0, 2)] {
        let r = c.send(q, id, Msg::new().nop());
        assert_eq!(r.statuses(), [0]);
    }
    assert!(
        t0.elapsed() < Duration::from_millis(400),
        "{:?}",
        t0.elapsed()
    );
    let r = c.wait(slow);
    assert_eq!(r.statuses(), [0]);
    assert!(t0.elapsed() >= Duration::from_millis(500));
    drop(c);
    rig.finish();
}

/// With `--poll-us`, a queue thread keeps polling its ring after a chain: the driver's next
/// chains need no kick while it does; once the poll time passed without a chain, kicks are
/// asked for again and the thread sleeps (a chain posted without a kick then waits).
///
/// Behaviour, not timing: the poll time is long beside the test's own pace (chains follow one
/// another within microseconds), and the thread's sleep is awaited, not assumed after a
/// fixed delay, so a loaded machine slows the test down without failing it.
#[test]
fn polling_serves_chains_without_kicks_then_sleeps() {
    let poll = Duration::from_secs(2);
    let rig = Rig::with(TestFactory::new(Duration::ZERO), 1, 1, |c| c.poll = poll);
    let mut c = rig.connect(1);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let (ctrl, _) = Msg::new().nop().finish(0);
    let mut unkicked = 0;
    for _ in 0..20 {
        let laid = lay_out(
            &c.ram.mem,
            &mut c.bump,
            &Call::submit(1, &ctrl, &[], 0),
            &c.spec,
        );
        let q = &mut c.queues[0];
        let old = q.avail_idx();
        let head = q.add(&c.ram.mem, &laid.bufs, None);
        // Kicks stay suppressed while the queue thread polls: never kicked here.
        if !q.needs_kick(&c.ram.mem, old) {
            unkicked += 1;
        }
        assert!(c.wait_used(0, head) > 0);
        c.bump.reset();
    }
    assert_eq!(unkicked, 20);
    // Past the poll time the thread sleeps, having asked for a kick at the next chain.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let q = &c.queues[0];
        if q.avail_event(&c.ram.mem) == q.avail_idx() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the queue thread never stopped polling"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Sleeping now: allow it the rest of the poll time for certain.
    std::thread::sleep(poll);
    let laid = lay_out(
        &c.ram.mem,
        &mut c.bump,
        &Call::submit(1, &ctrl, &[], 0),
        &c.spec,
    );
    let q = &mut c.queues[0];
    let old = q.avail_idx();
    let head = q.add(&c.ram.mem, &laid.bufs, None);
    assert!(q.needs_kick(&c.ram.mem, old));
    assert_eq!(q.wait(&c.ram.mem, head, Duration::from_millis(100)), None);
    q.kick();
    assert!(c.wait_used(0, head) > 0);
    drop(c);
    rig.finish();
}

/// Chains posted around the end of a poll, with kicks only where the device asks for them
/// (EVENT_IDX), are all served, end to end. (The race itself, a chain posted just before
/// kicks are enabled again, is pinned down by a unit test in `vhost_user::backend`.)
#[test]
fn no_chain_is_lost_when_a_poll_ends() {
    let rig = Rig::with(TestFactory::new(Duration::ZERO), 2, 1, |c| {
        c.poll = Duration::from_micros(20)
    });
    let mut c = rig.connect(2);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let spin = |us: u64| {
        let end = Instant::now() + Duration::from_micros(us);
        while Instant::now() < end {
            std::hint::spin_loop();
        }
    };
    for i in 0..400u64 {
        // Posted before, around and after the end of the poll that follows the last one;
        // `send` waits 20 s for each before failing.
        spin(i % 9 * 5);
        let q = (i / 3 % 2) as usize;
        let r = c.send(q, 1, Msg::new().nop());
        assert_eq!(r.statuses(), [0]);
        if i % 50 == 0 {
            // Two at once, the second maybe while the first is handled.
            let (ctrl, _) = Msg::new().nop().finish(0);
            let a = c.submit(q, &Call::submit(1, &ctrl, &[], 0));
            let b = c.submit(q, &Call::submit(1, &ctrl, &[], 0));
            assert_eq!(c.wait(a).statuses(), [0]);
            assert_eq!(c.wait(b).statuses(), [0]);
        }
    }
    drop(c);
    rig.finish();
}

/// A session closed, or dropped by a device reset, while a call of it runs: the call is
/// cancelled (its worker is free again at once), not run to its end.
#[test]
fn ending_a_session_cancels_its_running_call() {
    let rig = Rig::new(TestFactory::new(Duration::from_secs(60)), 2, 1);
    let mut c = rig.connect(2);
    let mut m = Msg::new();
    m.on_handle(Opcode::StreamSynchronize, STREAM_LEGACY);
    let (ctrl, _) = m.finish(0);

    // Closed by the guest.
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let t0 = Instant::now();
    let slow = c.submit(0, &Call::submit(1, &ctrl, &[], 0));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.close(1, 1), 0);
    let r = c.wait(slow);
    assert_eq!(r.statuses(), [status::LAUNCH_FAILURE]);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());

    // Dropped with its connection (QEMU killed): the connection's end cancels it, so the
    // server is done long before the call's 60 s (and before `DISCONNECT_TIMEOUT`, after
    // which it would give up on the worker). A device reset cancels the same way, once
    // the rings' stop has waited `STOP_TIMEOUT` for chains in flight (a pause keeps them).
    assert_eq!(c.open(0, 2), 0);
    c.send(0, 2, Msg::new().hello()).ok();
    let t0 = Instant::now();
    let _slow = c.submit(0, &Call::submit(2, &ctrl, &[], 0));
    std::thread::sleep(Duration::from_millis(100));
    drop(c);
    rig.finish();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[test]
fn pause_keeps_sessions_and_reset_drops_them() {
    let rig = Rig::new(TestFactory::new(Duration::ZERO), 2, 1);
    let mut c = rig.connect(2);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let total = free_mem(&mut c, 0, 1);
    c.send(0, 1, Msg::new().malloc(16 << 20)).ok();

    // A pause (QEMU's stop/cont): rings stopped and restarted where they were.
    let bases = c.stop_rings();
    assert_ne!(bases[0], 0);
    c.start_rings(&bases);
    let charged = vcuda_backend::executor::cpu::memory::charge(16 << 20).unwrap();
    assert_eq!(free_mem(&mut c, 0, 1), total - charged);

    // A guest reset: rings start over from 0; the old session is gone with its memory.
    c.reset_rings();
    let r = c.send(0, 1, Msg::new().nop());
    assert_eq!(r.statuses(), [NO_SESSION]);
    assert_eq!(c.open(1, 1), 0);
    c.send(1, 1, Msg::new().hello()).ok();
    let deadline = Instant::now() + Duration::from_secs(5);
    while free_mem(&mut c, 1, 1) != total {
        assert!(
            Instant::now() < deadline,
            "memory of the reset session not freed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(c);
    rig.finish();
}

#[test]
fn reconnect_starts_clean() {
    let rig = Rig::new(TestFactory::new(Duration::ZERO), 1, 2);
    let mut c = rig.connect(1);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let total = free_mem(&mut c, 0, 1);
    c.send(0, 1, Msg::new().malloc(64 << 20)).ok();
    // Disconnect with the session open (QEMU killed).
    drop(c);

    let mut c = rig.connect(1);
    let r = c.send(0, 1, Msg::new().nop());
    assert_eq!(r.statuses(), [NO_SESSION]);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    assert_eq!(free_mem(&mut c, 0, 1), total);
    drop(c);
    rig.finish();
}

/// Moves the state of `from`'s backend, its rings stopped, to `to`'s through
/// `SET_DEVICE_STATE_FD` and `CHECK_DEVICE_STATE`, as QEMU does in a migration; the
/// state's bytes.
fn transfer_state(from: &VhostClient, to: &VhostClient) -> usize {
    use std::io::{Read, Write};
    use vhost::vhost_user::VhostUserFrontend;
    use vhost::vhost_user::message::{VhostTransferStateDirection, VhostTransferStatePhase};
    let (mut r, w) = std::io::pipe().unwrap();
    let own = from
        .frontend
        .set_device_state_fd(
            VhostTransferStateDirection::SAVE,
            VhostTransferStatePhase::STOPPED,
            w.into(),
        )
        .unwrap();
    assert!(own.is_none(), "the backend writes into our pipe");
    let mut state = Vec::new();
    r.read_to_end(&mut state).unwrap();
    from.frontend.check_device_state().unwrap();
    let (r, mut w) = std::io::pipe().unwrap();
    to.frontend
        .set_device_state_fd(
            VhostTransferStateDirection::LOAD,
            VhostTransferStatePhase::STOPPED,
            r.into(),
        )
        .unwrap();
    w.write_all(&state).unwrap();
    drop(w);
    to.frontend.check_device_state().unwrap();
    state.len()
}

/// With a pre-copy, the destination's backend receives device memory while the guest
/// runs, and the state carries only what changed since.
#[test]
fn device_memory_copied_ahead_stays_out_of_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("precopy.sock");
    let a = Rig::with(cpu_factory(), 1, 1, |c| {
        c.precopy.listen = Some(sock.clone())
    });
    let mut c = a.connect(1);
    let len = 9usize << 20;
    // Numbers that do not compress, so the state's size shows what it carries.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut data: Vec<u8> = (0..len / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    assert_eq!(c.open(0, 7), 0);
    c.send(0, 7, Msg::new().hello()).ok();
    let ptr = c
        .send(0, 7, Msg::new().malloc(len as u64))
        .ok()
        .get::<PtrResp>()
        .ptr;
    for (i, piece) in data.chunks(1 << 20).enumerate() {
        c.send(0, 7, Msg::new().htod(ptr + (i << 20) as u64, piece))
            .ok();
    }
    let b = Rig::with(cpu_factory(), 1, 1, |c| c.precopy.from = Some(sock.clone()));
    // The first round sends the three blocks; then the middle block changes (a later round
    // may or may not send it again: either way the data must arrive).
    let t = Instant::now();
    while b.precopy.as_ref().unwrap().received_blocks() < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the pre-copy did not come"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    data[5 << 20..(5 << 20) + 4].copy_from_slice(&[1, 2, 3, 4]);
    c.send(0, 7, Msg::new().htod(ptr + (5 << 20), &[1, 2, 3, 4]))
        .ok();
    c.stop_rings();
    let mut d = b.connect(1);
    let state = transfer_state(&c, &d);
    assert!(
        state < (4 << 20) + (1 << 20),
        "the state carried {state} bytes"
    );
    for (i, piece) in data.chunks(1 << 20).enumerate() {
        let r = d.send(0, 7, Msg::new().dtoh(ptr + (i << 20) as u64, 1 << 20));
        let diff = r.in_data.iter().zip(piece).position(|(a, b)| a != b);
        assert!(
            r.in_data == piece,
            "MiB {i} differs after the move (from {diff:?})"
        );
    }
    drop((c, d));
    a.finish();
    b.finish();
}

#[test]
fn sessions_move_to_another_backend_with_the_device_state() {
    let a = Rig::new(cpu_factory(), 1, 1);
    let b = Rig::new(cpu_factory(), 1, 1);
    let mut c = a.connect(1);
    let data = pattern(100_000, 3);
    let mut ptrs = Vec::new();
    for id in [0x11, 0x22] {
        assert_eq!(c.open(0, id), 0);
        c.send(0, id, Msg::new().hello()).ok();
        let ptr = c
            .send(0, id, Msg::new().malloc(1 << 20))
            .ok()
            .get::<PtrResp>()
            .ptr;
        c.send(0, id, Msg::new().htod(ptr + id, &data)).ok();
        ptrs.push((id, ptr));
    }
    c.stop_rings();
    let mut d = b.connect(1);
    transfer_state(&c, &d);
    // On the new backend, each session with its memory at its old address.
    for &(id, ptr) in &ptrs {
        let r = d.send(0, id, Msg::new().dtoh(ptr + id, data.len() as u64));
        assert_eq!(r.in_data, data, "session {id:#x}");
    }
    // A damaged state is refused, and the sessions there go on.
    let (r, mut w) = std::io::pipe().unwrap();
    use vhost::vhost_user::VhostUserFrontend;
    use vhost::vhost_user::message::{VhostTransferStateDirection, VhostTransferStatePhase};
    d.frontend
        .set_device_state_fd(
            VhostTransferStateDirection::LOAD,
            VhostTransferStatePhase::STOPPED,
            r.into(),
        )
        .unwrap();
    std::io::Write::write_all(&mut w, b"VCUDAST\0 garbage").unwrap();
    drop(w);
    assert!(d.frontend.check_device_state().is_err());
    d.send(0, 0x11, Msg::new().nop()).ok();
    drop((c, d));
    a.finish();
    b.finish();
}

/// The live (not zombie) children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|c| {
            std::fs::read_to_string(format!("/proc/{c}/stat")).is_ok_and(|s| {
                let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
                let mut f = rest.split_whitespace();
                let state = f.next();
                state != Some("Z") && f.next() == Some(pid.to_string().as_str())
            })
        })
        .collect()
}

#[test]
fn each_vm_connection_gets_a_fresh_sandboxed_worker_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vcuda.sock");
    /// Kills the backend (and with it its worker) however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let backend = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_vcuda-backend"))
            .arg("vhost-user")
            .arg("--socket")
            .arg(&path)
            .args(["--queues", "1", "--executor", "cpu", "--cpu-memory", "256M"])
            .args(["--isolation", "process"])
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = backend.0.id();
    let wait_worker = |not: Option<u32>| {
        let start = Instant::now();
        loop {
            let c = children(pid);
            if c.len() == 1 && Some(c[0]) != not {
                return c[0];
            }
            assert!(start.elapsed() < Duration::from_secs(10), "workers: {c:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let first = wait_worker(None);
    let mut c = VhostClient::connect(&path, 1, RAM);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    let free = free_mem(&mut c, 0, 1);
    let ptr = c
        .send(0, 1, Msg::new().malloc(1 << 20))
        .ok()
        .get::<PtrResp>()
        .ptr;
    let data = pattern(64 << 10, 3);
    assert_eq!(c.send(0, 1, Msg::new().htod(ptr, &data)).statuses(), [0]);
    let r = c.send(0, 1, Msg::new().dtoh(ptr, data.len() as u64));
    assert_eq!(r.ok().in_len, data.len() as u64);
    assert_eq!(r.in_data, data);
    let status = std::fs::read_to_string(format!("/proc/{first}/status")).unwrap();
    assert!(status.contains("Seccomp:\t2"), "{status}");
    // The VM goes away: its worker exits and a new one waits for the next VM, which finds
    // nothing of the first.
    drop(c);
    let second = wait_worker(Some(first));
    assert!(!std::path::Path::new(&format!("/proc/{first}")).exists());
    let mut c = VhostClient::connect(&path, 1, RAM);
    assert_eq!(c.send(0, 1, Msg::new().nop()).statuses(), [NO_SESSION]);
    assert_eq!(c.open(0, 1), 0);
    c.send(0, 1, Msg::new().hello()).ok();
    assert_eq!(free_mem(&mut c, 0, 1), free);
    drop(c);
    let _ = second;
    drop(backend);
}
