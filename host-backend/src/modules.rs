// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Module images: the cache every session of a backend shares, and the `ModuleLoad`
//! handshake.
//!
//! A guest may offer an image by hash alone, but the backend only takes that offer for an
//! image *this session* has sent before (e.g. loading it again after `cudaDeviceReset`):
//! whether another session loaded an image is never visible to a session, so the shared
//! cache tells one tenant nothing about another's programs. The cache saves the work of
//! keeping one copy of the bytes per session; it keeps only images that loaded.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use log::warn;
use sha2::{Digest, Sha256};
use vcuda_protocol::{MAX_SEGMENT_LEN, MODULE_HAS_DATA, ModuleLoadReq, ModuleLoadResp, RawRequest};

use crate::data::DataSegs;
use crate::executor::{ExecResult, Executor, ModuleImage, Status};

/// Module images shared by all sessions, keyed by SHA-256, bounded in total size.
#[derive(Debug, Default)]
pub struct ModuleCache {
    inner: Mutex<ModuleCacheInner>,
}

#[derive(Debug, Default)]
struct ModuleCacheInner {
    map: HashMap<[u8; 32], (Arc<ModuleImage>, u64)>,
    bytes: u64,
    clock: u64,
}

/// Total bytes of module images kept for reuse by later sessions.
pub const MODULE_CACHE_BYTES: u64 = 1 << 30;
/// Largest module image accepted.
pub const MAX_MODULE_LEN: u64 = MAX_SEGMENT_LEN;

/// Most images one session is remembered to have sent; beyond it the oldest are
/// forgotten (the guest then sends them again).
pub const MAX_SENT_IMAGES: usize = 4096;

/// The images one session has sent (proved it holds), by hash.
#[derive(Debug, Default)]
pub struct SentImages {
    set: HashSet<[u8; 32]>,
    order: std::collections::VecDeque<[u8; 32]>,
}

impl SentImages {
    fn contains(&self, hash: &[u8; 32]) -> bool {
        self.set.contains(hash)
    }

    /// Remembers that the session sent `hash`.
    pub fn insert(&mut self, hash: [u8; 32]) {
        if self.set.insert(hash) {
            self.order.push_back(hash);
            if self.order.len() > MAX_SENT_IMAGES
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }
}

impl ModuleCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, ModuleCacheInner> {
        // A panic while holding the lock cannot leave the map inconsistent (every update is
        // a single insert or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The image with this hash, if cached.
    pub fn get(&self, hash: &[u8; 32]) -> Option<Arc<ModuleImage>> {
        let mut g = self.lock();
        g.clock += 1;
        let now = g.clock;
        g.map.get_mut(hash).map(|(img, used)| {
            *used = now;
            img.clone()
        })
    }

    /// Caches an image, evicting the least recently used ones beyond the size bound.
    pub fn insert(&self, image: Arc<ModuleImage>) {
        let mut g = self.lock();
        g.clock += 1;
        let now = g.clock;
        let len = image.bytes.len() as u64;
        if let Some((_, used)) = g.map.get_mut(&image.hash) {
            *used = now;
            return;
        }
        while g.bytes + len > MODULE_CACHE_BYTES && !g.map.is_empty() {
            let oldest = g.map.iter().min_by_key(|(_, (_, u))| *u).map(|(h, _)| *h);
            if let Some(h) = oldest
                && let Some((img, _)) = g.map.remove(&h)
            {
                g.bytes -= img.bytes.len() as u64;
            }
        }
        g.bytes += len;
        g.map.insert(image.hash, (image, now));
    }

    /// Handles a `ModuleLoad`: takes the image from the request's out data (checking its
    /// hash), or, for an offer by hash alone, from the cache when this session sent it
    /// before; then loads it on `exec` and caches it once it loaded. Otherwise the reply
    /// asks the guest for the data.
    pub fn load(
        &self,
        exec: &mut dyn Executor,
        sent: &mut SentImages,
        m: &ModuleLoadReq,
        out: &DataSegs<'_>,
        raw: &RawRequest<'_>,
    ) -> ExecResult<ModuleLoadResp> {
        let need_data = ModuleLoadResp {
            handle: 0,
            need_data: 1,
            reserved: 0,
        };
        let image = if m.flags & MODULE_HAS_DATA == 0 {
            if !sent.contains(&m.hash) {
                return Ok(need_data);
            }
            match self.get(&m.hash) {
                Some(img) => img,
                None => return Ok(need_data),
            }
        } else {
            if m.size > MAX_MODULE_LEN {
                return Err(Status::INVALID_VALUE);
            }
            let mut bytes = vec![0u8; m.size as usize];
            out.read_at(raw.out_offset, &mut bytes)
                .map_err(|_| Status::INVALID_VALUE)?;
            let hash: [u8; 32] = Sha256::digest(&bytes).into();
            if hash != m.hash {
                warn!("module image does not match its hash");
                return Err(Status::INVALID_VALUE);
            }
            sent.insert(hash);
            // Another session's copy of the same bytes, if any, so the executor's caches
            // keyed by image see one image.
            self.get(&hash)
                .unwrap_or_else(|| Arc::new(ModuleImage { hash, bytes }))
        };
        let handle = exec.module_load(image.clone())?;
        self.insert(image);
        Ok(ModuleLoadResp {
            handle,
            need_data: 0,
            reserved: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use vcuda_protocol::decode::{decode_reply_header, split_records};
    use vcuda_protocol::*;
    use zerocopy::FromBytes;

    use crate::data::DataSegs;
    use crate::executor::cpu::{CpuConfig, CpuFactory};
    use crate::session::{Backend, Session};

    const IMAGE: &[u8] = include_bytes!("executor/cuda/testdata/vectorAdd-13.0.fatbin");

    /// Sends one `ModuleLoad` (with `data` as its image, or by hash alone) and returns the
    /// reply's status and payload.
    fn load(s: &mut Session, hash: [u8; 32], data: Option<&[u8]>) -> (u32, ModuleLoadResp) {
        let mut b = MessageBuilder::new();
        b.push_op::<ops::Hello>(0, 1, &[], &HelloReq::default(), b"t");
        let req = ModuleLoadReq {
            hash,
            size: data.map_or(0, |d| d.len() as u64),
            flags: if data.is_some() { MODULE_HAS_DATA } else { 0 },
            reserved: 0,
        };
        let segs: Vec<SegmentDesc> = data
            .iter()
            .map(|d| SegmentDesc::out(d.len() as u64))
            .collect();
        b.push_op::<ops::ModuleLoad>(0, 2, &segs, &req, &[]);
        let mut input = b.finish(0).to_vec();
        input.extend_from_slice(data.unwrap_or_default());
        let (recs, _) = raw(s, &input);
        let (_, status, payload) = recs.into_iter().find(|r| r.0 == 2).unwrap();
        let resp = ModuleLoadResp::read_from_prefix(&payload)
            .map(|(r, _)| r)
            .unwrap_or_default();
        (status, resp)
    }

    fn hash(b: &[u8]) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        Sha256::digest(b).into()
    }

    fn backend() -> std::sync::Arc<Backend> {
        Backend::new(std::sync::Arc::new(CpuFactory::new(CpuConfig {
            memory: 16 << 20,
            threads: 1,
            ..Default::default()
        })))
    }

    #[test]
    fn a_session_learns_nothing_of_another_sessions_images() {
        let b = backend();
        let (mut a, mut other) = (b.new_session().unwrap(), b.new_session().unwrap());
        let h = hash(IMAGE);
        let (st, r) = load(&mut a, h, Some(IMAGE));
        assert_eq!((st, r.need_data), (status::SUCCESS, 0));
        // The image is cached, but only the session that sent it may load it by hash.
        assert_eq!(load(&mut other, h, None).1.need_data, 1);
        let (st, r) = load(&mut a, h, None);
        assert_eq!((st, r.need_data), (status::SUCCESS, 0));
        assert_ne!(r.handle, 0);
        // Once the other session sends the bytes itself, it may.
        assert_eq!(load(&mut other, h, Some(IMAGE)).0, status::SUCCESS);
        assert_eq!(load(&mut other, h, None).1.need_data, 0);
    }

    /// A reply record: its sequence number, status and payload.
    type Record = (u64, u32, Vec<u8>);

    /// Handles a raw message as the `session` fuzz target does (out-data after the
    /// requests); returns each reply record's sequence number, status and payload, and the
    /// in-data.
    fn raw(s: &mut Session, input: &[u8]) -> (Vec<Record>, Vec<u8>) {
        let h = decode::decode_message_header(input).unwrap();
        let (ctrl, data) = input[size_of::<MessageHeader>()..].split_at(h.ctrl_len as usize);
        let mut out = data.to_vec();
        out.resize(h.out_len as usize, 0xa5);
        let mut inp = vec![0; h.in_len as usize];
        let mut reply = ReplyBuilder::new();
        s.handle(
            &h,
            ctrl,
            &DataSegs::from_slice(&mut out),
            &DataSegs::from_slice(&mut inp),
            &mut reply,
            usize::MAX,
        );
        let bytes = reply.finish().to_vec();
        let rh = decode_reply_header(&bytes).unwrap();
        let recs = split_records(&rh, &bytes[size_of::<ReplyHeader>()..]).unwrap();
        let recs = recs
            .iter()
            .map(|r| (r.header.seq, r.header.status, r.payload.to_vec()))
            .collect();
        (recs, inp)
    }

    /// Writes seeds for the `session` fuzz target (raw mode: a first byte of 1, then a
    /// message and its out-data) where `VCUDA_SEED_OUT` names a directory: issue 38's
    /// attacks, each checked here against a session made as the target makes its own:
    /// `VCUDA_SEED_OUT=fuzz/corpus/session cargo test -p vcuda-backend --lib
    /// write_attack_fuzz_seeds -- --ignored`.
    #[test]
    #[ignore]
    fn write_attack_fuzz_seeds() {
        let dir = std::path::PathBuf::from(std::env::var("VCUDA_SEED_OUT").unwrap());
        // As the target: a 64 MiB CPU executor on one thread, a hello and a 4 KiB
        // allocation first.
        let b = Backend::new(std::sync::Arc::new(CpuFactory::new(CpuConfig {
            memory: 64 << 20,
            threads: 1,
            ..Default::default()
        })));
        let fresh = || {
            let mut s = b.new_session().unwrap();
            let mut m = MessageBuilder::new();
            m.push_op::<ops::Hello>(0, 1, &[], &HelloReq::default(), b"fuzz");
            m.push_op::<ops::Malloc>(
                0,
                2,
                &[],
                &MallocReq {
                    device: 0,
                    flags: 0,
                    size: 4096,
                },
                &[],
            );
            let (recs, _) = raw(&mut s, m.finish(0));
            let ptr = PtrResp::read_from_prefix(&recs[1].2).unwrap().0.ptr;
            (s, ptr)
        };
        let seed = |name: &str, msg: &[u8], data: &[u8]| {
            let mut v = vec![1u8];
            v.extend_from_slice(msg);
            v.extend_from_slice(data);
            std::fs::write(dir.join(name), v).unwrap();
        };

        // The compiler attack: 500 registers live across 100 diamonds (5.6 s and gigabytes
        // to compile before the budget), loaded, launched and read back in one message.
        let (ptx, want) = vcuda_ptx::testing::live_across_diamonds(500, 100);
        let image = vcuda_fatbin::ptx_fatbin(&[ptx.as_bytes()], 50);
        let load_req = ModuleLoadReq {
            hash: hash(&image),
            size: image.len() as u64,
            flags: MODULE_HAS_DATA,
            reserved: 0,
        };
        // The handles a fresh session gives (its executor numbers them in order).
        let (mut s, ptr) = fresh();
        let mut m = MessageBuilder::new();
        m.push_op::<ops::ModuleLoad>(
            0,
            1,
            &[SegmentDesc::out(image.len() as u64)],
            &load_req,
            &[],
        );
        let mut input = m.finish(0).to_vec();
        input.extend_from_slice(&image);
        let module = ModuleLoadResp::read_from_prefix(&raw(&mut s, &input).0[0].2)
            .unwrap()
            .0
            .handle;
        let mut m = MessageBuilder::new();
        m.push_op::<ops::FunctionGet>(0, 1, &[], &FunctionGetReq { module }, b"k");
        let function = FunctionGetResp::read_from_prefix(&raw(&mut s, m.finish(0)).0[0].2)
            .unwrap()
            .0
            .handle;
        drop(s);
        let (mut s, ptr2) = fresh();
        assert_eq!(ptr, ptr2, "a fresh session's first allocation moved");
        let mut m = MessageBuilder::new();
        m.push_op::<ops::ModuleLoad>(
            0,
            1,
            &[SegmentDesc::out(image.len() as u64)],
            &load_req,
            &[],
        );
        m.push_op::<ops::FunctionGet>(0, 2, &[], &FunctionGetReq { module }, b"k");
        let launch = LaunchReq {
            function,
            grid: [1, 1, 1],
            block: [1, 1, 1],
            param_len: 8,
            ..Default::default()
        };
        m.push_op::<ops::Launch>(0, 3, &[], &launch, &ptr.to_le_bytes());
        let copy = MemcpyDtoHReq {
            src: ptr,
            width: 4,
            height: 1,
            ..Default::default()
        };
        m.push_op::<ops::MemcpyDtoH>(0, 4, &[SegmentDesc::input(4)], &copy, &[]);
        let msg = m.finish(0).to_vec();
        let mut input = msg.clone();
        input.extend_from_slice(&image);
        let (recs, inp) = raw(&mut s, &input);
        let statuses: Vec<u32> = recs.iter().map(|r| r.1).collect();
        assert_eq!(statuses, [status::SUCCESS; 4], "{recs:?}");
        assert_eq!(inp, want.to_le_bytes(), "the kernel's sum");
        seed("attack-compile-budget", &msg, &image);

        // The mincore amplification: copies naming a terabyte of a shared region, from and
        // to it (here no region exists: the bounds are checked before anything is mapped).
        let (mut s, ptr) = fresh();
        let mut m = MessageBuilder::new();
        let h2d = MemcpyHtoDSharedReq {
            dst: ptr,
            width: 1 << 40,
            height: 1,
            region: 0x10,
            offset: 0,
            ..Default::default()
        };
        m.push_op::<ops::MemcpyHtoDShared>(0, 1, &[], &h2d, &[]);
        let d2h = MemcpyDtoHSharedReq {
            src: ptr,
            width: 64,
            height: 1,
            region: 0x10,
            offset: (1 << 40) - 64,
            ..Default::default()
        };
        m.push_op::<ops::MemcpyDtoHShared>(0, 2, &[], &d2h, &[]);
        let msg = m.finish(0).to_vec();
        let (recs, _) = raw(&mut s, &msg);
        assert!(recs.iter().all(|r| r.1 != status::SUCCESS), "{recs:?}");
        seed("attack-shared-terabyte", &msg, &[]);
    }

    #[test]
    fn an_image_that_fails_to_load_is_not_kept() {
        let b = backend();
        let mut s = b.new_session().unwrap();
        let junk = b"not a fat binary".as_slice();
        let h = hash(junk);
        assert_ne!(load(&mut s, h, Some(junk)).0, status::SUCCESS);
        // Offered again by hash, the backend has nothing to load and asks for the bytes.
        assert_eq!(load(&mut s, h, None).1.need_data, 1);
        // A hash that does not match the bytes is refused.
        assert_eq!(
            load(&mut s, hash(b"other"), Some(IMAGE)).0,
            status::INVALID_VALUE
        );
    }
}
