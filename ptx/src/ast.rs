// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The syntax tree the parser produces; `module/lower.rs` lowers it to the executable form.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linkage {
    None,
    Visible,
    Extern,
    Weak,
    Common,
}

/// A variable declaration (`.reg`, `.global`, `.shared`, ...), possibly naming several variables.
#[derive(Debug, Clone)]
pub(crate) struct VarDecl<'a> {
    pub pos: Pos,
    pub linkage: Linkage,
    pub space: &'a str,
    pub align: Option<u64>,
    pub vec: u32,
    pub ty: &'a str,
    pub names: Vec<DeclName<'a>>,
    /// `.attribute(.managed)`: a `__managed__` variable.
    pub managed: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct DeclName<'a> {
    pub pos: Pos,
    pub name: &'a str,
    /// `%r<N>`: declares `%r0` .. `%r{N-1}`.
    pub range: Option<u32>,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    pub init: Option<Init<'a>>,
}

#[derive(Debug, Clone)]
pub(crate) enum Init<'a> {
    List(Vec<Init<'a>>),
    Value(Value<'a>),
}

/// A literal or address in an initializer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Int(u64),
    F32(u32),
    F64(u64),
    Float(f64),
    /// `sym`, `sym+4`, `generic(sym)+4`.
    Addr {
        name: &'a str,
        offset: i64,
        pos: Pos,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct ParamDecl<'a> {
    pub pos: Pos,
    pub space: &'a str,
    pub align: Option<u64>,
    pub vec: u32,
    pub ty: &'a str,
    pub name: &'a str,
    /// `name[N]`; `Some(0)` for `name[]`.
    pub array: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Perf {
    pub maxntid: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    pub minnctapersm: Option<u32>,
    pub maxnreg: Option<u32>,
    /// `.reqnctapercluster`: the kernel's compile-time cluster shape.
    pub reqnctapercluster: Option<[u32; 3]>,
    /// `.explicitcluster`: the kernel must be launched with a cluster shape.
    pub explicitcluster: bool,
    /// `.maxclusterrank`: most blocks in a cluster.
    pub maxclusterrank: Option<u32>,
}

#[derive(Debug, Clone)]
pub(crate) struct FuncDecl<'a> {
    pub pos: Pos,
    pub linkage: Linkage,
    pub is_entry: bool,
    pub name: &'a str,
    pub rets: Vec<ParamDecl<'a>>,
    pub params: Vec<ParamDecl<'a>>,
    pub perf: Perf,
    pub body: Option<Vec<Stmt<'a>>>,
}

#[derive(Debug, Clone)]
pub(crate) enum Stmt<'a> {
    Decl(VarDecl<'a>),
    Label(&'a str, Pos),
    Inst(Inst<'a>),
    Block(Vec<Stmt<'a>>),
    /// `.branchtargets a, b, c;` (follows its label).
    BranchTargets(Vec<(&'a str, Pos)>),
}

#[derive(Debug, Clone)]
pub(crate) struct Inst<'a> {
    pub pos: Pos,
    pub guard: Option<(&'a str, bool, Pos)>,
    pub op: &'a str,
    pub mods: Vec<&'a str>,
    pub args: Vec<Operand<'a>>,
}

#[derive(Debug, Clone)]
pub(crate) enum Operand<'a> {
    /// A register, special register (with `.x` component) or symbol, plus a constant offset.
    Name {
        name: &'a str,
        comp: Option<&'a str>,
        offset: i64,
        pos: Pos,
    },
    Imm(Value<'a>),
    /// `!%p`.
    Not(Box<Operand<'a>>),
    /// `[base+offset]`; anything more complex is `Bracket`.
    Addr(Box<Operand<'a>>),
    /// `[a, {x, y}]` (texture and surface operands) or any other bracketed list.
    Bracket(Vec<Operand<'a>>),
    /// `{a, b}`.
    Vec(Vec<Operand<'a>>),
    /// `(a, b)` in `call`.
    List(Vec<Operand<'a>>),
    /// `d|p`.
    Pair(Box<Operand<'a>>, Box<Operand<'a>>),
    /// `_`.
    Sink,
}

#[derive(Debug, Clone)]
pub(crate) enum Item<'a> {
    Var(VarDecl<'a>),
    Func(FuncDecl<'a>),
    /// `.alias a, b;`
    Alias(&'a str, &'a str, Pos),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct AstModule<'a> {
    pub version: Option<f64>,
    pub target: Vec<&'a str>,
    pub address_size: Option<u64>,
    pub items: Vec<Item<'a>>,
}
