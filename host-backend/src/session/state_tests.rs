// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A session built on the CPU executor, saved, encoded, decoded and loaded into another
//! backend, must go on exactly as the session it came from.

use std::sync::Arc;

use vcuda_protocol::graph::{Node, NodeWork, encode_node};
use vcuda_protocol::lib::{dist, set};
use vcuda_protocol::{
    ARRAY_COPY_TO_ARRAY, ArrayCreateReq, CHANNEL_FLOAT, ChannelFormat, LaunchReq, MemcpyArrayReq,
    MemcpyDtoHReq, MemcpyHtoDReq, RESOURCE_ARRAY, RandGenerateReq, RandSetReq, TexObjectCreateReq,
};
use vcuda_protocol::{RecordKind, status};

use crate::data::DataSegs;
use crate::executor::cpu::{CpuConfig, CpuFactory};
use crate::executor::testing::ptx_fatbin;
use crate::executor::{Cancel, Tenant};
use crate::migrate::state::{DeviceState, ExecState};
use crate::migrate::{MigrateError, format};
use crate::{Backend, Session};

const PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 counter = 5;
.visible .entry bump(.param .u64 p, .param .u32 n)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<6>;
  .reg .pred %p1;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r3, [%rd3];
  ld.global.u32 %r4, [counter];
  add.u32 %r3, %r3, %r4;
  st.global.u32 [%rd3], %r3;
DONE:
  ret;
}
.visible .entry tick()
{
  .reg .b32 %r<2>;
  ld.global.u32 %r1, [counter];
  add.u32 %r1, %r1, 1;
  st.global.u32 [counter], %r1;
  ret;
}
"#;

const N: u32 = 64;

fn backend() -> Arc<Backend> {
    Backend::new(Arc::new(CpuFactory::new(CpuConfig {
        memory: 256 << 20,
        threads: 1,
        ..Default::default()
    })))
}

/// Handles the steps below use.
#[derive(Clone, Copy, Debug)]
struct Built {
    buf: u64,
    bump: u64,
    tick: u64,
    stream: u64,
    events: [u64; 2],
    rng: u64,
    blas: u64,
    graph: u64,
    array: u64,
    tex: u64,
    /// A reservation holding two mappings of the VMM API side by side: a physical
    /// allocation of two granules and one released (it lives on in its mapping).
    vmm: u64,
    /// The VMM allocations: mapped, mapped and released, unmapped.
    phys: [u64; 3],
}

/// The VMM API's granularity.
const G: u64 = crate::executor::vmm::GRANULARITY;

/// Builds state of every kind the CPU executor saves.
fn build(s: &mut Session) -> Built {
    s.hello = true;
    // What a detached message's failure left for the guest's next reply.
    s.held
        .push(RecordKind::AsyncError, 7, status::INVALID_VALUE, &[], 0);
    let e = s.exec.as_mut();
    let buf = e.malloc(0, u64::from(N) * 4).unwrap();
    // A freed allocation leaves a hole the next one must not be placed in by accident.
    let hole = e.malloc(0, 1 << 20).unwrap();
    e.free(hole).unwrap();
    let mut init: Vec<u8> = (0..N).flat_map(|i| (i * 3).to_le_bytes()).collect();
    e.memcpy_htod(
        &MemcpyHtoDReq {
            dst: buf,
            width: init.len() as u64,
            height: 1,
            ..Default::default()
        },
        &DataSegs::from_slice(&mut init),
    )
    .unwrap();
    let module = e.module_load(ptx_fatbin(PTX)).unwrap();
    let bump = e.function_get(module, "bump").unwrap().handle;
    let tick = e.function_get(module, "tick").unwrap().handle;
    let stream = e.stream_create(0, 1, 0).unwrap();
    let events = [e.event_create(0, 0).unwrap(), e.event_create(0, 0).unwrap()];
    e.event_record(events[0], stream, 0).unwrap();
    let rng = e.rand_create(101, 0).unwrap();
    e.rand_set(&RandSetReq {
        handle: rng,
        what: set::SEED,
        reserved: 0,
        value: 1234,
    })
    .unwrap();
    let blas = e.blas_create(0);
    let tick_node = Node {
        work: NodeWork::Kernel(
            LaunchReq {
                function: tick,
                grid: [1, 1, 1],
                block: [1, 1, 1],
                ..Default::default()
            },
            Vec::new(),
            false,
        ),
        deps: Vec::new(),
    };
    // A 16x4 float array holding the first 256 bytes of `buf`, and a texture over it.
    let array = e
        .array_create(&ArrayCreateReq {
            format: ChannelFormat {
                bits: [32, 0, 0, 0],
                kind: CHANNEL_FLOAT,
            },
            width: 16,
            height: 4,
            ..Default::default()
        })
        .unwrap();
    e.memcpy_array(&array_copy(array, buf, true)).unwrap();
    let tex = e
        .tex_object_create(&TexObjectCreateReq {
            resource: RESOURCE_ARRAY,
            array,
            ..Default::default()
        })
        .unwrap();
    let mut desc = Vec::new();
    encode_node(&mut desc, &tick_node);
    encode_node(&mut desc, &tick_node);
    let graph = s.graphs.create(s.exec.as_mut(), &desc, 2).unwrap();
    let e = s.exec.as_mut();
    let phys = e.vmm_create(0, 2 * G).unwrap();
    let gone = e.vmm_create(0, G).unwrap();
    let spare = e.vmm_create(0, G).unwrap();
    let vmm = e.vmm_reserve(4 * G, 0, 0).unwrap();
    e.vmm_map(vmm, 2 * G, 0, phys).unwrap();
    e.vmm_map(vmm + 2 * G, G, 0, gone).unwrap();
    e.vmm_set_access(vmm, 3 * G, 0, 3).unwrap();
    e.vmm_release(gone).unwrap();
    // An allocation mapped once, written, unmapped: its contents stay with it.
    let spare_at = vmm + 3 * G;
    e.vmm_map(spare_at, G, 0, spare).unwrap();
    e.vmm_set_access(spare_at, G, 0, 3).unwrap();
    let mut pattern: Vec<u8> = (0..64u8).map(|i| i ^ 0x5a).collect();
    for at in [vmm, spare_at] {
        e.memcpy_htod(
            &MemcpyHtoDReq {
                dst: at,
                width: 64,
                height: 1,
                ..Default::default()
            },
            &DataSegs::from_slice(&mut pattern),
        )
        .unwrap();
    }
    e.vmm_unmap(spare_at, G).unwrap();
    let mut b = Built {
        buf,
        bump,
        tick,
        stream,
        events,
        rng,
        blas: 0,
        graph,
        array,
        tex,
        vmm,
        phys: [phys, gone, spare],
    };
    // cuBLAS needs OpenBLAS; where it is missing the handle is simply not part of it.
    if let Ok(h) = blas {
        b.blas = h;
    }
    step(s, &b, 0);
    b
}

/// A copy of the whole 16x4 float array `array` from (or, `to_array`, into) `ptr`.
fn array_copy(array: u64, ptr: u64, to_array: bool) -> MemcpyArrayReq {
    MemcpyArrayReq {
        array,
        ptr,
        pitch: 64,
        width: 64,
        height: 4,
        depth: 1,
        flags: if to_array { ARRAY_COPY_TO_ARRAY } else { 0 },
        ..Default::default()
    }
}

/// One step of work that depends on all of the state; its result, as bytes.
fn step(s: &mut Session, b: &Built, i: u32) -> Vec<u8> {
    let mut params = b.buf.to_le_bytes().to_vec();
    params.extend_from_slice(&N.to_le_bytes());
    let launch = |function| LaunchReq {
        function,
        grid: [1, 1, 1],
        block: [N, 1, 1],
        stream: b.stream,
        ..Default::default()
    };
    s.exec.launch(&launch(b.bump), &params).unwrap();
    s.exec.launch(&launch(b.tick), &[]).unwrap();
    s.graphs
        .launch(s.exec.as_mut(), &s.shared, b.graph, b.stream)
        .unwrap();
    let rand_dst = s.exec.malloc(0, 16 * 4).unwrap();
    s.exec
        .rand_generate(
            &RandGenerateReq {
                handle: b.rng,
                stream: b.stream,
                dst: rand_dst,
                n: 16,
                dist: dist::BITS32,
                ..Default::default()
            },
            &DataSegs::from_slice(&mut []),
        )
        .unwrap();
    // The array's contents (set at build) into the random numbers' buffer's first 256 bytes.
    let from_array = s.exec.malloc(0, 256).unwrap();
    s.exec
        .memcpy_array(&array_copy(b.array, from_array, false))
        .unwrap();
    s.exec
        .memcpy_dtod(&vcuda_protocol::MemcpyDtoDReq {
            dst: rand_dst,
            src: from_array,
            width: 32,
            height: 1,
            ..Default::default()
        })
        .unwrap();
    s.exec.free(from_array).unwrap();
    // `buf` (which `bump` changes every step) into the released allocation's mapping.
    s.exec
        .memcpy_dtod(&vcuda_protocol::MemcpyDtoDReq {
            dst: b.vmm + 2 * G,
            src: b.buf,
            width: 64,
            height: 1,
            ..Default::default()
        })
        .unwrap();
    s.exec.event_record(b.events[1], b.stream, 0).unwrap();
    assert!(s.exec.event_elapsed(b.events[0], b.events[1]).is_ok());
    let mut out = vec![0u8; N as usize * 4 + 64 * 3];
    let (a, r) = out.split_at_mut(N as usize * 4);
    let (r, v) = r.split_at_mut(64);
    let (v0, v1) = v.split_at_mut(64);
    for (src, dst) in [(b.buf, a), (rand_dst, r), (b.vmm, v0), (b.vmm + 2 * G, v1)] {
        s.exec
            .memcpy_dtoh(
                &MemcpyDtoHReq {
                    src,
                    width: dst.len() as u64,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(dst),
            )
            .unwrap();
    }
    s.exec.free(rand_dst).unwrap();
    out.extend_from_slice(&i.to_le_bytes());
    out
}

/// Saves `s` through the container format, as a migration moves it.
fn carry(s: &mut Session) -> DeviceState {
    let state = s.save_state().unwrap();
    let bytes = format::encode(&DeviceState {
        sessions: vec![(1, state)],
        next_session: 2,
    })
    .unwrap();
    format::decode(&bytes).unwrap()
}

#[test]
fn a_loaded_session_goes_on_as_the_saved_one() {
    let a = backend();
    let mut left = a.new_session().unwrap();
    let b = build(&mut left);
    let mut state = carry(&mut left);
    let (_, saved) = state.sessions.pop().unwrap();
    let mut moved = backend()
        .load_session(saved, Cancel::default(), Tenant::unique())
        .unwrap();
    for i in 1..4 {
        assert_eq!(step(&mut left, &b, i), step(&mut moved, &b, i), "step {i}");
    }
    // Handles made after the move do not collide with the moved ones.
    let fresh = moved.exec.stream_create(0, 0, 0).unwrap();
    assert!(![b.stream, b.bump, b.tick, b.events[0], b.events[1]].contains(&fresh));
    assert_eq!(fresh, left.exec.stream_create(0, 0, 0).unwrap());
    let p = moved.exec.malloc(0, 4096).unwrap();
    assert_eq!(p, left.exec.malloc(0, 4096).unwrap());
    // The VMM API's objects: new ones get what they would have got at the source.
    let h = moved.exec.vmm_create(0, G).unwrap();
    assert_eq!(h, left.exec.vmm_create(0, G).unwrap());
    let va = moved.exec.vmm_reserve(G, 0, 0).unwrap();
    assert_eq!(va, left.exec.vmm_reserve(G, 0, 0).unwrap());
    // The unmapped allocation (the third) kept its contents: map it again and read them.
    for x in [&mut left, &mut moved] {
        x.exec.vmm_map(va, G, 0, b.phys[2]).unwrap();
        x.exec.vmm_set_access(va, G, 0, 3).unwrap();
    }
    let read = |x: &mut Session| {
        let mut got = vec![0u8; 64];
        x.exec
            .memcpy_dtoh(
                &MemcpyDtoHReq {
                    src: va,
                    width: 64,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(&mut got),
            )
            .unwrap();
        got
    };
    assert_eq!(read(&mut moved), read(&mut left));
    assert_eq!(read(&mut moved)[1], 1 ^ 0x5a);
    moved.exec.vmm_unmap(va, G).unwrap();
    moved.exec.vmm_unmap(b.vmm, 3 * G).unwrap();
    if b.blas != 0 {
        moved.exec.blas_destroy(b.blas).unwrap();
    }
    moved.exec.rand_destroy(b.rng).unwrap();
    moved.exec.tex_object_destroy(b.tex, false).unwrap();
    moved.exec.array_destroy(b.array).unwrap();
    moved.graphs.destroy(moved.exec.as_mut(), b.graph).unwrap();
}

/// A migration's pre-copy: the blocks read while the session runs are the blocks its
/// state packs, so a destination that received them ahead gets a state naming them
/// (`migrate::precopy`) and loads the same session.
#[test]
fn blocks_copied_ahead_load_the_same_session() {
    use crate::migrate::precopy::{Received, Sent};
    let a = backend();
    let mut left = a.new_session().unwrap();
    let b = build(&mut left);
    // A block that does not change after the pre-copy (4 MiB) and one that does (1 MiB).
    let big = left.exec.malloc(0, 5 << 20).unwrap();
    // Numbers that do not compress, so each block is as long as it is.
    let mut fill = crate::migrate::testing::noise(5 << 20, 7);
    let copy = |s: &mut Session, at: u64, data: &mut [u8]| {
        s.exec
            .memcpy_htod(
                &MemcpyHtoDReq {
                    dst: at,
                    width: data.len() as u64,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(data),
            )
            .unwrap();
    };
    copy(&mut left, big, &mut fill);
    let (mut sent, mut received) = (Sent::default(), Received::default());
    let mut blocks = Vec::new();
    let mut after = None;
    while let Some(c) = left.precopy_block(after, &|_, _, _| false) {
        after = Some((c.addr, c.index));
        sent.places.insert((1, c.addr, c.index), c.sum);
        blocks.push(((1, c.addr, c.index), c.packed.unwrap()));
    }
    assert!(blocks.iter().any(|(p, _)| *p == (1, big, 1)));
    // What the destination holds is not packed again.
    sent.tokens.insert(1, 0);
    let holds = |a: u64, i: u32, sum: &[u8; 16]| sent.holds(1, 0, a, i, sum);
    let c = left.precopy_block(None, &holds).unwrap();
    assert!(c.packed.is_none());
    let mut stream = Vec::new();
    crate::migrate::precopy::write_hello(&mut stream).unwrap();
    for (place, bytes) in blocks {
        crate::migrate::precopy::write_block(
            &mut stream,
            &crate::migrate::precopy::Block { place, bytes },
        )
        .unwrap();
    }
    stream.push(2);
    let into = std::sync::Mutex::new(Received::default());
    let mut d = crate::migrate::testing::Duplex::new(stream);
    crate::migrate::precopy::receive(&mut d, &into, u64::MAX).unwrap();
    assert_eq!(d.out, [1]);
    std::mem::swap(&mut received, &mut into.lock().unwrap());
    // The second 4 MiB block changes after the pre-copy.
    copy(&mut left, big + (4 << 20) + 10, &mut [1, 2, 3]);
    let full = format::body_len(&carry(&mut left)).unwrap();
    let mut state = DeviceState {
        sessions: vec![(1, left.save_state_known(Some(&holds)).unwrap())],
        next_session: 2,
    };
    let held = crate::migrate::precopy::referenced_bytes(&state);
    let short = format::body_len(&state).unwrap();
    assert!(
        held >= 4 << 20 && full - short >= 4 << 20,
        "{held} {full} {short}"
    );
    let bytes = format::encode(&state).unwrap();
    state = format::decode(&bytes).unwrap();
    received.resolve(&mut state).unwrap();
    let (_, one) = state.sessions.pop().unwrap();
    let mut moved = backend()
        .load_session(one, Cancel::default(), Tenant::unique())
        .unwrap();
    for i in 1..3 {
        assert_eq!(step(&mut left, &b, i), step(&mut moved, &b, i), "step {i}");
    }
    let read = |s: &mut Session| {
        let mut got = vec![0u8; 5 << 20];
        s.exec
            .memcpy_dtoh(
                &MemcpyDtoHReq {
                    src: big,
                    width: 5 << 20,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(&mut got),
            )
            .unwrap();
        got
    };
    assert!(read(&mut moved) == read(&mut left));
}

#[test]
fn what_cannot_move_is_named_and_leaves_the_session_alone() {
    let mut s = backend().new_session().unwrap();
    let b = build(&mut s);
    let before = step(&mut s, &b, 9);
    // A texture object over linear memory freed since (using it is undefined on a GPU too;
    // it cannot be made again on the other side).
    let mem = s.exec.malloc(0, 4096).unwrap();
    let lin = TexObjectCreateReq {
        resource: vcuda_protocol::RESOURCE_LINEAR,
        ptr: mem,
        format: ChannelFormat {
            bits: [32, 0, 0, 0],
            kind: CHANNEL_FLOAT,
        },
        size: 4096,
        ..Default::default()
    };
    s.exec.tex_object_create(&lin).unwrap();
    s.exec.free(mem).unwrap();
    match s.save_state() {
        Err(MigrateError::Unsupported(what)) => assert!(what.contains("texture"), "{what}"),
        other => panic!("{other:?}"),
    }
    let again = step(&mut s, &b, 9);
    assert_ne!(before, again, "the session still runs");
}

/// Two sessions of one VM sharing device memory through IPC handles, each having opened
/// the other's, move together: the exports keep their handles, the imports are linked to
/// the exporter's allocation once both are loaded, and writes through one show in the other.
#[test]
fn memory_shared_through_ipc_moves_with_both_sessions() {
    let read = |s: &mut Session, src: u64| {
        let mut got = vec![0u8; 16];
        s.exec
            .memcpy_dtoh(
                &MemcpyDtoHReq {
                    src,
                    width: 16,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(&mut got),
            )
            .unwrap();
        got
    };
    let write = |s: &mut Session, dst: u64, v: u8| {
        let mut data = vec![v; 16];
        s.exec
            .memcpy_htod(
                &MemcpyHtoDReq {
                    dst,
                    width: 16,
                    height: 1,
                    ..Default::default()
                },
                &DataSegs::from_slice(&mut data),
            )
            .unwrap();
    };
    let src = backend();
    let mut a = src.new_session().unwrap();
    let mut b = src.new_session().unwrap();
    a.hello = true;
    b.hello = true;
    let pa = a.exec.malloc(0, 4096).unwrap();
    let pb = b.exec.malloc(0, 4096).unwrap();
    let ha = a.exec.ipc_get_mem_handle(pa).unwrap();
    let hb = b.exec.ipc_get_mem_handle(pb).unwrap();
    // An interprocess event (cudaEventInterprocess | cudaEventDisableTiming), exported by
    // `a` and opened by `b`.
    let ev = a.exec.event_create(0, 0x6).unwrap();
    let he = a.exec.ipc_get_event_handle(ev).unwrap();
    b.exec.ipc_open_event_handle(&he).unwrap();
    let (in_b, _) = b.exec.ipc_open_mem_handle(&ha, 1).unwrap();
    let (in_a, _) = a.exec.ipc_open_mem_handle(&hb, 1).unwrap();
    write(&mut a, pa, 7);
    write(&mut b, pb, 9);
    let state = {
        let bytes = format::encode(&DeviceState {
            sessions: vec![(1, a.save_state().unwrap()), (2, b.save_state().unwrap())],
            next_session: 3,
        })
        .unwrap();
        format::decode(&bytes).unwrap()
    };
    drop((a, b));
    let dst = backend();
    let mut moved: Vec<Session> = state
        .sessions
        .into_iter()
        .map(|(_, s)| {
            dst.load_session(s, Cancel::default(), Tenant::unique())
                .unwrap()
        })
        .collect();
    for s in &mut moved {
        s.link_state().unwrap();
    }
    let [a, b] = &mut moved[..] else { panic!() };
    assert_eq!(read(b, in_b), vec![7; 16]);
    assert_eq!(read(a, in_a), vec![9; 16]);
    write(b, in_b, 3);
    assert_eq!(read(a, pa), vec![3; 16], "one allocation, shared again");
    // The handles the guest processes hold still open the same memory, and the event.
    assert_eq!(a.exec.ipc_get_mem_handle(pa).unwrap(), ha);
    assert_eq!(a.exec.ipc_get_event_handle(ev).unwrap(), he);
    b.exec.ipc_open_event_handle(&he).unwrap();
    assert_eq!(b.exec.ipc_open_mem_handle(&ha, 1).unwrap().0, in_b);
    b.exec.ipc_close_mem_handle(in_b).unwrap();
    b.exec.ipc_close_mem_handle(in_b).unwrap();
    a.exec.ipc_close_mem_handle(in_a).unwrap();

    // An import whose exporter is not among the loaded sessions does not link.
    let mut c = backend().new_session().unwrap();
    let mut d = backend().new_session().unwrap();
    c.hello = true;
    d.hello = true;
    let pc = c.exec.malloc(0, 4096).unwrap();
    let hc = c.exec.ipc_get_mem_handle(pc).unwrap();
    d.exec.ipc_open_mem_handle(&hc, 1).unwrap();
    let saved = d.save_state().unwrap();
    drop(d);
    drop(c);
    let mut lone = backend()
        .load_session(saved, Cancel::default(), Tenant::unique())
        .unwrap();
    assert!(lone.link_state().is_err());
}

#[test]
fn held_records_move_with_the_session() {
    let mut s = backend().new_session().unwrap();
    build(&mut s);
    s.held.push(RecordKind::Stdout, 0, 0, &[b"hi\n"], 0);
    let (_, saved) = carry(&mut s).sessions.pop().unwrap();
    assert_eq!(saved.held.len(), 2);
    let mut moved = backend()
        .load_session(saved, Cancel::default(), Tenant::unique())
        .unwrap();
    assert_eq!(moved.held.finish(), s.held.finish());

    for (what, damage) in [
        (
            "kind",
            (|r| r.kind = 999) as fn(&mut crate::migrate::state::HeldRecord),
        ),
        ("size", |r| r.payload = vec![0; super::super::MAX_HELD]),
    ] {
        let (_, mut saved) = carry(&mut s).sessions.pop().unwrap();
        damage(&mut saved.held[0]);
        let r = backend().load_session(saved, Cancel::default(), Tenant::unique());
        assert!(r.is_err(), "held record {what}");
    }
}

#[test]
fn inconsistent_states_load_nothing() {
    let fresh = || {
        let mut s = backend().new_session().unwrap();
        build(&mut s);
        carry(&mut s).sessions.pop().unwrap().1
    };
    type Damage = fn(&mut crate::migrate::state::CpuState);
    let damages: [(&str, Damage); 12] = [
        ("overlapping allocations", |c| {
            c.allocs[1].addr = c.allocs[0].addr + 512
        }),
        ("misaligned allocation", |c| c.allocs[0].addr += 8),
        ("short contents", |c| c.allocs[0].data[0].truncate(3)),
        ("huge allocation", |c| c.allocs[0].len = 1 << 50),
        ("duplicate handle", |c| {
            c.streams[0].handle = c.functions[0].handle
        }),
        ("unknown kernel", |c| c.functions[0].kernel = 99),
        ("stolen variable", |c| {
            c.modules[0].allocs[0] = c.allocs[0].addr
        }),
        ("handle from the future", |c| {
            c.events[0].handle = c.next_handle + 0x10
        }),
        ("VMM mapping outside its reservation", |c| {
            c.vmm.maps[0].addr += 8 * G
        }),
        ("duplicate VMM allocation", |c| {
            c.vmm.phys[1].handle = c.vmm.phys[0].handle
        }),
        ("released VMM allocation without a mapping", |c| {
            c.vmm.phys[2].released = true
        }),
        ("VMM reservation over allocations", |c| {
            c.vmm.reserved[0].0 = c.allocs[0].addr & !(G - 1)
        }),
    ];
    for (what, damage) in damages {
        let mut st = fresh();
        let ExecState::Cpu(c) = &mut st.exec else {
            unreachable!()
        };
        damage(c);
        let r = backend().load_session(st, Cancel::default(), Tenant::unique());
        assert!(r.is_err(), "{what} loaded");
    }
    let mut st = fresh();
    st.images[0].bytes[100] ^= 1;
    assert!(
        backend()
            .load_session(st, Cancel::default(), Tenant::unique())
            .is_err()
    );
}

/// Writes the bodies of two real saved states where `VCUDA_SEED_OUT` names, as seeds for the
/// `device_state` fuzz target: a session of every kind above but the VMM API's (with IPC
/// exports), whose 2 MiB granules would slow every run twentyfold, and (`-vmm`) a
/// session holding one mapped VMM allocation:
/// `VCUDA_SEED_OUT=fuzz/corpus/device_state/session cargo test -p vcuda-backend --lib
/// write_fuzz_seed -- --ignored`.
#[test]
#[ignore]
fn write_fuzz_seed() {
    let out = std::env::var("VCUDA_SEED_OUT").unwrap();
    let write = |path: String, s: &mut Session| {
        let bytes = format::encode(&carry(s)).unwrap();
        std::fs::write(
            path,
            &bytes[format::HEADER_LEN..bytes.len() - format::TRAILER_LEN],
        )
        .unwrap();
    };
    let mut s = backend().new_session().unwrap();
    let b = build(&mut s);
    let e = s.exec.as_mut();
    e.vmm_unmap(b.vmm, 3 * G).unwrap();
    e.vmm_release(b.phys[0]).unwrap();
    e.vmm_release(b.phys[2]).unwrap();
    e.vmm_free(b.vmm, 4 * G).unwrap();
    // An allocation and an event exported through IPC handles (their tokens registered
    // again on load).
    e.ipc_get_mem_handle(b.buf).unwrap();
    let ev = e.event_create(0, 0x6).unwrap();
    e.ipc_get_event_handle(ev).unwrap();
    write(out.clone(), &mut s);
    let mut v = backend().new_session().unwrap();
    v.hello = true;
    let e = v.exec.as_mut();
    let h = e.vmm_create(0, G).unwrap();
    let va = e.vmm_reserve(G, 0, 0).unwrap();
    e.vmm_map(va, G, 0, h).unwrap();
    e.vmm_set_access(va, G, 0, 3).unwrap();
    e.vmm_release(h).unwrap();
    write(format!("{out}-vmm"), &mut v);
}

/// Where the time of moving a session with 256 MiB of device memory that does not compress
/// goes (`cargo test -p vcuda-backend --release --lib state_costs -- --ignored --nocapture`).
#[test]
#[ignore]
fn state_costs() {
    use std::time::Instant;
    let big = Backend::new(Arc::new(CpuFactory::new(CpuConfig {
        memory: 1 << 30,
        threads: 1,
        ..Default::default()
    })));
    let mut s = big.new_session().unwrap();
    s.hello = true;
    let len = 256u64 << 20;
    let p = s.exec.malloc(0, len).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut data: Vec<u8> = (0..len / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    s.exec
        .memcpy_htod(
            &MemcpyHtoDReq {
                dst: p,
                width: len,
                height: 1,
                ..Default::default()
            },
            &DataSegs::from_slice(&mut data),
        )
        .unwrap();
    let t = Instant::now();
    let state = s.save_state().unwrap();
    let save = t.elapsed();
    let state = DeviceState {
        sessions: vec![(1, state)],
        next_session: 0,
    };
    let t = Instant::now();
    let bytes = format::encode(&state).unwrap();
    let encode = t.elapsed();
    let t = Instant::now();
    let _ = format::decode(&bytes).unwrap();
    let decode = t.elapsed();
    // As a migration moves it: encoded into a pipe while the other side reads and decodes.
    let t = Instant::now();
    let (r, w) = std::io::pipe().unwrap();
    let writer = std::thread::spawn(move || format::encode_to(&state, w).unwrap());
    let mut st = format::decode_from(r).unwrap();
    writer.join().unwrap();
    let streamed = t.elapsed();
    let t = Instant::now();
    let (_, one) = st.sessions.pop().unwrap();
    let _moved = big
        .load_session(one, Cancel::default(), Tenant::unique())
        .unwrap();
    let load = t.elapsed();
    eprintln!(
        "{} MiB state: save {save:?}, encode {encode:?}, decode {decode:?}, \
         through a pipe {streamed:?}, load {load:?}",
        bytes.len() >> 20
    );
}
