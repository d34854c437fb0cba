// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes the vhost-user queue handler: a fuzzed split virtqueue (descriptor table, avail
//! ring) in fuzzed guest memory, popped with virtio-queue and handed to the device core
//! (`vcuda_backend::vhost_user::device`) with two sessions already open and past Hello.
//! Whatever the input, nothing may panic, and every popped chain must come back exactly
//! once with a used length within what the chain offered.
//!
//!   cargo +nightly fuzz run vhost_queue corpus/vhost_queue seeds/vhost_queue -- -max_len=16384 -max_total_time=60
//!
//! (from fuzz/; `seeds/vhost_queue` holds four hand-built rings: a Nop, copies in and out with
//! split out data, an open and a close, a reply area across the region boundary).
//!
//! Input: `[queue size selector][avail count][memory image ...]`. Guest memory is two
//! adjacent 32 KiB regions at 0 (so buffers may cross a region boundary), a hole, and a
//! 32 KiB region at 0x20000 used for the setup chains. The memory image fills the first
//! 64 KiB; the ring sits at 0: descriptor table at 0, avail ring at 0x400, used ring at
//! 0x800.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use vcuda_backend::Backend;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::vhost_user::device::{Completion, Device, DeviceConfig, Threading, UsedRing};
use vcuda_protocol::virtio::{ChainHeader, ChainOp};
use vcuda_protocol::{HelloReq, MessageBuilder, Opcode};
use virtio_queue::desc::RawDescriptor;
use virtio_queue::desc::split::Descriptor;
use virtio_queue::{Queue, QueueOwnedT, QueueT};
use vm_memory::{Bytes, GuestAddress};
use zerocopy::IntoBytes;

type Mem = vcuda_backend::vhost_user::chain::Mem;

const DESC: u64 = 0;
const AVAIL: u64 = 0x400;
const USED: u64 = 0x800;
const SETUP: u64 = 0x20000;

fn backend() -> &'static Arc<Backend> {
    static B: OnceLock<Arc<Backend>> = OnceLock::new();
    B.get_or_init(|| {
        Backend::new(Arc::new(CpuFactory::new(CpuConfig {
            memory: 64 << 20,
            threads: 1,
            // See the `session` target: a watchdog keeps launches within libFuzzer's timeout.
            kernel_timeout: Some(std::time::Duration::from_secs(1)),
            ..Default::default()
        })))
    })
}

/// Completions, checked against the popped chains.
#[derive(Default)]
struct Ring(Mutex<Vec<(u16, u32)>>);

impl UsedRing for Ring {
    fn complete(&self, head: u16, len: u32, _ticket: u64) {
        self.0.lock().unwrap().push((head, len));
    }
}

/// Writes `bufs` as a chain at descriptor `first` of a table at `table` and makes it
/// available on a ring at `avail`; returns the head.
fn post(mem: &Mem, table: u64, avail: u64, first: u16, bufs: &[(u64, u32, bool)]) -> u16 {
    for (i, &(addr, len, write)) in bufs.iter().enumerate() {
        let last = i + 1 == bufs.len();
        let flags = u16::from(write) * 2 + u16::from(!last);
        let d = Descriptor::new(addr, len, flags, first + i as u16 + 1);
        mem.write_obj(
            RawDescriptor::from(d),
            GuestAddress(table + 16 * u64::from(first + i as u16)),
        )
        .unwrap();
    }
    let idx: u16 = mem.read_obj(GuestAddress(avail + 2)).unwrap();
    mem.write_obj(first, GuestAddress(avail + 4 + 2 * u64::from(idx % 16)))
        .unwrap();
    mem.write_obj(idx.wrapping_add(1), GuestAddress(avail + 2))
        .unwrap();
    first
}

fn queue(size: u16, desc: u64, avail: u64, used: u64) -> Queue {
    let mut q = Queue::new(size.max(16)).unwrap();
    q.set_size(size);
    q.set_desc_table_address(Some(desc as u32), Some(0));
    q.set_avail_ring_address(Some(avail as u32), Some(0));
    q.set_used_ring_address(Some(used as u32), Some(0));
    q.set_ready(true);
    q
}

/// Runs every available chain of `q`; checks that each came back once.
fn run(dev: &Device, mem: &Arc<Mem>, q: &mut Queue) {
    let ring = Arc::new(Ring::default());
    let Ok(iter) = q.iter(&**mem) else { return };
    let chains: Vec<_> = iter.collect();
    let mut heads = Vec::new();
    for c in chains {
        let head = c.head_index();
        heads.push(head);
        let r: Arc<dyn UsedRing> = ring.clone();
        dev.handle_chain(mem, c, Completion::new(r, head, 0));
    }
    let done = ring.0.lock().unwrap();
    assert_eq!(
        done.len(),
        heads.len(),
        "a chain was lost or completed twice"
    );
    for (&(head, len), want) in done.iter().zip(&heads) {
        assert_eq!(head, *want);
        // The most a chain can offer: 1024 descriptors of at most 64 KiB of RAM each.
        assert!(u64::from(len) <= 1024 * 0x10000, "used len {len}");
    }
}

/// Opens session `id` and says Hello, through a setup queue in the setup region.
fn setup(dev: &Device, mem: &Arc<Mem>, id: u64) {
    let (table, avail, used) = (SETUP, SETUP + 0x100, SETUP + 0x200);
    let hdr = |op: ChainOp| ChainHeader {
        session: id,
        op: op as u32,
        reply_capacity: 4096,
    };
    let (h, reply) = (SETUP + 0x1000, SETUP + 0x2000);
    mem.write_slice(&[0u8; 0x300], GuestAddress(SETUP)).unwrap();
    let mut q = queue(16, table, avail, used);
    mem.write_slice(hdr(ChainOp::OpenSession).as_bytes(), GuestAddress(h))
        .unwrap();
    post(mem, table, avail, 0, &[(h, 16, false), (reply, 4096, true)]);
    run(dev, mem, &mut q);
    let mut m = MessageBuilder::new();
    m.push(Opcode::Hello, 0, 1, &[], &HelloReq::default(), b"fuzz");
    let mut bytes = hdr(ChainOp::Submit).as_bytes().to_vec();
    bytes.extend_from_slice(m.finish(0));
    mem.write_slice(&bytes, GuestAddress(h)).unwrap();
    post(
        mem,
        table,
        avail,
        2,
        &[(h, bytes.len() as u32, false), (reply, 4096, true)],
    );
    run(dev, mem, &mut q);
}

fuzz_target!(|data: &[u8]| {
    let [sel, count, image @ ..] = data else {
        return;
    };
    let mem = Arc::new(
        Mem::from_ranges(&[
            (GuestAddress(0), 0x8000),
            (GuestAddress(0x8000), 0x8000),
            (GuestAddress(SETUP), 0x8000),
        ])
        .unwrap(),
    );
    let dev = Device::new(
        backend().clone(),
        DeviceConfig {
            max_sessions: 4,
            threading: Threading::Inline,
            ..DeviceConfig::default()
        },
    );
    setup(&dev, &mem, 0);
    setup(&dev, &mem, 1);

    let n = image.len().min(0x10000);
    mem.write_slice(&image[..n], GuestAddress(0)).unwrap();
    let size = 1u16 << (sel % 5);
    // Avail index: at most `size` entries past the device's position (0).
    mem.write_obj(u16::from(*count) % (size + 1), GuestAddress(AVAIL + 2))
        .unwrap();
    let mut q = queue(size, DESC, AVAIL, USED);
    run(&dev, &mem, &mut q);
    // Whatever happened, the device still serves a well-formed session.
    setup(&dev, &mem, 2);
});
