// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Guest-supplied memory regions, checked once for every side that uses them.
//!
//! A guest names memory as a pitched region (`height` rows of `width` bytes, `pitch` bytes
//! apart, from `base`: every copy, memset and 2D copy) or, for cuBLAS, as a strided vector
//! (`n` elements `inc` apart) or a column-major matrix (`rows x cols`, leading dimension
//! `ld`). The guest library, the CPU executor and the CUDA executor all size these with the
//! functions here: checked arithmetic only, so a hostile value gives an error rather than a
//! wrapped address, and an empty region (zero width or zero height) has no rows at all, so
//! a zero width with a huge height never becomes a huge loop.

use thiserror::Error;

use crate::status::{self, CudaStatus};

/// Why a region is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RegionError {
    /// Several rows, and the pitch is smaller than a row.
    #[error("Pitch smaller than the row width")]
    Pitch,
    /// Some byte of the region lies beyond the 64-bit address space.
    #[error("Region beyond the address space")]
    Overflow,
    /// A memset element size other than 1, 2 or 4 bytes.
    #[error("Unsupported element size")]
    ElementSize,
}

impl RegionError {
    /// The `cudaError_t` the CUDA runtime returns for this: `cudaErrorInvalidPitchValue`
    /// for a pitch, `cudaErrorInvalidValue` otherwise.
    pub fn status(self) -> CudaStatus {
        match self {
            Self::Pitch => status::INVALID_PITCH_VALUE,
            Self::Overflow | Self::ElementSize => status::INVALID_VALUE,
        }
    }
}

/// A pitched region: `height` rows of `width` bytes, `pitch` bytes apart, from `base`.
///
/// Host data for it is always packed (rows `width` bytes apart, `width * height` bytes).
/// Built only by [`Region::new`], so every address of it, its span and its packed length
/// are known not to overflow. An empty region (no bytes) has `width == height == 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    base: u64,
    pitch: u64,
    width: u64,
    height: u64,
}

impl Region {
    /// A checked region: `pitch >= width` when there are several rows, and every byte
    /// addressable. With one row the pitch is ignored (as CUDA does).
    pub fn new(base: u64, pitch: u64, width: u64, height: u64) -> Result<Self, RegionError> {
        if height > 1 && pitch < width {
            return Err(RegionError::Pitch);
        }
        if width == 0 || height == 0 {
            return Ok(Self {
                base,
                pitch: 0,
                width: 0,
                height: 0,
            });
        }
        let pitch = if height == 1 { width } else { pitch };
        let span = (height - 1)
            .checked_mul(pitch)
            .and_then(|v| v.checked_add(width))
            .ok_or(RegionError::Overflow)?;
        // The last byte is `base + span - 1`; `base + span` itself may be 2^64.
        base.checked_add(span - 1).ok_or(RegionError::Overflow)?;
        width.checked_mul(height).ok_or(RegionError::Overflow)?;
        Ok(Self {
            base,
            pitch,
            width,
            height,
        })
    }

    /// One linear range of `len` bytes.
    pub fn linear(base: u64, len: u64) -> Result<Self, RegionError> {
        Self::new(base, len, len, 1)
    }

    /// First byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Distance between rows (equal to `width` for one row).
    pub fn pitch(&self) -> u64 {
        self.pitch
    }

    /// Bytes per row.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> u64 {
        self.height
    }

    /// Whether the region holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.height == 0
    }

    /// Bytes from the first to the last byte touched: `(height - 1) * pitch + width`
    /// (0 when empty).
    pub fn span(&self) -> u64 {
        match self.height {
            0 => 0,
            // `new` checked that this does not overflow.
            h => (h - 1) * self.pitch + self.width,
        }
    }

    /// Bytes of the packed host data: `width * height`.
    pub fn packed_len(&self) -> u64 {
        self.width * self.height
    }

    /// Whether the rows are back to back, so the region is one linear range.
    pub fn is_contiguous(&self) -> bool {
        self.height <= 1 || self.pitch == self.width
    }

    /// Device address of row `i` (`i < height`).
    pub fn row(&self, i: u64) -> u64 {
        self.base + i * self.pitch
    }

    /// The rows, as `(index, address)`: none for an empty region.
    pub fn rows(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.height).map(move |i| (i, self.row(i)))
    }
}

/// Bytes of one memset row of `width` elements of `elem_size` bytes (1, 2 or 4).
pub fn memset_row_bytes(width: u64, elem_size: u64) -> Result<u64, RegionError> {
    if !matches!(elem_size, 1 | 2 | 4) {
        return Err(RegionError::ElementSize);
    }
    width.checked_mul(elem_size).ok_or(RegionError::Overflow)
}

/// Elements spanned by `n` elements `inc` apart (a BLAS vector; `inc` may be negative,
/// which walks the same span backwards). `None` on overflow; 0 for `n <= 0`.
pub fn vector_extent(n: i64, inc: i64) -> Option<u64> {
    if n <= 0 {
        return Some(0);
    }
    (n as u64 - 1)
        .checked_mul(inc.unsigned_abs())
        .and_then(|v| v.checked_add(1))
}

/// Elements spanned by a column-major `rows x cols` matrix with leading dimension `ld`.
/// `None` on overflow or a negative leading dimension; 0 when empty.
pub fn matrix_extent(rows: i64, cols: i64, ld: i64) -> Option<u64> {
    if rows <= 0 || cols <= 0 {
        return Some(0);
    }
    let ld = u64::try_from(ld).ok()?;
    (cols as u64 - 1)
        .checked_mul(ld)
        .and_then(|v| v.checked_add(rows as u64))
}

/// Bytes of `elems` elements of `size` bytes; `None` on overflow.
pub fn byte_len(elems: u64, size: u64) -> Option<u64> {
    elems.checked_mul(size)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const A: u64 = 0x7f00_0000_0000;

    #[test]
    fn pitched_regions() {
        let r = Region::new(A, 256, 100, 3).unwrap();
        assert_eq!(r.span(), 612);
        assert_eq!(r.packed_len(), 300);
        assert!(!r.is_contiguous());
        assert_eq!(
            r.rows().collect::<Vec<_>>(),
            [(0, A), (1, A + 256), (2, A + 512)]
        );
        assert!(Region::new(A, 100, 100, 3).unwrap().is_contiguous());
        let one = Region::new(A, 0, 100, 1).unwrap();
        assert_eq!((one.span(), one.pitch()), (100, 100));
        assert!(one.is_contiguous());
        assert_eq!(Region::new(A, 50, 100, 2), Err(RegionError::Pitch));
        assert_eq!(
            Region::new(u64::MAX - 10, 256, 100, 1),
            Err(RegionError::Overflow)
        );
        assert_eq!(
            Region::new(A, u64::MAX / 2, 100, 4),
            Err(RegionError::Overflow)
        );
        // The last byte of the address space is addressable.
        assert_eq!(Region::linear(u64::MAX, 1).unwrap().span(), 1);
        assert_eq!(Region::new(A, 0, 0, 0).unwrap().span(), 0);
    }

    #[test]
    fn zero_width_with_a_huge_height_has_no_rows() {
        let r = Region::new(A, 0, 0, 1 << 63).unwrap();
        assert!(r.is_empty());
        assert_eq!(r.rows().count(), 0);
        assert_eq!((r.span(), r.packed_len()), (0, 0));
        let r = Region::new(A, u64::MAX, u64::MAX, 0).unwrap();
        assert_eq!(r.rows().count(), 0);
    }

    #[test]
    fn errors_map_to_cuda_codes() {
        assert_eq!(RegionError::Pitch.status(), status::INVALID_PITCH_VALUE);
        assert_eq!(RegionError::Overflow.status(), status::INVALID_VALUE);
        assert_eq!(RegionError::ElementSize.status(), status::INVALID_VALUE);
    }

    #[test]
    fn memset_rows() {
        assert_eq!(memset_row_bytes(10, 4), Ok(40));
        assert_eq!(memset_row_bytes(10, 3), Err(RegionError::ElementSize));
        assert_eq!(memset_row_bytes(u64::MAX, 2), Err(RegionError::Overflow));
    }

    #[test]
    fn blas_extents() {
        assert_eq!(vector_extent(0, 0), Some(0));
        assert_eq!(vector_extent(4, 3), Some(10));
        assert_eq!(vector_extent(4, -3), Some(10));
        assert_eq!(vector_extent(i64::MAX, i64::MAX), None);
        assert_eq!(matrix_extent(3, 4, 5), Some(18));
        assert_eq!(matrix_extent(0, 4, 5), Some(0));
        assert_eq!(matrix_extent(3, 4, -1), None);
        assert_eq!(matrix_extent(i64::MAX, i64::MAX, i64::MAX), None);
        assert_eq!(byte_len(u64::MAX, 2), None);
    }

    proptest! {
        #[test]
        fn a_region_is_exactly_its_rows(
            base in any::<u64>(),
            pitch in any::<u64>(),
            width in 0u64..1 << 20,
            height in 0u64..64,
        ) {
            match Region::new(base, pitch, width, height) {
                Ok(r) => {
                    let rows: Vec<_> = r.rows().collect();
                    prop_assert_eq!(rows.len() as u64, if width == 0 { 0 } else { height });
                    if let Some(&(_, last)) = rows.last() {
                        // Every byte of every row is addressable, and the span covers them.
                        prop_assert!(last.checked_add(r.width() - 1).is_some());
                        prop_assert_eq!(last + r.width() - r.base(), r.span());
                        prop_assert!(rows.windows(2).all(|w| w[1].1 - w[0].1 == r.pitch()));
                    }
                    prop_assert_eq!(r.packed_len(), r.width() * r.height());
                }
                Err(RegionError::Pitch) => prop_assert!(height > 1 && pitch < width),
                Err(e) => {
                    prop_assert_eq!(e, RegionError::Overflow);
                    let span = u128::from(height - 1) * u128::from(pitch) + u128::from(width);
                    prop_assert!(u128::from(base) + span - 1 > u128::from(u64::MAX));
                }
            }
        }

        #[test]
        fn extents_never_wrap(n in any::<i64>(), inc in any::<i64>(), ld in any::<i64>()) {
            if let Some(e) = vector_extent(n, inc) {
                let exact = if n <= 0 { 0 } else {
                    (n as u128 - 1) * u128::from(inc.unsigned_abs()) + 1
                };
                prop_assert_eq!(u128::from(e), exact);
            }
            if let Some(e) = matrix_extent(n, 3, ld) {
                let exact = if n <= 0 { 0 } else { 2 * ld as u128 + n as u128 };
                prop_assert_eq!(u128::from(e), exact);
            }
        }
    }
}
