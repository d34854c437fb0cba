// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes a whole backend session on the CPU executor. After a valid hello and an
//! allocation, the input is read as a batch of requests with fuzzed opcodes, flags,
//! segments and payloads (structure-aware, so most inputs reach the executors), or, when
//! its first byte is odd, as a raw message followed by its out-data (a module image, say:
//! `write_attack_fuzz_seeds` in host-backend writes such seeds). Nothing may panic, and the
//! session must still answer a well-formed call afterwards.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use vcuda_backend::data::DataSegs;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::session::Outcome;
use vcuda_backend::{Backend, Session};
use vcuda_protocol::decode::decode_message_header;
use vcuda_protocol::{HelloReq, MallocReq, MessageBuilder, Opcode, ReplyBuilder, SegmentDesc};

fn backend() -> &'static Arc<Backend> {
    static B: OnceLock<Arc<Backend>> = OnceLock::new();
    B.get_or_init(|| {
        Backend::new(Arc::new(CpuFactory::new(CpuConfig {
            memory: 64 << 20,
            threads: 1,
            // A launch may run as long as a guest likes on a GPU too (until its session is
            // cancelled); a watchdog keeps one input's launches within libFuzzer's timeout.
            kernel_timeout: Some(std::time::Duration::from_secs(1)),
            ..Default::default()
        })))
    })
}

/// Sends `msg` (header and requests), whose out-data is what follows its requests (filled
/// up with 0xa5 to the length the header names).
fn send(session: &mut Session, msg: &[u8], out: &mut Vec<u8>) -> Option<Outcome> {
    let h = decode_message_header(msg).ok()?;
    let ctrl = msg.get(32..)?;
    let (ctrl, data) = ctrl.split_at((h.ctrl_len as usize).min(ctrl.len()));
    out.clear();
    out.extend_from_slice(&data[..data.len().min(h.out_len as usize)]);
    out.resize(h.out_len as usize, 0xa5);
    let mut inp = vec![0u8; h.in_len as usize];
    let mut reply = ReplyBuilder::new();
    Some(session.handle(
        &h,
        ctrl,
        &DataSegs::from_slice(out),
        &DataSegs::from_slice(&mut inp),
        &mut reply,
        usize::MAX,
    ))
}

/// Reads bytes off the front of the input.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut session) = backend().new_session() else { return };
    let mut b = MessageBuilder::new();
    b.push(Opcode::Hello, 0, 1, &[], &HelloReq::default(), b"fuzz");
    b.push(Opcode::Malloc, 0, 2, &[], &MallocReq { device: 0, flags: 0, size: 4096 }, &[]);
    let hello = b.finish(0).to_vec();
    let mut out = Vec::new();
    assert_eq!(send(&mut session, &hello, &mut out), Some(Outcome::Reply));

    let mut input = Input(data);
    if input.byte() & 1 == 1 {
        let _ = send(&mut session, input.0, &mut out);
    } else {
        let mut b = MessageBuilder::new();
        for seq in 0..(input.byte() % 8) {
            let op = Opcode::ALL[input.byte() as usize % Opcode::ALL.len()];
            let flags = u16::from(input.byte() & 1);
            let segs: Vec<SegmentDesc> = (0..input.byte() % 3)
                .map(|_| {
                    let len = u64::from(input.byte()) * 16;
                    if input.byte() & 1 == 0 { SegmentDesc::out(len) } else { SegmentDesc::input(len) }
                })
                .collect();
            let n = input.byte() as usize;
            let payload = input.bytes(n).to_vec();
            b.push(op, flags, u64::from(seq) + 10, &segs, &payload[..], &[]);
        }
        let msg = b.finish(u16::from(input.byte() & 1)).to_vec();
        let _ = send(&mut session, &msg, &mut out);
    }
    // The session still works.
    let mut b = MessageBuilder::new();
    b.push(Opcode::Nop, 0, 99, &[], &[] as &[u8], &[]);
    let nop = b.finish(0).to_vec();
    assert!(send(&mut session, &nop, &mut out).is_some());
});
