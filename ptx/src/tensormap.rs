// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tensor maps (`CUtensorMap`, Hopper's tensor-memory-accelerator descriptors) as this
//! interpreter reads them.
//!
//! On a GPU the 128-byte object is opaque: the driver's `cuTensorMapEncodeTiled` writes it,
//! `cp.async.bulk.tensor` reads it and `tensormap.replace` changes one field of it. Here the
//! layout is this crate's own ([`TensorMap::to_bytes`]); the backend encodes maps for the CPU
//! executor with [`encode_tiled`] (with the checks the driver makes), and kernels change them
//! with `tensormap.replace`, whose stores land at the offsets [`replace_slot`] gives. Only the
//! tiled mode exists here: interleaved layouts, im2col and the packed 4- and 6-bit element
//! types are refused at encode time.
//!
//! Layout (little endian): `0` global address (u64); `8` rank; `9` element type (the PTX
//! encoding, [`ElemType`]); `10` interleave; `11` swizzle mode; `12` swizzle atomicity;
//! `13` fill mode; `14` L2 promotion (u8 each); `16` global dimensions (5 x u32, each the
//! size minus one, so that 2^32 fits); `36` box dimensions (5 x u32); `56` element strides
//! (5 x u32); `80` global strides of dimensions 1 to 4 in bytes (4 x u64).

/// Bytes of a tensor map.
pub const TENSOR_MAP_SIZE: usize = 128;
/// Alignment a tensor map needs, in device memory, shared memory or a parameter.
pub const TENSOR_MAP_ALIGN: u64 = 64;
/// Most dimensions of a tensor.
pub const MAX_RANK: usize = 5;

const OFF_ADDRESS: u64 = 0;
const OFF_RANK: u64 = 8;
const OFF_ELEMTYPE: u64 = 9;
const OFF_INTERLEAVE: u64 = 10;
const OFF_SWIZZLE: u64 = 11;
const OFF_ATOMICITY: u64 = 12;
const OFF_FILL: u64 = 13;
const OFF_L2: u64 = 14;
const OFF_GLOBAL_DIM: u64 = 16;
const OFF_BOX_DIM: u64 = 36;
const OFF_ELEMENT_STRIDE: u64 = 56;
const OFF_GLOBAL_STRIDE: u64 = 80;

/// The element types of PTX's `tensormap.replace.elemtype` encoding (not CUDA's
/// `CUtensorMapDataType`, which orders them differently: see [`ElemType::from_cuda`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemType {
    U8,
    U16,
    U32,
    S32,
    U64,
    S64,
    F16,
    F32,
    F32Ftz,
    F64,
    Bf16,
    Tf32,
    Tf32Ftz,
}

impl ElemType {
    const ALL: [ElemType; 13] = [
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::S32,
        ElemType::U64,
        ElemType::S64,
        ElemType::F16,
        ElemType::F32,
        ElemType::F32Ftz,
        ElemType::F64,
        ElemType::Bf16,
        ElemType::Tf32,
        ElemType::Tf32Ftz,
    ];

    /// The type of PTX encoding `v` (0 `.u8` to 12 `.tf32.ftz`).
    pub fn from_ptx(v: u64) -> Option<ElemType> {
        Self::ALL.get(usize::try_from(v).ok()?).copied()
    }

    /// The PTX encoding.
    pub fn ptx(self) -> u8 {
        Self::ALL.iter().position(|&t| t == self).unwrap_or(0) as u8
    }

    /// The type of `CUtensorMapDataType` value `v`; `None` for the packed sub-byte types
    /// (13 to 15), which this interpreter does not copy, and for unknown values.
    pub fn from_cuda(v: u32) -> Option<ElemType> {
        Some(match v {
            0 => ElemType::U8,
            1 => ElemType::U16,
            2 => ElemType::U32,
            3 => ElemType::S32,
            4 => ElemType::U64,
            5 => ElemType::S64,
            6 => ElemType::F16,
            7 => ElemType::F32,
            8 => ElemType::F64,
            9 => ElemType::Bf16,
            10 => ElemType::F32Ftz,
            11 => ElemType::Tf32,
            12 => ElemType::Tf32Ftz,
            _ => return None,
        })
    }

    /// Bytes of one element.
    pub fn size(self) -> u32 {
        match self {
            ElemType::U8 => 1,
            ElemType::U16 | ElemType::F16 | ElemType::Bf16 => 2,
            ElemType::U64 | ElemType::S64 | ElemType::F64 => 8,
            _ => 4,
        }
    }

    /// The NaN an out-of-bounds element reads as under the NaN fill mode (`None`: an
    /// integer type, which always fills with zeros).
    pub fn nan(self) -> Option<u64> {
        match self {
            ElemType::F16 | ElemType::Bf16 => Some(0x7fff),
            ElemType::F32 | ElemType::F32Ftz | ElemType::Tf32 | ElemType::Tf32Ftz => {
                Some(0x7fff_ffff)
            }
            ElemType::F64 => Some(0x7fff_ffff_ffff_ffff),
            _ => None,
        }
    }
}

/// Swizzle modes (PTX's and CUDA's encodings agree for these four).
pub const SWIZZLE_NONE: u8 = 0;
/// `CU_TENSOR_MAP_SWIZZLE_32B`.
pub const SWIZZLE_32B: u8 = 1;
/// `CU_TENSOR_MAP_SWIZZLE_64B`.
pub const SWIZZLE_64B: u8 = 2;
/// `CU_TENSOR_MAP_SWIZZLE_128B`.
pub const SWIZZLE_128B: u8 = 3;

/// A decoded tensor map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap {
    /// Device address of element 0.
    pub address: u64,
    /// Dimensions, 1 to [`MAX_RANK`].
    pub rank: u32,
    pub elem: ElemType,
    /// Elements in each dimension (1 to 2^32).
    pub global_dim: [u64; MAX_RANK],
    /// Bytes between consecutive elements of each dimension (`[0]`: the element size).
    pub global_stride: [u64; MAX_RANK],
    /// Elements of the box in each dimension (1 to 256).
    pub box_dim: [u32; MAX_RANK],
    /// Traversal stride in each dimension (1 to 8).
    pub element_stride: [u32; MAX_RANK],
    /// Swizzle mode ([`SWIZZLE_NONE`] to [`SWIZZLE_128B`]).
    pub swizzle: u8,
    /// Out-of-bounds elements read as NaN (float types) rather than zero.
    pub nan_fill: bool,
    /// L2 promotion (a hint: kept, not used).
    pub l2_promotion: u8,
}

/// Why [`encode_tiled`] or [`TensorMap::from_bytes`] refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorMapError {
    /// A parameter breaks one of the driver's rules (`CUDA_ERROR_INVALID_VALUE`).
    #[error("invalid tensor map parameter: {0}")]
    Invalid(&'static str),
    /// Valid for the driver, but not something this interpreter copies
    /// (`CUDA_ERROR_NOT_SUPPORTED`).
    #[error("tensor map feature not supported by the CPU executor: {0}")]
    Unsupported(&'static str),
}

/// What `cuTensorMapEncodeTiled` takes (enumerations as CUDA numbers them).
#[derive(Clone, Copy, Debug, Default)]
pub struct TiledParams {
    pub data_type: u32,
    pub rank: u32,
    pub address: u64,
    pub global_dim: [u64; MAX_RANK],
    /// Strides of dimensions 1 to `rank - 1`, in bytes.
    pub global_strides: [u64; MAX_RANK - 1],
    pub box_dim: [u32; MAX_RANK],
    pub element_strides: [u32; MAX_RANK],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

/// `cuTensorMapEncodeTiled` for this interpreter: checks `p` as the driver does and returns
/// the map's bytes.
pub fn encode_tiled(p: &TiledParams) -> Result<[u8; TENSOR_MAP_SIZE], TensorMapError> {
    use TensorMapError::{Invalid, Unsupported};
    let elem = match p.data_type {
        0..=12 => ElemType::from_cuda(p.data_type).ok_or(Invalid("data type"))?,
        13..=15 => return Err(Unsupported("packed sub-byte element types")),
        _ => return Err(Invalid("data type")),
    };
    match p.interleave {
        0 => {}
        1 | 2 => return Err(Unsupported("interleaved layouts")),
        _ => return Err(Invalid("interleave")),
    }
    let swizzle = match p.swizzle {
        0..=3 => p.swizzle as u8,
        4..=6 => return Err(Unsupported("swizzle atoms other than 16 bytes")),
        _ => return Err(Invalid("swizzle")),
    };
    if p.l2_promotion > 3 {
        return Err(Invalid("L2 promotion"));
    }
    let nan_fill = match p.oob_fill {
        0 => false,
        1 if elem.nan().is_some() => true,
        _ => return Err(Invalid("out-of-bounds fill")),
    };
    let mut m = TensorMap {
        address: p.address,
        rank: p.rank,
        elem,
        global_dim: [1; MAX_RANK],
        global_stride: [0; MAX_RANK],
        box_dim: [1; MAX_RANK],
        element_stride: [1; MAX_RANK],
        swizzle,
        nan_fill,
        l2_promotion: p.l2_promotion as u8,
    };
    let rank = p.rank as usize;
    if !(1..=MAX_RANK).contains(&rank) {
        return Err(Invalid("rank"));
    }
    m.global_dim[..rank].copy_from_slice(&p.global_dim[..rank]);
    m.box_dim[..rank].copy_from_slice(&p.box_dim[..rank]);
    m.element_stride[..rank].copy_from_slice(&p.element_strides[..rank]);
    m.global_stride[0] = u64::from(elem.size());
    m.global_stride[1..rank].copy_from_slice(&p.global_strides[..rank - 1]);
    m.check()?;
    Ok(m.to_bytes())
}

/// `cuTensorMapReplaceAddress`: the map in `bytes` with its global address replaced.
pub fn replace_address(
    bytes: &[u8; TENSOR_MAP_SIZE],
    address: u64,
) -> Result<[u8; TENSOR_MAP_SIZE], TensorMapError> {
    let mut m = TensorMap::from_bytes(bytes)?;
    m.address = address;
    m.check()?;
    Ok(m.to_bytes())
}

impl TensorMap {
    /// The driver's rules (`cuTensorMapEncodeTiled`'s documentation), also what a kernel's
    /// copy checks a map read from memory against.
    pub fn check(&self) -> Result<(), TensorMapError> {
        use TensorMapError::Invalid;
        let rank = self.rank as usize;
        if !(1..=MAX_RANK).contains(&rank) {
            return Err(Invalid("rank"));
        }
        if !self.address.is_multiple_of(16) {
            return Err(Invalid("global address not 16-byte aligned"));
        }
        let size = u64::from(self.elem.size());
        for i in 0..rank {
            if !(1..=1 << 32).contains(&self.global_dim[i]) {
                return Err(Invalid("global dimension"));
            }
            if !(1..=256).contains(&self.box_dim[i]) {
                return Err(Invalid("box dimension"));
            }
            if !(1..=8).contains(&self.element_stride[i]) {
                return Err(Invalid("element stride"));
            }
            if i > 0
                && (!self.global_stride[i].is_multiple_of(16) || self.global_stride[i] >= 1 << 40)
            {
                return Err(Invalid("global stride"));
            }
        }
        if self.global_stride[0] != size {
            return Err(Invalid("element size"));
        }
        let inner = u64::from(self.box_dim[0]) * size;
        if !inner.is_multiple_of(16) {
            return Err(Invalid("box's inner dimension not a multiple of 16 bytes"));
        }
        if self.swizzle > SWIZZLE_128B {
            return Err(Invalid("swizzle"));
        }
        if self.swizzle != SWIZZLE_NONE && inner > swizzle_span(self.swizzle) {
            return Err(Invalid("box's inner dimension wider than the swizzle span"));
        }
        Ok(())
    }

    /// The traversal stride of dimension `i` (dimension 0's is ignored: no interleaved
    /// layouts here).
    pub fn traversal_stride(&self, i: usize) -> u64 {
        if i == 0 {
            1
        } else {
            u64::from(self.element_stride[i])
        }
    }

    /// Elements the box holds in each dimension (the box divided by the traversal stride,
    /// rounded up) and the box's bytes in shared memory (what a load completes on its
    /// mbarrier, out-of-bounds elements included).
    pub fn box_extent(&self) -> ([u64; MAX_RANK], u64) {
        let mut n = [1u64; MAX_RANK];
        let mut total = u64::from(self.elem.size());
        for (i, n) in n.iter_mut().enumerate().take(self.rank as usize) {
            *n = u64::from(self.box_dim[i]).div_ceil(self.traversal_stride(i));
            total *= *n;
        }
        (n, total)
    }

    /// The map's bytes.
    pub fn to_bytes(&self) -> [u8; TENSOR_MAP_SIZE] {
        let mut b = [0u8; TENSOR_MAP_SIZE];
        let put = |b: &mut [u8; TENSOR_MAP_SIZE], off: u64, v: &[u8]| {
            b[off as usize..off as usize + v.len()].copy_from_slice(v);
        };
        put(&mut b, OFF_ADDRESS, &self.address.to_le_bytes());
        b[OFF_RANK as usize] = self.rank as u8;
        b[OFF_ELEMTYPE as usize] = self.elem.ptx();
        b[OFF_SWIZZLE as usize] = self.swizzle;
        b[OFF_FILL as usize] = u8::from(self.nan_fill);
        b[OFF_L2 as usize] = self.l2_promotion;
        for i in 0..MAX_RANK {
            let o = 4 * i as u64;
            let dim = self.global_dim[i].saturating_sub(1) as u32;
            put(&mut b, OFF_GLOBAL_DIM + o, &dim.to_le_bytes());
            put(&mut b, OFF_BOX_DIM + o, &self.box_dim[i].to_le_bytes());
            put(
                &mut b,
                OFF_ELEMENT_STRIDE + o,
                &self.element_stride[i].to_le_bytes(),
            );
            if i > 0 {
                let s = self.global_stride[i];
                put(
                    &mut b,
                    OFF_GLOBAL_STRIDE + 8 * (i as u64 - 1),
                    &s.to_le_bytes(),
                );
            }
        }
        b
    }

    /// Decodes a map's bytes; a map no rule of [`TensorMap::check`] allows is refused.
    pub fn from_bytes(b: &[u8; TENSOR_MAP_SIZE]) -> Result<TensorMap, TensorMapError> {
        let u32_at = |off: u64| {
            let o = off as usize;
            u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
        };
        let u64_at = |off: u64| u64::from(u32_at(off)) | u64::from(u32_at(off + 4)) << 32;
        let elem = ElemType::from_ptx(u64::from(b[OFF_ELEMTYPE as usize]))
            .ok_or(TensorMapError::Invalid("element type"))?;
        if b[OFF_INTERLEAVE as usize] != 0 || b[OFF_ATOMICITY as usize] != 0 {
            return Err(TensorMapError::Unsupported(
                "interleaved layouts and swizzle atoms other than 16 bytes",
            ));
        }
        if b[OFF_FILL as usize] > 1 {
            return Err(TensorMapError::Invalid("fill mode"));
        }
        let mut m = TensorMap {
            address: u64_at(OFF_ADDRESS),
            rank: u32::from(b[OFF_RANK as usize]),
            elem,
            global_dim: [1; MAX_RANK],
            global_stride: [0; MAX_RANK],
            box_dim: [1; MAX_RANK],
            element_stride: [1; MAX_RANK],
            swizzle: b[OFF_SWIZZLE as usize],
            nan_fill: b[OFF_FILL as usize] == 1 && elem.nan().is_some(),
            l2_promotion: b[OFF_L2 as usize],
        };
        m.global_stride[0] = u64::from(elem.size());
        for i in 0..MAX_RANK {
            let o = 4 * i as u64;
            m.global_dim[i] = u64::from(u32_at(OFF_GLOBAL_DIM + o)) + 1;
            m.box_dim[i] = u32_at(OFF_BOX_DIM + o);
            m.element_stride[i] = u32_at(OFF_ELEMENT_STRIDE + o);
            if i > 0 {
                m.global_stride[i] = u64_at(OFF_GLOBAL_STRIDE + 8 * (i as u64 - 1));
            }
        }
        m.check()?;
        Ok(m)
    }
}

/// Bytes of one swizzle pattern's row (32, 64 or 128; 16 without swizzle).
pub fn swizzle_span(mode: u8) -> u64 {
    16 << mode.min(SWIZZLE_128B)
}

/// The shared-memory address where the byte the box puts at `addr` lands under swizzle
/// `mode`: the 16-byte chunk index within each span (bits 4 and up) is XORed with the
/// index of the span's row in its group of eight 128-byte rows (bits 7 and up), as the
/// hardware does with the address bits.
pub fn swizzle(mode: u8, addr: u64) -> u64 {
    if mode == SWIZZLE_NONE {
        return addr;
    }
    let mask = (swizzle_span(mode) / 16) - 1;
    addr ^ (((addr >> 7) & mask) << 4)
}

/// The fields `tensormap.replace` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    GlobalAddress,
    Rank,
    BoxDim,
    GlobalDim,
    GlobalStride,
    ElementStride,
    ElemType,
    InterleaveLayout,
    SwizzleMode,
    SwizzleAtomicity,
    FillMode,
}

impl Field {
    /// The field a `tensormap.replace` modifier names.
    pub fn parse(s: &str) -> Option<Field> {
        Some(match s {
            "global_address" => Field::GlobalAddress,
            "rank" => Field::Rank,
            "box_dim" => Field::BoxDim,
            "global_dim" => Field::GlobalDim,
            "global_stride" => Field::GlobalStride,
            "element_stride" => Field::ElementStride,
            "elemtype" => Field::ElemType,
            "interleave_layout" => Field::InterleaveLayout,
            "swizzle_mode" => Field::SwizzleMode,
            "swizzle_atomicity" => Field::SwizzleAtomicity,
            "fill_mode" => Field::FillMode,
            _ => return None,
        })
    }

    /// Whether the form takes an ordinal (a dimension) before the new value.
    pub fn ordinal(self) -> bool {
        matches!(
            self,
            Field::BoxDim | Field::GlobalDim | Field::GlobalStride | Field::ElementStride
        )
    }
}

/// Where `tensormap.replace` of `field` (dimension `ord`) with `value` stores, as an offset
/// into the map, a size in bytes and the value to store; `None` for an ordinal out of range.
/// The PTX ISA's encodings: `.rank` takes the rank minus one, the dimensions, box sizes and
/// element strides their values, `.global_stride` with ordinal `i` the stride in bytes of
/// dimension `i + 1`, `.elemtype` PTX's numbering ([`ElemType::from_ptx`]). Nothing is
/// checked here (PTX leaves a map with invalid fields undefined; a copy through one fails
/// the launch).
pub fn replace_slot(field: Field, ord: u64, value: u64) -> Option<(u64, u32, u64)> {
    let dim = |max: u64| (ord < max).then_some(ord);
    Some(match field {
        Field::GlobalAddress => (OFF_ADDRESS, 8, value),
        Field::Rank => (OFF_RANK, 1, value.wrapping_add(1) & 0xff),
        Field::BoxDim => (OFF_BOX_DIM + 4 * dim(5)?, 4, value & 0xffff_ffff),
        // Stored minus one: a new value of 0 (2^32 in 32 bits) is a dimension of 2^32.
        Field::GlobalDim => (
            OFF_GLOBAL_DIM + 4 * dim(5)?,
            4,
            value.wrapping_sub(1) & 0xffff_ffff,
        ),
        Field::GlobalStride => (OFF_GLOBAL_STRIDE + 8 * dim(4)?, 8, value),
        Field::ElementStride => (OFF_ELEMENT_STRIDE + 4 * dim(5)?, 4, value & 0xffff_ffff),
        Field::ElemType => (OFF_ELEMTYPE, 1, value & 0xff),
        Field::InterleaveLayout => (OFF_INTERLEAVE, 1, value & 0xff),
        Field::SwizzleMode => (OFF_SWIZZLE, 1, value & 0xff),
        Field::SwizzleAtomicity => (OFF_ATOMICITY, 1, value & 0xff),
        Field::FillMode => (OFF_FILL, 1, value & 0xff),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params_2d() -> TiledParams {
        TiledParams {
            data_type: 7,
            rank: 2,
            address: 0x7f00_0000_0000,
            global_dim: [100, 30, 1, 1, 1],
            global_strides: [512, 0, 0, 0],
            box_dim: [32, 8, 1, 1, 1],
            element_strides: [1, 1, 1, 1, 1],
            ..TiledParams::default()
        }
    }

    #[test]
    fn encode_round_trips() {
        let b = encode_tiled(&params_2d()).unwrap();
        let m = TensorMap::from_bytes(&b).unwrap();
        assert_eq!(m.rank, 2);
        assert_eq!(m.elem, ElemType::F32);
        assert_eq!(m.global_dim[..2], [100, 30]);
        assert_eq!(m.global_stride[..2], [4, 512]);
        assert_eq!(m.box_extent(), ([32, 8, 1, 1, 1], 32 * 8 * 4));
        let moved = replace_address(&b, 0x7f00_0000_1000).unwrap();
        assert_eq!(
            TensorMap::from_bytes(&moved).unwrap().address,
            0x7f00_0000_1000
        );
    }

    #[test]
    fn encode_refuses_what_the_driver_refuses() {
        let bad = |f: &dyn Fn(&mut TiledParams)| {
            let mut p = params_2d();
            f(&mut p);
            encode_tiled(&p).unwrap_err()
        };
        assert!(matches!(bad(&|p| p.rank = 0), TensorMapError::Invalid(_)));
        assert!(matches!(bad(&|p| p.rank = 6), TensorMapError::Invalid(_)));
        assert!(matches!(
            bad(&|p| p.address += 8),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.global_strides[0] = 100),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.box_dim[1] = 257),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.box_dim[0] = 3),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.element_strides[0] = 9),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.global_dim[0] = 0),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.swizzle = 1),
            TensorMapError::Invalid(_)
        ));
        assert!(matches!(
            bad(&|p| p.data_type = 13),
            TensorMapError::Unsupported(_)
        ));
        assert!(matches!(
            bad(&|p| p.interleave = 1),
            TensorMapError::Unsupported(_)
        ));
        assert!(matches!(
            bad(&|p| {
                p.data_type = 3;
                p.oob_fill = 1
            }),
            TensorMapError::Invalid(_)
        ));
        // 2^32 elements in a dimension is allowed, one more is not.
        let mut p = params_2d();
        p.global_dim[1] = 1 << 32;
        let m = TensorMap::from_bytes(&encode_tiled(&p).unwrap()).unwrap();
        assert_eq!(m.global_dim[1], 1 << 32);
        assert!(
            bad(&|p| p.global_dim[1] = (1 << 32) + 1)
                == TensorMapError::Invalid("global dimension")
        );
    }

    proptest::proptest! {
        /// Any 128 bytes a kernel leaves in memory decode to a map the checks allow, or to
        /// an error; a decoded map encodes back to itself.
        #[test]
        fn hostile_bytes_decode_or_refuse(
            words in proptest::collection::vec(proptest::prelude::any::<u64>(), 16),
            small in proptest::prelude::any::<[u8; 8]>(),
        ) {
            let mut b = [0u8; TENSOR_MAP_SIZE];
            for (c, w) in b.chunks_exact_mut(8).zip(&words) {
                c.copy_from_slice(&w.to_le_bytes());
            }
            // Half the time, plausible small fields, so that valid maps come up too.
            if words[0] & 1 == 0 {
                b[8..16].copy_from_slice(&[small[0] % 6, small[1] % 13, 0, small[2] % 4, 0, 0, 0, 0]);
            }
            if let Ok(m) = TensorMap::from_bytes(&b) {
                proptest::prop_assert_eq!(TensorMap::from_bytes(&m.to_bytes()), Ok(m));
                let (n, bytes) = m.box_extent();
                proptest::prop_assert!(n.iter().all(|&n| (1..=256).contains(&n)));
                proptest::prop_assert!(bytes <= 256u64.pow(5) * 8);
            }
        }
    }

    #[test]
    fn replace_slots_follow_the_ptx_encodings() {
        let base = encode_tiled(&params_2d()).unwrap();
        let put = |b: &mut [u8; TENSOR_MAP_SIZE], f: Field, ord: u64, v: u64| {
            let (off, size, v) = replace_slot(f, ord, v).unwrap();
            b[off as usize..off as usize + size as usize]
                .copy_from_slice(&v.to_le_bytes()[..size as usize]);
        };
        let mut b = base;
        put(&mut b, Field::Rank, 0, 2); // rank 3
        put(&mut b, Field::GlobalDim, 2, 7);
        put(&mut b, Field::GlobalStride, 1, 512 * 30);
        put(&mut b, Field::BoxDim, 2, 4);
        put(&mut b, Field::ElementStride, 1, 2);
        put(&mut b, Field::ElemType, 0, 9); // .f64 in PTX's numbering
        put(&mut b, Field::BoxDim, 0, 16);
        put(&mut b, Field::GlobalAddress, 0, 0x7f00_0000_2000);
        let m = TensorMap::from_bytes(&b).unwrap();
        assert_eq!(m.rank, 3);
        assert_eq!(m.elem, ElemType::F64);
        assert_eq!(m.global_dim[..3], [100, 30, 7]);
        assert_eq!(m.global_stride[..3], [8, 512, 512 * 30]);
        assert_eq!(m.box_dim[..3], [16, 8, 4]);
        assert_eq!(m.element_stride[1], 2);
        assert_eq!(m.address, 0x7f00_0000_2000);
        // A dimension of 2^32 is written as 0.
        put(&mut b, Field::GlobalDim, 0, 0);
        assert_eq!(TensorMap::from_bytes(&b).unwrap().global_dim[0], 1 << 32);
        assert!(replace_slot(Field::BoxDim, 5, 1).is_none());
        assert!(replace_slot(Field::GlobalStride, 4, 16).is_none());
    }

    #[test]
    fn swizzle_permutes_16_byte_chunks_within_each_span() {
        // Row 0 is unchanged; row 1 of a 128-byte swizzle swaps chunks 0 and 1.
        assert_eq!(swizzle(SWIZZLE_128B, 0x10), 0x10);
        assert_eq!(swizzle(SWIZZLE_128B, 0x80), 0x90);
        assert_eq!(swizzle(SWIZZLE_128B, 0x80 + 0x13), 0x83);
        // Row 7 XORs the chunk with 7; 64-byte and 32-byte swizzles use fewer bits.
        assert_eq!(swizzle(SWIZZLE_128B, 7 * 0x80), 7 * 0x80 + 0x70);
        assert_eq!(swizzle(SWIZZLE_64B, 7 * 0x80), 7 * 0x80 + 0x30);
        assert_eq!(swizzle(SWIZZLE_32B, 7 * 0x80), 7 * 0x80 + 0x10);
        assert_eq!(swizzle(SWIZZLE_NONE, 7 * 0x80), 7 * 0x80);
        // A permutation of each 1024-byte group.
        let mut seen = [false; 1024];
        for a in 0..1024 {
            seen[swizzle(SWIZZLE_128B, a) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
