// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Which messages are *short*: calls a queue thread may run itself instead of handing them
//! to the session's worker ([`QueueThreadCalls::Short`](super::device::QueueThreadCalls)).
//!
//! A queue thread serves every session whose chains arrive on its queue, so it must never
//! wait: a call it runs must not synchronize, wait for an event or a stream, run a kernel,
//! or do work that grows with a guest-chosen size. The allow-list below is explicit and
//! conservative: an operation is on it only if, on every executor, it is a table lookup, a
//! constant, or a driver call documented not to wait for device work. Everything else,
//! and every message that does not decode, goes to the worker as before.
//!
//! The decision is made on a copy of the control area that is then the one the call runs
//! with, so a guest cannot change a request between the check and the call.

use vcuda_protocol::decode::split_requests;
use vcuda_protocol::{ExecutorKind, MessageHeader, Opcode};

/// The largest control area (message header excluded) a short message may have; larger
/// messages go to the worker without being read on the queue thread.
pub const SHORT_MAX_CTRL: usize = 4096;

/// The most out plus in data of a short message of copies (CPU executor only): a copy of
/// this size is a few µs of `memcpy`, about a thread wake-up.
pub const SHORT_MAX_COPY: u64 = 64 << 10;

/// Whether `op` is short on every executor. The reasons, per operation:
fn short_everywhere(op: Opcode) -> bool {
    match op {
        // Nothing to do.
        Opcode::Nop => true,
        // A copy of the properties read when the executor started (CUDA) or constants (CPU).
        Opcode::GetDeviceInfo => true,
        // `cuMemGetInfo` (a driver query) and the session's charge; the CPU heap's counters.
        Opcode::MemGetInfo => true,
        // `cuCtxGetLimit`, a context query; a table read on the CPU executor. (Setting a
        // limit is not short: `cuCtxSetLimit` of the stack size waits for the device.)
        Opcode::DeviceGetLimit => true,
        // `cuStreamQuery` and `cuEventQuery` answer `CUDA_ERROR_NOT_READY` instead of
        // waiting; a handle check on the CPU executor (its work is done when queried).
        Opcode::StreamQuery | Opcode::EventQuery => true,
        // `cuEventElapsedTime` answers `CUDA_ERROR_NOT_READY` if an event has not completed;
        // never waits. Two timestamps on the CPU executor.
        Opcode::EventElapsedTime => true,
        // `cuEventCreate` makes a host-side object; `cuEventDestroy` returns at once even
        // if the event is still pending (the driver releases it when it completes). A table
        // insert or remove on the CPU executor.
        Opcode::EventCreate | Opcode::EventDestroy => true,
        // Not short, and why:
        // - Hello: once per session; no gain.
        // - DeviceSynchronize, StreamSynchronize, EventSynchronize, StreamWaitEvent: wait.
        // - DeviceReset: destroys and creates a CUDA context (~0.1 s).
        // - DeviceSetLimit: `cuCtxSetLimit` may wait for the device.
        // - Malloc: `cuMemAlloc` and the CPU heap's allocation grow with the size.
        // - Free: `cudaFree` waits for the device first.
        // - copies, memsets, arrays, textures: wait for their stream (CUDA) or grow with a
        //   guest-chosen size (see `short_copy` for the CPU executor's small copies).
        // - EventRecord, StreamCreate, StreamDestroy: enqueue work or allocate driver
        //   channels; the driver may block when a stream's queue is full.
        // - Launch, LaunchCooperative: a kernel runs on the calling thread on the CPU
        //   executor; a launch may block on a full queue on the GPU.
        // - GraphCreate, GraphLaunch, GraphDestroy: instantiate a graph; run or enqueue
        //   its nodes, as the calls they stand for do.
        // - modules, functions, symbols: parse and compile images.
        // - shared and mapped host memory: map, pin or unmap memory.
        // - cuBLAS and cuRAND: run routines or create library handles.
        _ => false,
    }
}

/// Whether `op` is a copy that is short on `kind` when its data is at most
/// [`SHORT_MAX_COPY`]: on the CPU executor a session's work runs in order on the thread that
/// issues it, so when its worker is idle no kernel of the session runs and a copy is a
/// `memcpy` between guest pages and the session's heap. On the CUDA executor a synchronous
/// copy waits for its stream's earlier work, so it is never short.
fn short_copy(kind: ExecutorKind, op: Opcode) -> bool {
    kind == ExecutorKind::Cpu && matches!(op, Opcode::MemcpyHtoD | Opcode::MemcpyDtoH)
}

/// Whether a message (its header and control area) consists of short calls only, on an
/// executor of `kind`. A message that does not decode is not short.
pub fn is_short(kind: ExecutorKind, header: &MessageHeader, ctrl: &[u8]) -> bool {
    if ctrl.len() > SHORT_MAX_CTRL {
        return false;
    }
    let Ok(reqs) = split_requests(header, ctrl) else {
        return false;
    };
    let data = header.out_len.saturating_add(header.in_len);
    !reqs.is_empty()
        && reqs
            .iter()
            .all(|r| match Opcode::try_from(r.header.opcode) {
                Ok(op) if short_everywhere(op) => r.out_len == 0 && r.in_len == 0,
                Ok(op) if short_copy(kind, op) => data <= SHORT_MAX_COPY,
                _ => false,
            })
}

#[cfg(test)]
mod tests {
    use vcuda_protocol::decode::decode_message_header;
    use vcuda_protocol::encode::MessageBuilder;
    use vcuda_protocol::{HandleReq, MemcpyDtoHReq, STREAM_LEGACY, SegmentDesc, ops};

    use super::*;

    const HEADER: usize = size_of::<MessageHeader>();

    fn message(build: impl FnOnce(&mut MessageBuilder)) -> (MessageHeader, Vec<u8>) {
        let mut b = MessageBuilder::new();
        build(&mut b);
        let bytes = b.finish(0);
        let h = decode_message_header(bytes).unwrap();
        (h, bytes[HEADER..].to_vec())
    }

    fn query(b: &mut MessageBuilder, seq: u64) {
        let legacy = HandleReq {
            handle: STREAM_LEGACY,
        };
        b.push_op::<ops::StreamQuery>(0, seq, &[], &legacy, &[]);
    }

    #[test]
    fn queries_are_short_and_waits_are_not() {
        let (h, c) = message(|b| {
            b.push_op::<ops::Nop>(0, 1, &[], &(), &[]);
            query(b, 2);
        });
        assert!(is_short(ExecutorKind::Cuda, &h, &c));
        assert!(is_short(ExecutorKind::Cpu, &h, &c));
        let (h, c) = message(|b| {
            query(b, 1);
            let legacy = HandleReq {
                handle: STREAM_LEGACY,
            };
            b.push_op::<ops::StreamSynchronize>(0, 2, &[], &legacy, &[]);
        });
        assert!(!is_short(ExecutorKind::Cpu, &h, &c));
        assert!(!is_short(ExecutorKind::Cuda, &h, &c));
    }

    #[test]
    fn the_allow_list_is_short() {
        let short: Vec<Opcode> = Opcode::ALL
            .iter()
            .copied()
            .filter(|&op| short_everywhere(op))
            .collect();
        assert_eq!(
            short,
            [
                Opcode::Nop,
                Opcode::GetDeviceInfo,
                Opcode::MemGetInfo,
                Opcode::DeviceGetLimit,
                Opcode::StreamQuery,
                Opcode::EventCreate,
                Opcode::EventDestroy,
                Opcode::EventQuery,
                Opcode::EventElapsedTime,
            ]
        );
    }

    #[test]
    fn small_copies_are_short_on_the_cpu_executor_only() {
        let copy = |len: u64| {
            message(|b| {
                let r = MemcpyDtoHReq {
                    src: 0x1000,
                    width: len,
                    height: 1,
                    ..Default::default()
                };
                b.push_op::<ops::MemcpyDtoH>(0, 1, &[SegmentDesc::input(len)], &r, &[]);
            })
        };
        let (h, c) = copy(4096);
        assert!(is_short(ExecutorKind::Cpu, &h, &c));
        assert!(!is_short(ExecutorKind::Cuda, &h, &c));
        let (h, c) = copy(SHORT_MAX_COPY + 1);
        assert!(!is_short(ExecutorKind::Cpu, &h, &c));
    }

    #[test]
    fn malformed_empty_and_large_messages_are_not_short() {
        let (h, c) = message(|b| b.push_op::<ops::Nop>(0, 1, &[], &(), &[]));
        assert!(is_short(ExecutorKind::Cpu, &h, &c));
        assert!(!is_short(ExecutorKind::Cpu, &h, &c[..c.len() - 1]));
        let (h, c) = message(|_| {});
        assert!(!is_short(ExecutorKind::Cpu, &h, &c));
        // More than SHORT_MAX_CTRL bytes of queries.
        let (h, c) = message(|b| (0..200).for_each(|i| query(b, i)));
        assert!(c.len() > SHORT_MAX_CTRL);
        assert!(!is_short(ExecutorKind::Cpu, &h, &c));
    }
}
