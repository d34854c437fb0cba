// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Planning host <-> device copies: which driver copies move which bytes.
//!
//! Host data always arrives packed (`width * height` bytes); the device side is a pitched
//! [`Region`]. A stretch of packed bytes (one data-segment piece, or one staging window)
//! becomes at most three driver copies: a partial first row, whole rows (one
//! `cuMemcpy2DAsync`), a partial last row. Staging windows hold whole rows when a row fits,
//! so a pitched copy costs one 2-D copy per window.

use vcuda_protocol::region::Region;

/// One driver copy between packed host bytes and the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// `len` contiguous bytes: packed offset `packed`, device address `dev`.
    Linear {
        /// Offset in the packed host data.
        packed: u64,
        /// Device address.
        dev: u64,
        /// Bytes.
        len: u64,
    },
    /// `rows` whole rows: packed offset `packed` (rows `width` apart on the host), device
    /// address `dev` (rows `pitch` apart).
    Rows {
        /// Offset in the packed host data.
        packed: u64,
        /// Device address of the first row.
        dev: u64,
        /// Rows (at least 2).
        rows: u64,
    },
}

impl Span {
    /// Offset of the span in the packed data.
    pub fn packed(&self) -> u64 {
        match *self {
            Span::Linear { packed, .. } | Span::Rows { packed, .. } => packed,
        }
    }

    /// Bytes the span moves.
    #[cfg(test)]
    fn bytes(&self, width: u64) -> u64 {
        match *self {
            Span::Linear { len, .. } => len,
            Span::Rows { rows, .. } => rows * width,
        }
    }
}

/// The driver copies for packed bytes `[off, off + len)` of `r`. `off + len` must not exceed
/// `r.packed_len()`.
pub fn spans(r: &Region, off: u64, len: u64) -> Vec<Span> {
    let mut v = Vec::new();
    if len == 0 || r.width() == 0 {
        return v;
    }
    if r.is_contiguous() {
        v.push(Span::Linear {
            packed: off,
            dev: r.base() + off,
            len,
        });
        return v;
    }
    let dev = |packed: u64| r.base() + packed / r.width() * r.pitch() + packed % r.width();
    let (mut at, end) = (off, off + len);
    let col = at % r.width();
    if col != 0 {
        let n = (r.width() - col).min(end - at);
        v.push(Span::Linear {
            packed: at,
            dev: dev(at),
            len: n,
        });
        at += n;
    }
    let rows = (end - at) / r.width();
    match rows {
        0 => {}
        1 => v.push(Span::Linear {
            packed: at,
            dev: dev(at),
            len: r.width(),
        }),
        _ => v.push(Span::Rows {
            packed: at,
            dev: dev(at),
            rows,
        }),
    }
    at += rows * r.width();
    if at < end {
        v.push(Span::Linear {
            packed: at,
            dev: dev(at),
            len: end - at,
        });
    }
    v
}

/// Staging windows `(offset, len)` over the packed data of `r`: at most `chunk` bytes each,
/// whole rows when a row fits in `chunk` and the rows are not contiguous anyway.
pub fn windows(r: &Region, chunk: u64) -> impl Iterator<Item = (u64, u64)> {
    let total = r.packed_len();
    let step = if r.is_contiguous() || r.width() > chunk {
        chunk
    } else {
        chunk / r.width() * r.width()
    }
    .max(1);
    (0..total.div_ceil(step)).map(move |i| {
        let off = i * step;
        (off, step.min(total - off))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays spans on a byte-addressed "device" and checks every packed byte lands where
    /// the pitched layout says, exactly once.
    fn replay(r: &Region, pieces: &[(u64, u64)]) {
        let mut hits = vec![0u32; r.span() as usize];
        let mut covered = 0;
        for &(off, len) in pieces {
            let sp = spans(r, off, len);
            assert!(sp.len() <= 3, "{sp:?}");
            let mut expect = off;
            for s in sp {
                assert_eq!(s.packed(), expect, "spans out of order");
                expect += s.bytes(r.width());
                match s {
                    Span::Linear { packed, dev, len } => {
                        for i in 0..len {
                            let p = packed + i;
                            let want = r.base() + p / r.width() * r.pitch() + p % r.width();
                            assert_eq!(dev + i, want);
                            hits[(dev + i - r.base()) as usize] += 1;
                        }
                    }
                    Span::Rows { packed, dev, rows } => {
                        assert_eq!(packed % r.width(), 0);
                        assert!(rows >= 2);
                        for row in 0..rows {
                            for c in 0..r.width() {
                                let p = packed + row * r.width() + c;
                                let d = dev + row * r.pitch() + c;
                                assert_eq!(d, r.base() + p / r.width() * r.pitch() + p % r.width());
                                hits[(d - r.base()) as usize] += 1;
                            }
                        }
                    }
                }
            }
            assert_eq!(expect, off + len);
            covered += len;
        }
        assert_eq!(covered, r.packed_len());
        for (i, &h) in hits.iter().enumerate() {
            let in_row = (i as u64 % r.pitch()) < r.width();
            assert_eq!(h, u32::from(in_row), "byte {i}");
        }
    }

    #[test]
    fn pieces_map_onto_pitched_rows() {
        let r = Region::new(0x1000, 16, 10, 7).unwrap();
        // One piece, pieces cut mid-row, single bytes, row-aligned pieces.
        replay(&r, &[(0, 70)]);
        replay(&r, &[(0, 3), (3, 24), (27, 43)]);
        replay(&r, &(0..70).map(|i| (i, 1)).collect::<Vec<_>>());
        replay(&r, &[(0, 10), (10, 20), (30, 40)]);
        replay(
            &r,
            &[(5, 10)]
                .into_iter()
                .chain([(0, 5), (15, 55)])
                .collect::<Vec<_>>(),
        );
    }

    #[test]
    fn contiguous_regions_are_one_linear_copy() {
        let r = Region::new(0x1000, 10, 10, 7).unwrap();
        assert_eq!(
            spans(&r, 5, 30),
            vec![Span::Linear {
                packed: 5,
                dev: 0x1005,
                len: 30
            }]
        );
        let one = Region::new(0x1000, 0, 1 << 20, 1).unwrap();
        assert_eq!(spans(&one, 0, 1 << 20).len(), 1);
        assert!(spans(&one, 0, 0).is_empty());
    }

    #[test]
    fn windows_hold_whole_rows_when_they_fit() {
        let r = Region::new(0, 4096, 1000, 100).unwrap();
        let w: Vec<_> = windows(&r, 4096).collect();
        assert!(
            w.iter()
                .all(|&(o, l)| o % 1000 == 0 && l % 1000 == 0 && l <= 4096)
        );
        assert_eq!(w.iter().map(|x| x.1).sum::<u64>(), 100_000);
        // Every window is then a single 2-D copy.
        assert!(w.iter().all(|&(o, l)| spans(&r, o, l).len() == 1));

        // Rows wider than a chunk: plain chunks, partial rows allowed.
        let wide = Region::new(0, 10_000, 9000, 3).unwrap();
        let w: Vec<_> = windows(&wide, 4096).collect();
        assert!(w.iter().all(|&(_, l)| l <= 4096));
        assert_eq!(w.iter().map(|x| x.1).sum::<u64>(), 27_000);
        replay(&wide, &w);

        // Contiguous: plain chunks, the last one short.
        let lin = Region::new(0, 0, 10_000, 1).unwrap();
        let w: Vec<_> = windows(&lin, 4096).collect();
        assert_eq!(w, vec![(0, 4096), (4096, 4096), (8192, 1808)]);
        assert_eq!(windows(&Region::new(0, 0, 0, 1).unwrap(), 4096).count(), 0);
    }
}
