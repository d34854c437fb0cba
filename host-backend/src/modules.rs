// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Module images: the cache every session of a backend shares, and the `ModuleLoad`
//! handshake (a guest first offers an image's hash; it sends the image only when the
//! backend does not hold it yet).

use std::collections::HashMap;
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

    /// Handles a `ModuleLoad`: finds the image by hash, or takes it from the request's
    /// out data (checking its hash) and caches it, then loads it on `exec`. Without the
    /// image and without a cached copy, the reply asks the guest for the data.
    pub fn load(
        &self,
        exec: &mut dyn Executor,
        m: &ModuleLoadReq,
        out: &DataSegs<'_>,
        raw: &RawRequest<'_>,
    ) -> ExecResult<ModuleLoadResp> {
        let image = match self.get(&m.hash) {
            Some(img) => img,
            None if m.flags & MODULE_HAS_DATA == 0 => {
                return Ok(ModuleLoadResp {
                    handle: 0,
                    need_data: 1,
                    reserved: 0,
                });
            }
            None => {
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
                let img = Arc::new(ModuleImage { hash, bytes });
                self.insert(img.clone());
                img
            }
        };
        Ok(ModuleLoadResp {
            handle: exec.module_load(image)?,
            need_data: 0,
            reserved: 0,
        })
    }
}
