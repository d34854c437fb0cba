// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Guest RAM the GPU can reach directly.
//!
//! With the vhost-user transport, data segments point straight into guest RAM mapped in
//! this process. The factory pins those mappings with `cuMemHostRegister` when the frontend
//! shares them ([`crate::executor::ExecutorFactory::guest_memory_changed`]); a copy whose
//! every piece lies in a pinned mapping then runs as one DMA per piece, with no staging
//! copy. This module holds the set of pinned ranges and answers "is this piece pinned?".
//!
//! A DMA per piece pays a driver call per piece (microseconds each): a 64 MiB copy in
//! 4 KiB guest pages would be 16384 calls. Copies in more than [`MAX_DIRECT_PIECES`]
//! pieces averaging under [`MIN_DIRECT_PIECE`] bytes are therefore staged, whose gather
//! copy costs well under a microsecond per 4 KiB.

use vm_memory::VolatileSlice;

/// Host ranges `(address, length)` pinned for DMA, sorted and disjoint.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PinnedRanges {
    ranges: Vec<(usize, usize)>,
}

/// Copies in at most this many pieces always go straight to pinned pieces.
pub const MAX_DIRECT_PIECES: usize = 16;
/// Beyond [`MAX_DIRECT_PIECES`], the average piece must be this large to go direct.
pub const MIN_DIRECT_PIECE: usize = 64 << 10;

/// Where a copy's host pieces live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Every piece is in pinned guest RAM: DMA straight from/to it.
    Pinned,
    /// No piece is pinned: ordinary pageable memory.
    Pageable,
    /// Some are, some are not: stage everything.
    Mixed,
    /// Every piece is pinned, but there are too many small ones for a DMA each: stage.
    Scattered,
}

impl PinnedRanges {
    /// The ranges, which must not overlap (empty ones are dropped).
    pub fn new(mut ranges: Vec<(usize, usize)>) -> Self {
        ranges.retain(|&(_, len)| len > 0);
        ranges.sort_unstable();
        Self { ranges }
    }

    /// The ranges.
    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges
    }

    /// Whether `[addr, addr + len)` lies inside one pinned range.
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        let i = self.ranges.partition_point(|&(a, _)| a <= addr);
        let Some(&(a, l)) = i.checked_sub(1).and_then(|i| self.ranges.get(i)) else {
            return false;
        };
        let off = addr - a;
        off.checked_add(len).is_some_and(|e| e <= l)
    }

    /// Whether an address range overlaps any pinned range.
    pub fn overlaps(&self, addr: usize, len: usize) -> bool {
        let end = addr.saturating_add(len);
        self.ranges
            .iter()
            .any(|&(a, l)| a < end && addr < a.saturating_add(l))
    }

    /// Classifies the pieces of a copy.
    pub fn placement(&self, pieces: &[VolatileSlice<'_>]) -> Placement {
        if self.ranges.is_empty() {
            return Placement::Pageable;
        }
        let (mut pinned, mut pageable) = (false, false);
        for p in pieces {
            let addr = p.ptr_guard().as_ptr() as usize;
            if self.contains(addr, p.len()) {
                pinned = true;
            } else if self.overlaps(addr, p.len()) {
                // Straddles a pinned range's edge: half of it would be DMA'd
                // asynchronously; treat it as pinned-but-unusable, i.e. stage.
                return Placement::Mixed;
            } else {
                pageable = true;
            }
        }
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        match (pinned, pageable) {
            (true, false)
                if pieces.len() > MAX_DIRECT_PIECES && total / pieces.len() < MIN_DIRECT_PIECE =>
            {
                Placement::Scattered
            }
            (true, false) => Placement::Pinned,
            (false, _) => Placement::Pageable,
            (true, true) => Placement::Mixed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup() {
        let r = PinnedRanges::new(vec![(0x3000, 0x1000), (0x1000, 0x1000), (0x9000, 0)]);
        assert_eq!(r.ranges(), &[(0x1000, 0x1000), (0x3000, 0x1000)]);
        assert!(r.contains(0x1000, 0x1000));
        assert!(r.contains(0x1800, 0x10));
        assert!(r.contains(0x3fff, 1));
        assert!(!r.contains(0x1fff, 2), "crosses the end");
        assert!(!r.contains(0x0fff, 2), "starts before");
        assert!(!r.contains(0x2000, 1), "in the gap");
        assert!(!r.contains(0x4000, 1));
        assert!(!r.contains(0x1800, usize::MAX), "wraps");
        assert!(r.overlaps(0x1fff, 2));
        assert!(!r.overlaps(0x2000, 0x1000));
        assert!(!PinnedRanges::default().contains(0x1000, 1));
    }

    #[test]
    fn placement_of_pieces() {
        let mut guest = vec![0u8; 8192];
        let mut heap = [0u8; 64];
        let base = guest.as_ptr() as usize;
        let r = PinnedRanges::new(vec![(base, 4096)]);
        let (lo, hi) = guest.split_at_mut(4096);
        let in_pinned = VolatileSlice::from(&mut lo[..100]);
        let pageable = VolatileSlice::from(&mut heap[..]);
        assert_eq!(r.placement(&[in_pinned]), Placement::Pinned);
        assert_eq!(r.placement(&[pageable]), Placement::Pageable);
        assert_eq!(r.placement(&[in_pinned, pageable]), Placement::Mixed);
        assert_eq!(r.placement(&[]), Placement::Pageable);
        let after = VolatileSlice::from(&mut hi[..10]);
        assert_eq!(r.placement(&[after]), Placement::Pageable);
        assert_eq!(
            PinnedRanges::default().placement(&[in_pinned]),
            Placement::Pageable
        );
        // A piece straddling the end of a pinned range.
        let r2 = PinnedRanges::new(vec![(base, 50)]);
        assert_eq!(r2.placement(&[in_pinned]), Placement::Mixed);
    }

    #[test]
    fn many_small_pinned_pieces_are_staged() {
        let mut small = vec![0u8; 8192];
        let small_base = small.as_ptr() as usize;
        // Many small pinned pieces: staged; as many large ones: direct.
        let pages: Vec<_> = small.chunks_mut(256).map(VolatileSlice::from).collect();
        assert_eq!(pages.len(), 32);
        let r3 = PinnedRanges::new(vec![(small_base, 8192)]);
        assert_eq!(r3.placement(&pages), Placement::Scattered);
        assert_eq!(r3.placement(&pages[..MAX_DIRECT_PIECES]), Placement::Pinned);
        let mut big = vec![0u8; 32 * MIN_DIRECT_PIECE];
        let big_base = big.as_ptr() as usize;
        let big_pieces: Vec<_> = big
            .chunks_mut(MIN_DIRECT_PIECE)
            .map(VolatileSlice::from)
            .collect();
        let r4 = PinnedRanges::new(vec![(big_base, big_pieces.len() * MIN_DIRECT_PIECE)]);
        assert_eq!(r4.placement(&big_pieces), Placement::Pinned);
    }
}
