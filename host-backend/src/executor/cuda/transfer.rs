// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Copies and memsets (see the module documentation of [`super`] for the strategy).

use std::collections::VecDeque;

use cudarc::driver::sys::{CUresult, CUstream};
use vcuda_protocol::{COPY_ASYNC, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq};
use vm_memory::VolatileSlice;

use super::driver::{self, Copy2D, DrvResult, End};
use super::error::to_status;
use super::guest_mem::Placement;
use super::owned::{Context, StreamRef};
use super::plan::{Span, spans, windows};
use super::staging::Pool;
use super::state::stream_ref;
use super::wait::{Wait, Waited};
use super::{CudaExecutor, SMALL_COPY, context_of};
use crate::data::DataSegs;
use crate::executor::{ExecResult, Status};
use vcuda_protocol::region::{self, Region};

/// Issues the host-to-device copy of `span`, whose packed bytes start at `host`.
///
/// # Safety
///
/// `host` is readable for `span.bytes(r.width())` bytes until the copy has consumed them (see
/// [`driver::memcpy_htod`]); the device side lies in memory of the current context; `s` is
/// a live stream of that context (or null).
unsafe fn issue_htod(r: &Region, span: Span, host: *const u8, s: CUstream) -> DrvResult<()> {
    match span {
        // SAFETY: a linear span is `len` packed bytes: `host` is readable for them and
        // `[dev, dev + len)` is device memory of the current context (the caller's
        // contract, with `span.bytes` = `len`); `s` is live.
        Span::Linear { dev, len, .. } => unsafe { driver::memcpy_htod(dev, host, len as usize, s) },
        Span::Rows { dev, rows, .. } => {
            let c = Copy2D {
                src: End::Host(host.cast_mut()),
                spitch: r.width() as usize,
                dst: End::Device(dev),
                dpitch: r.pitch() as usize,
                width: r.width() as usize,
                height: rows as usize,
            };
            // SAFETY: the host side is `rows` packed rows of `width` bytes, readable per the
            // caller's contract (`span.bytes` = `rows * width`); the device side is `rows`
            // rows `pitch` apart in memory of the current context; `s` is live.
            unsafe { driver::memcpy_2d(&c, s) }
        }
    }
}

/// Issues the device-to-host copy of `span` into packed bytes starting at `host`.
///
/// # Safety
///
/// `host` is writable for `span.bytes(r.width())` bytes and untouched until the copy is
/// complete; the device side lies in memory of the current context; `s` is a live stream
/// of that context (or null).
unsafe fn issue_dtoh(r: &Region, span: Span, host: *mut u8, s: CUstream) -> DrvResult<()> {
    match span {
        // SAFETY: a linear span is `len` packed bytes: `host` is writable for them and left
        // alone until the copy completes, and `[dev, dev + len)` is device memory of the
        // current context (the caller's contract, with `span.bytes` = `len`); `s` is live.
        Span::Linear { dev, len, .. } => unsafe { driver::memcpy_dtoh(host, dev, len as usize, s) },
        Span::Rows { dev, rows, .. } => {
            let c = Copy2D {
                src: End::Device(dev),
                spitch: r.pitch() as usize,
                dst: End::Host(host),
                dpitch: r.width() as usize,
                width: r.width() as usize,
                height: rows as usize,
            };
            // SAFETY: the host side is `rows` packed rows of `width` bytes, writable and
            // untouched until the copy completes per the caller's contract (`span.bytes` =
            // `rows * width`); the device side is `rows` rows `pitch` apart in memory of the
            // current context; `s` is live.
            unsafe { driver::memcpy_2d(&c, s) }
        }
    }
}

/// Calls `f(offset, piece)` for each piece of `segs` (their packed offsets).
fn pieces<'s, 'a: 's>(
    segs: &'s DataSegs<'a>,
) -> impl Iterator<Item = (u64, VolatileSlice<'a>)> + 's {
    segs.parts().iter().scan(0u64, |at, p| {
        let off = *at;
        *at += p.len() as u64;
        Some((off, *p))
    })
}

/// Issues the copies of `region` straight from the pieces of `src`, without staging.
///
/// # Safety
///
/// Every piece must stay valid until the driver has read it: pageable memory (copied
/// before the driver returns), or pinned memory kept pinned until the caller has waited
/// for `s`. The device side must have been checked against the session's allocations, and
/// the session's context must be current.
unsafe fn htod_direct(region: &Region, src: &DataSegs<'_>, s: StreamRef<'_>) -> DrvResult<()> {
    pieces(src).try_for_each(|(at, p)| {
        spans(region, at, p.len() as u64)
            .into_iter()
            .try_for_each(|sp| {
                let host = p
                    .ptr_guard()
                    .as_ptr()
                    .wrapping_add((sp.packed() - at) as usize);
                // SAFETY: `host` starts the span's bytes inside the piece (spans stay inside
                // `[at, at + len)`), which stays readable as the caller guarantees; the
                // device side was checked and the context is current (the caller's
                // contract); `s` borrows a live stream of the session (or is the legacy one).
                unsafe { issue_htod(region, sp, host, s.raw()) }
            })
    })
}

/// Issues the copies of `region` straight into the pieces of `dst`, without staging.
///
/// # Safety
///
/// Every piece must be writable memory that stays valid (and pinned memory pinned) until
/// the caller has waited for `s`. The device side must have been checked against the
/// session's allocations, and the session's context must be current.
unsafe fn dtoh_direct(region: &Region, dst: &DataSegs<'_>, s: StreamRef<'_>) -> DrvResult<()> {
    pieces(dst).try_for_each(|(at, p)| {
        spans(region, at, p.len() as u64)
            .into_iter()
            .try_for_each(|sp| {
                let host = p
                    .ptr_guard_mut()
                    .as_ptr()
                    .wrapping_add((sp.packed() - at) as usize);
                // SAFETY: `host` starts the span's bytes inside the piece, which stays
                // writable and untouched until the caller has waited for `s` (the caller's
                // contract); the device side was checked and the context is current; `s`
                // borrows a live stream of the session (or is the legacy one).
                unsafe { issue_dtoh(region, sp, host, s.raw()) }
            })
    })
}

/// Waits for `s`, keeping the first error. If the wait is cancelled, DMAs may still be
/// pending: the caller must [`CudaExecutor::settle`] before the memory they use goes away.
fn finish(first: DrvResult<()>, s: StreamRef<'_>, wait: &Wait) -> ExecResult<()> {
    let waited = s.synchronize(wait);
    match (first, waited) {
        (_, Err(Waited::Cancelled)) => Err(Waited::Cancelled.into()),
        (Err(e), _) => Err(to_status(e)),
        (Ok(()), w) => w.map_err(Status::from),
    }
}

impl CudaExecutor {
    /// Where `segs` live, as the copies see it (briefly under the guest-memory lock).
    fn placement(&self, segs: &DataSegs<'_>) -> Placement {
        let pinned = self.shared.pinned.read().unwrap_or_else(|e| e.into_inner());
        match pinned.placement(segs.parts()) {
            Placement::Pageable => self.host_pinned.placement(segs.parts()),
            p => p,
        }
    }

    /// The streams whose earlier work a copy on `stream` queues behind: the stream itself,
    /// and with the legacy default stream's semantics, the legacy stream for a blocking
    /// stream, every blocking stream for the legacy stream (non-blocking streams wait for
    /// neither).
    fn ahead_of(&self, stream: u64) -> ExecResult<Vec<StreamRef<'_>>> {
        let mut v = vec![stream_ref(&self.streams, stream)?];
        if stream == vcuda_protocol::STREAM_LEGACY {
            v.extend(
                self.streams
                    .iter()
                    .filter(|(h, _)| !self.non_blocking.contains(h))
                    .map(|(_, s)| StreamRef::Created(s)),
            );
        } else if !self.non_blocking.contains(&stream) {
            v.push(StreamRef::Legacy);
        }
        Ok(v)
    }

    /// Waits (polling, cancellable) for the work a copy on `stream` would queue behind.
    fn drain_ahead(&mut self, stream: u64) -> ExecResult<()> {
        let r = self.ahead_of(stream).and_then(|v| {
            v.into_iter()
                .try_for_each(|s| finish(Ok(()), s, &self.wait))
        });
        self.settle(r)
    }

    /// Whether a copy on `stream` would start at once (nothing queued ahead of it), so a
    /// direct DMA holds the guest-memory lock only for its own duration.
    fn nothing_ahead(&self, stream: u64) -> bool {
        self.ahead_of(stream)
            .is_ok_and(|v| v.into_iter().all(|s| s.query().is_ok()))
    }

    pub(super) fn htod(&mut self, r: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        let region = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        let total = region.packed_len();
        if total == 0 {
            return Ok(());
        }
        let src = src.sub(0, total).map_err(|_| Status::INVALID_VALUE)?;
        self.allocs.check_region(&region)?;
        let sync = r.flags & COPY_ASYNC == 0;
        self.bind()?;
        let early = self.placement(&src);
        if sync
            && (early == Placement::Pinned || early == Placement::Pageable && total <= SMALL_COPY)
        {
            // A direct DMA holds the guest-memory lock until it is done: first wait, without
            // the lock, for what is queued ahead of it (perhaps a kernel that never ends),
            // so the lock is never held across the guest's work. A small pageable copy goes
            // through the driver's own path, which may wait for the stream inside the call,
            // uncancellably: the same wait first keeps it cancellable (a synchronous copy
            // waits for that work anyway).
            self.drain_ahead(r.stream)?;
        }
        let s = stream_ref(&self.streams, r.stream)?;
        let placement = {
            // Held while a DMA straight from guest RAM runs: no piece may become pinned (and
            // so DMA'd late) or unpinned (while a DMA uses it) meanwhile. Released before
            // anything else waits for the GPU (staged copies never DMA guest RAM).
            let shared = self.shared.clone();
            let pinned = shared.pinned.read().unwrap_or_else(|e| e.into_inner());
            let placement = match pinned.placement(src.parts()) {
                // Not guest RAM: perhaps memory the guest shares with the session.
                Placement::Pageable => self.host_pinned.placement(src.parts()),
                p => p,
            };
            if placement == Placement::Pinned && self.nothing_ahead(r.stream) {
                // Straight from guest RAM; the DMA must finish before the guest gets its
                // pages back, so wait for it (also on error: earlier pieces may be in
                // flight); nothing is queued ahead of it, so the wait is the DMA's own.
                // SAFETY: every piece is pinned guest RAM (`placement`), which stays mapped
                // and pinned while we hold the read lock, or pinned shared memory, which
                // only `host_memory_unshared` (needing `&mut self`, held here) unpins;
                // either way until `finish` has waited for the DMA. The region was checked
                // and the context bound above.
                let r = unsafe { htod_direct(&region, &src, s) };
                let r = finish(r, s, &self.wait);
                // Still under the read lock: a cancelled wait tears the context down first.
                return self.settle(r);
            }
            placement
        };
        match placement {
            Placement::Pageable if total <= SMALL_COPY => {
                // SAFETY: every piece is pageable memory, which the driver copies out before
                // `cuMemcpyHtoDAsync` returns, and `src` outlives this call; the region was
                // checked and the context bound above.
                let r = unsafe { htod_direct(&region, &src, s) };
                r.map_err(to_status)?;
                if self.shared.config.register_guest_memory && !sync {
                    // Guest RAM being registered or unregistered (`set_guest_memory`) is in
                    // no table, yet the driver may treat it as pinned and read it after
                    // returning: wait for the copy before the guest gets its buffer back.
                    let r = finish(Ok(()), s, &self.wait);
                    self.settle(r)?;
                }
            }
            _ => {
                let ctx = context_of(&self.ctx)?;
                let r = htod_staged(&mut self.pool, ctx, &region, &src, s, &self.wait);
                self.settle(r)?;
            }
        }
        if sync {
            // cudaMemcpy returns once the copy is done, reporting earlier failures too.
            let s = stream_ref(&self.streams, r.stream)?;
            let r = finish(Ok(()), s, &self.wait);
            self.settle(r)?;
        }
        Ok(())
    }

    pub(super) fn dtoh(&mut self, r: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        let region = Region::new(r.src, r.spitch, r.width, r.height)?;
        let total = region.packed_len();
        if total == 0 {
            return Ok(());
        }
        let dst = dst.sub(0, total).map_err(|_| Status::INVALID_VALUE)?;
        self.allocs.check_region(&region)?;
        self.bind()?;
        let early = self.placement(&dst);
        if early == Placement::Pinned || early == Placement::Pageable && total <= SMALL_COPY {
            // As for host to device: never hold the lock while earlier work runs. A small
            // copy into pageable memory goes through the driver's own path, which waits for
            // the work ahead inside the call, uncancellably (behind an endless kernel,
            // forever: H100, driver 580, measured): wait for it first, polling.
            self.drain_ahead(r.stream)?;
        }
        let s = stream_ref(&self.streams, r.stream)?;
        let placement = {
            // As for host to device: held only while a DMA into guest RAM runs.
            let shared = self.shared.clone();
            let pinned = shared.pinned.read().unwrap_or_else(|e| e.into_inner());
            let placement = match pinned.placement(dst.parts()) {
                Placement::Pageable => self.host_pinned.placement(dst.parts()),
                p => p,
            };
            if placement == Placement::Pinned && self.nothing_ahead(r.stream) {
                // Straight into pinned memory; wait, so the data is complete when the reply
                // goes out.
                // SAFETY: pinned guest RAM stays mapped and pinned under the read lock,
                // pinned shared memory while `&mut self` is held; `finish` waits for the DMA,
                // and `dst` outlives this call. The region was checked and the context bound
                // above.
                let r = unsafe { dtoh_direct(&region, &dst, s) };
                let r = finish(r, s, &self.wait);
                // Still under the read lock: a cancelled wait tears the context down first.
                return self.settle(r);
            }
            placement
        };
        if placement == Placement::Pageable && total <= SMALL_COPY {
            // Straight into pageable memory, which the driver writes before returning (the
            // work ahead was waited for above); wait either way, so earlier failures surface
            // here.
            // SAFETY: pageable memory is written before the driver returns; `finish` waits
            // for the copy, and `dst` outlives this call. The region was checked and the
            // context bound above.
            let r = unsafe { dtoh_direct(&region, &dst, s) };
            let r = finish(r, s, &self.wait);
            return self.settle(r);
        }
        let ctx = context_of(&self.ctx)?;
        let r = dtoh_staged(&mut self.pool, ctx, &region, &dst, s, &self.wait);
        self.settle(r)
    }

    pub(super) fn dtod(&mut self, r: &MemcpyDtoDReq) -> ExecResult<()> {
        let d = Region::new(r.dst, r.dpitch, r.width, r.height)?;
        let src = Region::new(r.src, r.spitch, r.width, r.height)?;
        if d.packed_len() == 0 {
            return Ok(());
        }
        self.allocs.check_region(&d)?;
        self.allocs.check_region(&src)?;
        let s = stream_ref(&self.streams, r.stream)?.raw();
        self.bind()?;
        // SAFETY: both regions lie in allocations of this session's context (checked
        // above), which is current (bound above); `s` borrows a live stream of the session
        // (or is null, the legacy stream). No host memory is involved.
        let r = unsafe {
            if d.is_contiguous() && src.is_contiguous() {
                driver::memcpy_dtod(d.base(), src.base(), d.packed_len() as usize, s)
            } else {
                driver::memcpy_2d(
                    &Copy2D {
                        src: End::Device(src.base()),
                        spitch: src.pitch() as usize,
                        dst: End::Device(d.base()),
                        dpitch: d.pitch() as usize,
                        width: d.width() as usize,
                        height: d.height() as usize,
                    },
                    s,
                )
            }
        };
        r.map_err(to_status)
    }

    pub(super) fn memset_impl(&mut self, r: &MemsetReq) -> ExecResult<()> {
        let es = u64::from(r.elem_size);
        let row = region::memset_row_bytes(r.width, es)?;
        let region = Region::new(r.dst, r.pitch, row, r.height)?;
        if region.packed_len() == 0 {
            return Ok(());
        }
        if !r.dst.is_multiple_of(es) || region.pitch() % es != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.allocs.check_region(&region)?;
        let s = stream_ref(&self.streams, r.stream)?.raw();
        self.bind()?;
        // SAFETY: the region lies in an allocation of this session's context (checked
        // above), which is current (bound above), rows aligned to the element size; `s`
        // borrows a live stream of the session (or is null, the legacy stream).
        unsafe {
            driver::memset(
                region.base(),
                region.pitch() as usize,
                r.value,
                r.elem_size,
                r.width as usize,
                region.height() as usize,
                s,
            )
        }
        .map_err(|e| match e {
            CUresult::CUDA_ERROR_INVALID_VALUE => Status::INVALID_VALUE,
            e => to_status(e),
        })
    }
}

/// Host to device through the staging buffers: gather a window, start its DMA, move on.
/// The session's context `ctx` is current and the region was checked.
fn htod_staged(
    pool: &mut Pool,
    ctx: &Context,
    region: &Region,
    src: &DataSegs<'_>,
    s: StreamRef<'_>,
    wait: &Wait,
) -> ExecResult<()> {
    let chunk = pool.chunk() as u64;
    for (off, len) in windows(region, chunk) {
        let i = pool.next_index();
        let buf = pool.get(ctx, i)?;
        buf.wait(wait)?;
        src.read_at(off, &mut buf.bytes_mut()[..len as usize])
            .map_err(|_| Status::INVALID_VALUE)?;
        for sp in spans(region, off, len) {
            let host = buf.ptr().wrapping_add((sp.packed() - off) as usize);
            // SAFETY: `host` starts the span's bytes inside the buffer (the window is at
            // most `chunk` bytes), which lives in the pool and is not touched again before
            // its event (recorded below) says the DMA finished; the device side was
            // checked and the context is current (this function's contract); `s` borrows
            // a live stream of the session (or is the legacy one).
            unsafe { issue_htod(region, sp, host, s.raw()) }.map_err(to_status)?;
        }
        buf.record(s)?;
    }
    Ok(())
}

/// Device to host through the staging buffers: up to `depth` windows in flight; the
/// oldest is copied out to the destination when its DMA is done. The session's context
/// `ctx` is current and the region was checked.
fn dtoh_staged(
    pool: &mut Pool,
    ctx: &Context,
    region: &Region,
    dst: &DataSegs<'_>,
    s: StreamRef<'_>,
    wait: &Wait,
) -> ExecResult<()> {
    let chunk = pool.chunk() as u64;
    let depth = pool.depth();
    let mut in_flight: VecDeque<(usize, u64, u64)> = VecDeque::with_capacity(depth);
    let drain_one = |pool: &mut Pool, (i, off, len): (usize, u64, u64)| -> ExecResult<()> {
        let buf = pool.get(ctx, i)?;
        buf.wait(wait)?;
        dst.write_at(off, &buf.bytes_mut()[..len as usize])
            .map_err(|_| Status::INVALID_VALUE)
    };
    for (off, len) in windows(region, chunk) {
        if in_flight.len() == depth {
            // The rotation's next buffer is the oldest one in flight.
            if let Some(w) = in_flight.pop_front() {
                drain_one(pool, w)?;
            }
        }
        let i = pool.next_index();
        let buf = pool.get(ctx, i)?;
        buf.wait(wait)?;
        for sp in spans(region, off, len) {
            let host = buf.ptr().wrapping_add((sp.packed() - off) as usize);
            // SAFETY: `host` starts the span's bytes inside the buffer, which lives in the
            // pool and is not read before its event (recorded below) says the DMA
            // finished; the device side was checked and the context is current; `s`
            // borrows a live stream of the session (or is the legacy one).
            unsafe { issue_dtoh(region, sp, host, s.raw()) }.map_err(to_status)?;
        }
        buf.record(s)?;
        in_flight.push_back((i, off, len));
    }
    while let Some(w) = in_flight.pop_front() {
        drain_one(pool, w)?;
    }
    Ok(())
}
