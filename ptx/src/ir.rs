// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The pre-decoded instruction form the interpreter executes.
//!
//! Registers are indices relative to their function's register window; every register holds a
//! 64-bit pattern per lane (narrower values are kept zero-extended, predicates are 0 or 1).

use crate::alu::{AluCtx, AluFn, native::Native};

pub(crate) type Reg = u32;
/// The `_` sink destination.
pub(crate) const SINK: Reg = u32::MAX;

/// A source operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Src {
    Reg(Reg),
    /// `!%p` on a predicate register.
    NotReg(Reg),
    Imm(u64),
    Sreg(Sreg),
    /// The address of module symbol `n` (see `Module::syms`) plus an offset.
    Sym(u32, i64),
    /// A local-space address: this lane's current frame base plus the offset.
    Local(u32),
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    Smid,
    Nsmid,
    Gridid,
    LanemaskEq,
    LanemaskLe,
    LanemaskLt,
    LanemaskGe,
    LanemaskGt,
    Clock,
    ClockHi,
    Clock64,
    Globaltimer,
    GlobaltimerLo,
    GlobaltimerHi,
    DynamicSmem,
    TotalSmem,
    /// `%envreg1` / `%envreg2`: the high and low words of a cooperative launch's grid
    /// workspace (what cooperative groups' `grid.sync()` reads).
    GridWorkspaceHi,
    GridWorkspaceLo,
    /// `%cluster_ctaid`: the block's position in its cluster.
    ClusterCtaid(u8),
    /// `%cluster_nctaid`: the cluster's shape.
    ClusterNctaid(u8),
    /// `%cluster_ctarank`: the block's rank in its cluster.
    ClusterCtarank,
    /// `%cluster_nctarank`: blocks per cluster.
    ClusterNctarank,
    /// `%clusterid`: the cluster's position in the grid.
    Clusterid(u8),
    /// `%nclusterid`: the grid's shape in clusters.
    Nclusterid(u8),
    /// `%is_explicit_cluster`: launched with a cluster shape.
    IsExplicitCluster,
    Const(u32),
}

/// Memory state spaces as seen by `ld`/`st`/`atom`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Generic,
    Global,
    Shared,
    Local,
    Const,
    /// Kernel parameters; addresses are in the param window of the generic space.
    Param,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Addr {
    pub base: Src,
    pub off: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    FAdd,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// What an [`Op::Mbar`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MbarOp {
    /// `mbarrier.init`: `a` expected arrivals, phase 0.
    Init,
    /// `mbarrier.arrive` (`drop`: `arrive_drop`, which also lowers the expected count) of
    /// `a` arrivals; `d` gets the state token.
    Arrive { drop: bool },
    /// `cp.async.mbarrier.arrive`: the copies are done already, so an arrival where
    /// `noinc`, nothing otherwise (the pending count is raised, then lowered).
    CpAsyncArrive { noinc: bool },
    /// `mbarrier.test_wait`/`try_wait`: `d` (a predicate) says whether the phase of state
    /// token `a` (`parity`: of parity `a`) completed.
    Wait { parity: bool },
    /// `mbarrier.pending_count`: `d` gets the pending count state token `a` holds.
    PendingCount,
    /// `mbarrier.inval`.
    Inval,
    /// `mbarrier.expect_tx`: the current phase also waits for `a` more bytes of transactions.
    ExpectTx,
    /// `mbarrier.complete_tx` (and the bytes a bulk copy lands): `a` bytes of the phase's
    /// transactions are done.
    CompleteTx,
    /// `mbarrier.arrive.expect_tx`: `ExpectTx` of `a` bytes, then one arrival; `d` gets the
    /// state token.
    ArriveExpectTx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarKind {
    Sync,
    Arrive,
    RedPopc,
    RedAnd,
    RedOr,
}

/// One actual argument of a `call`, in parameter order: bytes of the caller's frame (a call-site
/// `.param`) or a value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgCopy {
    Frame { from: u32, size: u32 },
    Value { src: Src, size: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intrinsic {
    Vprintf,
    AssertFail,
    /// Device-side `malloc` (and `operator new` through it): from the executor's device heap
    /// ([`crate::DeviceMemory::malloc`]), 0 when it has no room.
    Malloc,
    /// Device-side `free`.
    Free,
}

/// What a surface access does out of range (`.trap`, `.clamp`, `.zero`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SurfMode {
    Trap,
    Clamp,
    Zero,
}

/// A texture fetch: `tex.{1d,2d,3d,a1d,a2d,cube,acube}.v4` or, with `gather`,
/// `tld4.{r,g,b,a}.2d.v4`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TexOp {
    /// Coordinates used: 1, 2 or 3.
    pub dims: u8,
    /// `.s32` coordinates: integer texel indices (no filtering, zero out of range).
    pub int_coords: bool,
    /// `tld4`: the channel (0..4) gathered from the four texels of the bilinear footprint.
    pub gather: Option<u8>,
    pub d: [Reg; 4],
    /// The `d|p` residency predicate (always true here).
    pub p: Reg,
    pub handle: Src,
    pub coords: [Src; 3],
    /// The layer index of a layered geometry (`a1d`, `a2d`, `acube`).
    pub layer: Option<Src>,
    /// A cube geometry: the three coordinates are a direction.
    pub cube: bool,
    /// How the fetch picks a mipmap level.
    pub lod: TexLod,
}

/// How a `tex` picks its level of detail (read only for mipmapped textures).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TexLod {
    /// No operand (`tex`, `tex.base`): level of detail 0.
    Base,
    /// `tex.level`: the operand.
    Level(Src),
    /// `tex.grad`: the gradients of the coordinates along x and along y.
    Grad([Src; 3], [Src; 3]),
}

impl TexLod {
    /// The operands, in the order the compiler passes them: the level, then the x and y
    /// gradients (immediate 0 where the form has none).
    pub(crate) fn operands(&self) -> [Src; 7] {
        let z = Src::Imm(0);
        match *self {
            TexLod::Base => [z; 7],
            TexLod::Level(l) => [l, z, z, z, z, z, z],
            TexLod::Grad(x, y) => [z, x[0], x[1], x[2], y[0], y[1], y[2]],
        }
    }
}

/// An element type of a `wmma` fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WmmaTy {
    F16,
    Bf16,
    Tf32,
    F32,
    F64,
    S8,
    U8,
    S32,
    /// FP8 inputs of `mma.sync` (sm_89).
    E4m3,
    E5m2,
    /// 4-bit integers and single bits (`mma.sync` only).
    S4,
    U4,
    B1,
}

impl WmmaTy {
    pub(crate) fn parse(s: &str) -> Option<WmmaTy> {
        Some(match s {
            "f16" => WmmaTy::F16,
            "bf16" => WmmaTy::Bf16,
            "tf32" => WmmaTy::Tf32,
            "f32" => WmmaTy::F32,
            "f64" => WmmaTy::F64,
            "s8" => WmmaTy::S8,
            "u8" => WmmaTy::U8,
            "s32" => WmmaTy::S32,
            "e4m3" => WmmaTy::E4m3,
            "e5m2" => WmmaTy::E5m2,
            "s4" => WmmaTy::S4,
            "u4" => WmmaTy::U4,
            "b1" => WmmaTy::B1,
            _ => return None,
        })
    }

    /// Bytes of one element in memory (sub-byte types: 1; `wmma` does not take them).
    pub(crate) fn bytes(self) -> u32 {
        match self {
            WmmaTy::S8 | WmmaTy::U8 | WmmaTy::E4m3 | WmmaTy::E5m2 => 1,
            WmmaTy::S4 | WmmaTy::U4 | WmmaTy::B1 => 1,
            WmmaTy::F16 | WmmaTy::Bf16 => 2,
            WmmaTy::F64 => 8,
            _ => 4,
        }
    }

    /// Elements one fragment register holds.
    pub(crate) fn per_reg(self) -> u32 {
        match self {
            WmmaTy::B1 => 32,
            WmmaTy::S4 | WmmaTy::U4 => 8,
            WmmaTy::S8 | WmmaTy::U8 | WmmaTy::E4m3 | WmmaTy::E5m2 => 4,
            WmmaTy::F16 | WmmaTy::Bf16 => 2,
            _ => 1,
        }
    }
}

/// Which matrix a `wmma` fragment holds: `a` (M x K), `b` (K x N) or the accumulator `c`/`d`
/// (M x N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WmmaFrag {
    A,
    B,
    C,
}

/// Where a `wmma.load` or `wmma.store` finds its fragment's matrix in memory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WmmaMem {
    pub frag: WmmaFrag,
    /// Column-major in memory (`.col`).
    pub col: bool,
    pub shape: [u32; 3],
    pub ety: WmmaTy,
    pub space: Space,
    pub addr: Addr,
    /// The leading dimension in elements (default: the matrix's own).
    pub stride: Option<Src>,
}

/// `wmma.load`, `wmma.store` and `wmma.mma` (warp matrix multiply-accumulate). A fragment
/// holds its matrix in row-major order spread over the warp: lane `l` has elements
/// `l * E/32 ..`, packed into its registers (two halves or four bytes to a register);
/// registers beyond those repeat them. This is vcuda's own layout (CUDA leaves fragment
/// layouts unspecified): loads, stores, `mma` and element-wise code agree on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WmmaOp {
    Load {
        mem: WmmaMem,
        d: Vec<Reg>,
    },
    /// (Of an accumulator fragment.)
    Store {
        mem: WmmaMem,
        v: Vec<Src>,
    },
    Mma {
        shape: [u32; 3],
        /// Types of d, a, b and c.
        tys: [WmmaTy; 4],
        satfinite: bool,
        d: Vec<Reg>,
        a: Vec<Src>,
        b: Vec<Src>,
        c: Vec<Src>,
    },
}

/// The warp-level matrix instructions whose fragment layouts the PTX ISA fixes (section
/// 9.7.14.5): `mma.sync`, `ldmatrix`, `stmatrix` and `movmatrix`. Unlike `wmma`'s, code
/// knows which lane holds which element and computes on the registers directly (CUTLASS's
/// sm_80 GEMMs, flash attention), so the interpreter keeps NVIDIA's layouts exactly.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MmaOp {
    /// `mma.sync.aligned.shape.alayout.blayout[.satfinite].dtype.atype.btype.ctype`.
    Mma {
        shape: [u32; 3],
        /// Types of d, a, b and c.
        tys: [WmmaTy; 4],
        /// `.col` for A and `.row` for B: only the m8n8k4 `.f16` shape takes them.
        a_col: bool,
        b_row: bool,
        satfinite: bool,
        /// `.b1`: `.and.popc` (true) or `.xor.popc` (false).
        bit_and: bool,
        d: Vec<Reg>,
        a: Vec<Src>,
        b: Vec<Src>,
        c: Vec<Src>,
    },
    /// `ldmatrix.sync.aligned.m8n8.xN[.trans].b16`: `d.len()` 8x8 matrices of 16-bit
    /// elements, lane `8j + r` giving the address of row `r` of matrix `j`.
    Ldmatrix {
        trans: bool,
        space: Space,
        addr: Addr,
        d: Vec<Reg>,
    },
    /// `stmatrix.sync.aligned.m8n8.xN[.trans].b16`: the reverse.
    Stmatrix {
        trans: bool,
        space: Space,
        addr: Addr,
        v: Vec<Src>,
    },
    /// `movmatrix.sync.aligned.m8n8.trans.b16`: transposes an 8x8 matrix held as
    /// `ldmatrix` leaves it.
    Movmatrix { d: Reg, a: Src },
}

/// An unformatted surface load or store: `suld.b` / `sust.b`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SurfOp {
    pub store: bool,
    pub dims: u8,
    /// Bytes per element (1, 2, 4, 8).
    pub size: u8,
    /// Elements (1, 2, 4).
    pub n: u8,
    pub mode: SurfMode,
    /// Destinations of a load.
    pub d: [Reg; 4],
    /// Values of a store.
    pub v: [Src; 4],
    pub handle: Src,
    /// x in bytes, y and z in texels; in a layered access the layer index follows the
    /// `dims` coordinates (`coords[dims]`).
    pub coords: [Src; 3],
    /// A layered access (`a1d`, `a2d`): the surface's layer (or cube face, six per cube)
    /// `coords[dims]`, then the access within it.
    pub layered: bool,
}

/// What `txq` / `suq` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TexQuery {
    Width,
    Height,
    Depth,
    ChannelDataType,
    ChannelOrder,
    NormalizedCoords,
    FilterMode,
    AddrMode(u8),
    /// `txq.num_mipmap_levels`.
    MipmapLevels,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Alu {
        f: AluFn,
        ctx: AluCtx,
        /// The form the compiler emits inline, if any (else it calls `f`).
        native: Option<Native>,
        src: [Src; 4],
        nsrc: u8,
        dst: [Reg; 2],
        ndst: u8,
        /// Every result is at most 32 bits wide (stored zero-extended).
        narrow: bool,
    },
    Mov {
        d: Reg,
        a: Src,
        mask: u64,
    },
    /// `mov.b64 d, {a, b}`: `n` elements of `bits` each, first element lowest.
    Pack {
        d: Reg,
        srcs: [Src; 4],
        n: u8,
        bits: u8,
    },
    /// `mov.b64 {a, b}, s`.
    Unpack {
        ds: [Reg; 4],
        n: u8,
        bits: u8,
        a: Src,
    },
    Ld {
        space: Space,
        size: u8,
        sext: bool,
        n: u8,
        d: [Reg; 4],
        addr: Addr,
        /// `.volatile`: on shared memory, the mark of warp-synchronous code (lanes that read
        /// each other's writes without a barrier), which only lockstep execution runs right.
        volatile: bool,
    },
    St {
        space: Space,
        size: u8,
        n: u8,
        v: [Src; 4],
        addr: Addr,
        volatile: bool,
    },
    Atom {
        space: Space,
        op: AtomOp,
        size: u8,
        signed: bool,
        d: Reg,
        addr: Addr,
        b: Src,
        c: Src,
    },
    Cvta {
        to: bool,
        space: Space,
        d: Reg,
        a: Src,
        mask: u64,
    },
    Isspacep {
        space: Space,
        d: Reg,
        a: Src,
    },
    Bra {
        target: u32,
    },
    Brx {
        idx: Src,
        targets: Box<[u32]>,
    },
    /// A call of `func`, or through the function address in `target` (virtual functions).
    /// Arguments go to the callee's formal parameters by position; at `ret` the callee's return
    /// values are copied to the caller frame `(offset, size)`s in `rets`.
    Call {
        func: Option<u32>,
        target: Src,
        args: Box<[ArgCopy]>,
        rets: Box<[(u32, u32)]>,
    },
    Intrinsic {
        which: Intrinsic,
        args: Box<[ArgCopy]>,
        /// Caller frame offset of the return value, if any.
        ret: Option<u32>,
    },
    Ret,
    Exit,
    Trap,
    Brkpt,
    Bar {
        kind: BarKind,
        id: Src,
        count: Option<Src>,
        pred: Src,
        d: Reg,
    },
    Shfl {
        mode: ShflMode,
        d: Reg,
        p: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `vote{.sync}`: `members` is the `.sync` form's membermask (each lane votes with the
    /// lanes of its own mask).
    Vote {
        mode: VoteMode,
        d: Reg,
        a: Src,
        members: Option<Src>,
    },
    /// `match.sync`: each lane matches among the lanes of its membermask.
    Match {
        all: bool,
        d: Reg,
        p: Reg,
        a: Src,
        mask64: bool,
        members: Src,
    },
    /// `redux.sync`: each lane reduces over the lanes of its membermask.
    Redux {
        op: ReduxOp,
        signed: bool,
        d: Reg,
        a: Src,
        members: Src,
    },
    Activemask {
        d: Reg,
    },
    /// `cp.async` global -> shared, performed synchronously: `size` bytes, of which those past
    /// `src_size` are zero.
    CpAsync {
        dst: Addr,
        src: Addr,
        size: u8,
        src_size: Option<Src>,
    },
    Elect {
        d: Reg,
        p: Reg,
    },
    /// `barrier.cluster.arrive` (`wait: false`) or `barrier.cluster.wait`: every thread of
    /// the cluster (see `crate::cluster`).
    ClusterBar {
        wait: bool,
    },
    /// `mapa`: the address of `a`'s offset in the shared memory of the cluster's block
    /// `rank` (a generic address when `generic`, else a `.shared::cluster` one).
    Mapa {
        d: Reg,
        a: Src,
        rank: Src,
        generic: bool,
    },
    /// `getctarank`: the rank of the cluster's block whose shared memory `a` is in.
    GetCtaRank {
        d: Reg,
        a: Src,
        generic: bool,
    },
    /// An `mbarrier` operation on the 64-bit barrier object at `addr` (see
    /// [`MbarOp`] and `exec::step`'s `mbarrier` for the object's layout).
    Mbar {
        op: MbarOp,
        space: Space,
        d: Reg,
        addr: Addr,
        a: Src,
    },
    /// `cp.async.bulk` and `cp.async.bulk.tensor`, performed at once (see [`BulkOp`]).
    Bulk(Box<BulkOp>),
    /// `tensormap.replace`: stores `a` into `field` (of dimension `ord`) of the tensor map at
    /// `addr` (see [`crate::tensormap::replace_slot`]).
    TensormapReplace {
        field: crate::tensormap::Field,
        space: Space,
        addr: Addr,
        ord: Src,
        a: Src,
    },
    Fence,
    Nop,
    /// `nanosleep`: the thread waits a little; here it gives its core to another thread
    /// (blocks of a cooperative launch spinning at a grid barrier let the others arrive).
    Yield,
    Tex(Box<TexOp>),
    /// Warp matrix multiply-accumulate (interpreted).
    Wmma(Box<WmmaOp>),
    /// `mma.sync`, `ldmatrix`, `stmatrix`, `movmatrix` (interpreted).
    Mma(Box<MmaOp>),
    Surf(Box<SurfOp>),
    /// `txq` (`surface` false) or `suq`.
    TexQuery {
        surface: bool,
        what: TexQuery,
        d: Reg,
        handle: Src,
    },
    Unsupported(Box<str>),
}

/// A bulk copy. The copy is done when the instruction completes: an mbarrier named by the
/// instruction gets its bytes as completed transactions at once, and `commit_group` and
/// `wait_group` have nothing to wait for.
#[derive(Debug, Clone)]
pub(crate) enum BulkOp {
    /// `cp.async.bulk`: `size` bytes (a multiple of 16, both addresses 16-byte aligned) from
    /// `src` to `dst`.
    Copy {
        dst: (Space, Addr),
        src: (Space, Addr),
        size: Src,
        mbar: Option<Addr>,
    },
    /// `cp.async.bulk.tensor` from global to shared memory: the box at `coords` of the tensor
    /// the map at `map` describes, to `smem`; its bytes complete transactions on `mbar`.
    TensorLoad {
        smem: Addr,
        map: (Space, Addr),
        coords: Box<[Src]>,
        mbar: Addr,
    },
    /// `cp.async.bulk.tensor` from shared to global memory: the box at `smem` to the
    /// in-bounds elements of the box at `coords`.
    TensorStore {
        map: (Space, Addr),
        coords: Box<[Src]>,
        smem: Addr,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Inst {
    pub op: Op,
    /// `@%p` / `@!%p`.
    pub guard: Option<(Reg, bool)>,
    pub line: u32,
}
