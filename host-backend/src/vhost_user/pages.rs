// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Guest pages a VM shares with a session (`ChainOp::SharePages`): from guest-physical
//! extents to pieces of the files that back guest RAM, which [`crate::shared`] maps.

use std::os::fd::{AsFd, BorrowedFd};

use vcuda_protocol::virtio::PageExtent;
use vm_memory::{GuestAddress, GuestMemoryBackend, GuestMemoryRegion};

use super::chain::Mem;
use crate::shared::Piece;

/// The file pieces backing `extents`, in order: each extent split where it crosses from
/// one guest memory region into the next. Fails if a page lies outside guest memory or in
/// a region with no file behind it.
pub fn pieces<'m>(mem: &'m Mem, extents: &[PageExtent]) -> Result<Vec<Piece<'m>>, String> {
    let mut out = Vec::with_capacity(extents.len());
    for e in extents {
        let mut addr = e.addr;
        let mut left = e.len;
        while left > 0 {
            let (region, at) = mem
                .to_region_addr(GuestAddress(addr))
                .ok_or_else(|| format!("page {addr:#x} outside guest memory"))?;
            let n = (region.len() - at.0).min(left);
            let file = region
                .file_offset()
                .ok_or_else(|| format!("page {addr:#x} is not in file-backed guest memory"))?;
            let fd: BorrowedFd<'m> = file.file().as_fd();
            let off = file
                .start()
                .checked_add(at.0)
                .ok_or_else(|| format!("page {addr:#x}: file offset overflows"))?;
            let n_usize = usize::try_from(n).map_err(|_| "extent too long".to_string())?;
            out.push((fd, off, n_usize));
            addr = addr
                .checked_add(n)
                .ok_or_else(|| format!("extent at {:#x} wraps", e.addr))?;
            left -= n;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use vm_memory::{FileOffset, GuestRegionMmap, MmapRegion};

    use super::*;

    fn file_mem() -> Mem {
        let f = tempfile::tempfile().unwrap();
        f.set_len(0x4000).unwrap();
        let f2: File = f.try_clone().unwrap();
        let r1 = GuestRegionMmap::new(
            MmapRegion::from_file(FileOffset::new(f, 0), 0x2000).unwrap(),
            GuestAddress(0x10000),
        )
        .unwrap();
        let r2 = GuestRegionMmap::new(
            MmapRegion::from_file(FileOffset::new(f2, 0x2000), 0x2000).unwrap(),
            GuestAddress(0x12000),
        )
        .unwrap();
        Mem::from_regions(vec![r1, r2]).unwrap()
    }

    #[test]
    fn extents_resolve_to_file_pieces_across_regions() {
        let mem = file_mem();
        let p = pieces(
            &mem,
            &[PageExtent {
                addr: 0x11000,
                len: 0x2000,
            }],
        )
        .unwrap();
        assert_eq!(
            p.iter().map(|&(_, o, n)| (o, n)).collect::<Vec<_>>(),
            [(0x1000, 0x1000), (0x2000, 0x1000)]
        );
        assert!(
            pieces(
                &mem,
                &[PageExtent {
                    addr: 0x13000,
                    len: 0x2000
                }]
            )
            .is_err()
        );
        assert!(
            pieces(
                &mem,
                &[PageExtent {
                    addr: 0,
                    len: 0x1000
                }]
            )
            .is_err()
        );
        assert!(
            pieces(
                &mem,
                &[PageExtent {
                    addr: u64::MAX - 0xfff,
                    len: 0x1000
                }]
            )
            .is_err()
        );
        // Anonymous guest memory has no file to map.
        let anon = Mem::from_ranges(&[(GuestAddress(0), 0x1000)]).unwrap();
        assert!(
            pieces(
                &anon,
                &[PageExtent {
                    addr: 0,
                    len: 0x1000
                }]
            )
            .is_err()
        );
    }
}
