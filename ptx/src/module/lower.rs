// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Lowering a parsed module into a [`Module`]: module-scope variables, their initializers and
//! relocations, shared-memory and parameter layout, function signatures and bodies (blocks,
//! labels, branch fixups, function-scope declarations), and the per-kernel totals (static
//! shared memory, local memory).

use std::collections::HashMap;

use super::{
    defs::{
        Func, GlobalId, GlobalInfo, GlobalSpace, KernelInfo, MAX_CODE, Module, ParamInfo, Reloc,
        RelocTarget, Sym,
    },
    layout::{align_up, perr, type_of, var_layout},
    scope::{FnState, Local, Scope},
};
use crate::{
    ast::{self, Init, Item, Linkage, Pos, Stmt, Value},
    error::ParseError,
    float::{f32_to_bf16, f32_to_f16},
    ir::*,
    types::Ty,
};

/// What a module-scope name refers to.
#[derive(Debug, Clone, Copy)]
pub(super) enum ModSym {
    Var(u32),
    Func(u32),
}

/// The state of lowering one module.
pub(super) struct Lower<'a> {
    pub(super) code: Vec<Inst>,
    pub(super) funcs: Vec<Func>,
    pub(super) func_names: HashMap<&'a str, u32>,
    pub(super) kernels: Vec<KernelInfo>,
    pub(super) globals: Vec<GlobalInfo>,
    pub(super) syms: Vec<Sym>,
    pub(super) modsyms: HashMap<&'a str, ModSym>,
    /// Size and alignment of each module-scope shared variable, by symbol index.
    pub(super) shared_vars: HashMap<u32, (u64, u64)>,
    pub(super) dyn_align: u64,
    pub(super) addr_taken: Vec<u32>,
}

/// Why an instruction was not decoded: a parse error fails the module; an unsupported
/// instruction becomes [`Op::Unsupported`] and fails the launch only when executed.
pub(super) enum DErr {
    Parse(ParseError),
    Unsupported(String),
}

impl From<ParseError> for DErr {
    fn from(e: ParseError) -> Self {
        DErr::Parse(e)
    }
}

pub(super) type DResult<T> = Result<T, DErr>;

pub(super) fn unsup<T>(what: impl Into<String>) -> DResult<T> {
    Err(DErr::Unsupported(what.into()))
}

/// The module-scope names a unit declares with external linkage.
fn external_names<'a>(ast: &ast::AstModule<'a>) -> std::collections::HashSet<&'a str> {
    let mut out = std::collections::HashSet::new();
    for item in &ast.items {
        match item {
            Item::Var(d) if d.linkage != Linkage::None => {
                out.extend(d.names.iter().map(|n| n.name));
            }
            Item::Func(f) if f.linkage != Linkage::None => {
                out.insert(f.name);
            }
            _ => {}
        }
    }
    out
}

/// Converts a literal to the bit pattern of `ty`.
pub(super) fn imm_bits(v: Value<'_>, ty: Ty) -> u64 {
    let from_f64 = |f: f64| match ty {
        Ty::F32 => (f as f32).to_bits() as u64,
        Ty::F16 => f32_to_f16(f as f32) as u64,
        Ty::BF16 => f32_to_bf16(f as f32) as u64,
        Ty::F64 => f.to_bits(),
        t => (f as i64) as u64 & t.mask(),
    };
    match v {
        Value::Int(i) => match ty {
            Ty::F32 | Ty::F64 | Ty::F16 | Ty::BF16 => from_f64(i as i64 as f64),
            Ty::Pred => (i != 0) as u64,
            t => i & t.mask(),
        },
        Value::F32(b) => match ty {
            Ty::F64 | Ty::F16 | Ty::BF16 => from_f64(f32::from_bits(b) as f64),
            _ => b as u64,
        },
        Value::F64(b) => match ty {
            Ty::F32 | Ty::F16 | Ty::BF16 => from_f64(f64::from_bits(b)),
            _ => b,
        },
        Value::Float(f) => from_f64(f),
        Value::Addr { .. } => 0,
    }
}

impl<'a> Lower<'a> {
    pub(super) fn lower(ast: ast::AstModule<'a>) -> Result<Module, ParseError> {
        Self::link(vec![ast])
    }

    /// Lowers one or more translation units into one module, as `nvlink` links the
    /// relocatable device code of a program (`-rdc`): names with external linkage
    /// (`.visible`, `.extern`, `.weak`, `.common`) are shared by every unit, an `.extern`
    /// declaration resolves to the definition in whichever unit has it, a `.weak` function
    /// defined in several units keeps its first definition, and names without linkage stay
    /// private to their unit (two units may each have their own).
    pub(super) fn link(units: Vec<ast::AstModule<'a>>) -> Result<Module, ParseError> {
        let mut l = Lower {
            code: Vec::new(),
            funcs: Vec::new(),
            func_names: HashMap::new(),
            kernels: Vec::new(),
            globals: Vec::new(),
            syms: Vec::new(),
            modsyms: HashMap::new(),
            shared_vars: HashMap::new(),
            dyn_align: 16,
            addr_taken: Vec::new(),
        };
        // Names with external linkage, shared by every unit.
        let mut shared_syms: HashMap<&'a str, ModSym> = HashMap::new();
        let mut shared_funcs: HashMap<&'a str, u32> = HashMap::new();
        // Each unit's view: its private names and the shared ones it declares.
        let mut scopes = Vec::with_capacity(units.len());
        // Pass 1: module-scope variables and function signatures.
        for ast in &units {
            let external = external_names(ast);
            // The shared names this unit declares (linear in the unit's own names).
            l.modsyms = external
                .iter()
                .filter_map(|n| shared_syms.get(n).map(|s| (*n, *s)))
                .collect();
            l.func_names = external
                .iter()
                .filter_map(|n| shared_funcs.get(n).map(|f| (*n, *f)))
                .collect();
            for item in &ast.items {
                match item {
                    Item::Var(d) => l.module_var(d)?,
                    Item::Func(f) => l.declare_func(f)?,
                    Item::Alias(..) => {}
                }
            }
            for item in &ast.items {
                if let Item::Alias(a, b, pos) = item {
                    let target = *l
                        .modsyms
                        .get(b)
                        .ok_or_else(|| perr(*pos, format!("a declared function `{b}`")))?;
                    l.modsyms.insert(a, target);
                    if let ModSym::Func(f) = target {
                        l.func_names.insert(a, f);
                    }
                }
            }
            for name in &external {
                if let Some(s) = l.modsyms.get(name) {
                    shared_syms.insert(name, *s);
                }
                if let Some(f) = l.func_names.get(name) {
                    shared_funcs.insert(name, *f);
                }
            }
            scopes.push((
                std::mem::take(&mut l.modsyms),
                std::mem::take(&mut l.func_names),
            ));
        }
        // Pass 2: initializers (may reference any variable or function).
        for (ast, scope) in units.iter().zip(&mut scopes) {
            l.modsyms = std::mem::take(&mut scope.0);
            for item in &ast.items {
                if let Item::Var(d) = item {
                    l.initializers(d)?;
                }
            }
            scope.0 = std::mem::take(&mut l.modsyms);
        }
        // Pass 3: bodies, strong definitions first: a `.weak` function is defined by the
        // first unit that has it, unless some unit defines it strongly (as `nvlink` picks).
        for weak in [false, true] {
            for (ast, scope) in units.iter().zip(&mut scopes) {
                l.modsyms = std::mem::take(&mut scope.0);
                l.func_names = std::mem::take(&mut scope.1);
                for item in &ast.items {
                    if let Item::Func(f) = item
                        && f.body.is_some()
                        && (f.linkage == Linkage::Weak) == weak
                    {
                        l.define_func(f)?;
                    }
                }
                scope.0 = std::mem::take(&mut l.modsyms);
                scope.1 = std::mem::take(&mut l.func_names);
            }
        }
        for inst in &mut l.code {
            if let Op::Call {
                func: Some(func), ..
            } = inst.op
            {
                let f = &l.funcs[func as usize];
                if !f.defined {
                    inst.op = Op::Unsupported(
                        format!("call of external function `{}`", f.name).into_boxed_str(),
                    );
                }
            }
        }
        let mut addr_taken: Vec<u32> = l
            .syms
            .iter()
            .filter_map(|s| if let Sym::Func(f) = s { Some(*f) } else { None })
            .chain(l.globals.iter().flat_map(|g| {
                g.relocs.iter().filter_map(|r| match r.target {
                    RelocTarget::Function(f) => Some(f),
                    RelocTarget::Global(_) => None,
                })
            }))
            .filter(|&f| {
                l.funcs
                    .get(f as usize)
                    .is_some_and(|f| f.defined && !f.is_kernel)
            })
            .collect();
        addr_taken.sort_unstable();
        addr_taken.dedup();
        l.addr_taken = addr_taken.clone();
        l.finish_kernels();
        Ok(Module {
            addr_taken,
            code: l.code,
            funcs: l.funcs,
            kernels: l.kernels,
            globals: l.globals,
            syms: l.syms,
            version: units.iter().filter_map(|u| u.version).reduce(f64::max),
            target: units
                .first()
                .map(|u| u.target.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
            jit: Default::default(),
        })
    }

    pub(super) fn add_sym(&mut self, s: Sym) -> u32 {
        self.syms.push(s);
        (self.syms.len() - 1) as u32
    }

    /// A module-scope shared variable's symbol (laid out per kernel by `finish_kernels`).
    pub(super) fn add_shared(
        &mut self,
        size: u64,
        align: u64,
        pos: Pos,
    ) -> Result<u32, ParseError> {
        if size > u64::from(u32::MAX) {
            return Err(perr(pos, "less shared memory"));
        }
        let s = self.add_sym(Sym::SharedModule);
        self.shared_vars.insert(s, (size, align));
        Ok(s)
    }

    fn module_var(&mut self, d: &ast::VarDecl<'a>) -> Result<(), ParseError> {
        for n in &d.names {
            let init_len = n.init.as_ref().map(|i| count_init(i) as u64);
            let elem_ty = Ty::parse(d.ty).map_or(8, |t| t.size() as u64);
            let (size, align, _) = var_layout(
                d.ty,
                d.vec,
                &n.dims,
                d.align,
                init_len.map(|c| c * elem_ty),
                n.pos,
            )?;
            let sym = match d.space {
                "global" | "const" => {
                    if let Some(ModSym::Var(s)) = self.modsyms.get(n.name) {
                        // A re-declaration (e.g. `.extern` then definition): keep the first.
                        if let Sym::Global(g) = self.syms[*s as usize] {
                            let gi = &mut self.globals[g.0 as usize];
                            let strong = |l| matches!(l, Linkage::Visible | Linkage::None);
                            if strong(d.linkage) && gi.visible {
                                // Two strong definitions (in one unit or two).
                                return Err(perr(
                                    n.pos,
                                    format!("a single definition of `{}`", n.name),
                                ));
                            }
                            gi.is_extern &= d.linkage == Linkage::Extern;
                            gi.visible |= d.linkage == Linkage::Visible;
                            gi.size = gi.size.max(size);
                        }
                        continue;
                    }
                    let id = GlobalId(self.globals.len() as u32);
                    self.globals.push(GlobalInfo {
                        name: n.name.to_string(),
                        space: if d.space == "global" {
                            GlobalSpace::Global
                        } else {
                            GlobalSpace::Const
                        },
                        size,
                        align: align as u32,
                        init: Vec::new(),
                        relocs: Vec::new(),
                        is_extern: d.linkage == Linkage::Extern,
                        visible: d.linkage == Linkage::Visible,
                        managed: d.managed,
                    });
                    Sym::Global(id)
                }
                "shared" => {
                    if d.linkage == Linkage::Extern || n.dims.first() == Some(&None) {
                        self.dyn_align = self.dyn_align.max(align);
                        Sym::SharedDynamic
                    } else {
                        let s = self.add_shared(size, align, n.pos)?;
                        self.modsyms.insert(n.name, ModSym::Var(s));
                        continue;
                    }
                }
                // .tex/.local at module scope and others: not addressable here.
                _ => continue,
            };
            let s = self.add_sym(sym);
            self.modsyms.insert(n.name, ModSym::Var(s));
        }
        Ok(())
    }

    fn initializers(&mut self, d: &ast::VarDecl<'a>) -> Result<(), ParseError> {
        if !matches!(d.space, "global" | "const") {
            return Ok(());
        }
        for n in &d.names {
            let Some(init) = &n.init else { continue };
            let Some(ModSym::Var(s)) = self.modsyms.get(n.name).copied() else {
                continue;
            };
            let Sym::Global(g) = self.syms[s as usize] else {
                continue;
            };
            let ty = type_of(d.ty, d.pos)?;
            let mut vals = Vec::new();
            flatten_init(init, &mut vals);
            let es = ty.size() as u64;
            let mut relocs = Vec::new();
            let size = self.globals[g.0 as usize].size;
            if vals.len() as u64 * es > size {
                return Err(perr(n.pos, "no more initializers than elements"));
            }
            let mut bytes = vec![0u8; vals.len() * es as usize];
            for (k, v) in vals.iter().enumerate() {
                let off = k as u64 * es;
                match *v {
                    Value::Addr {
                        name, offset, pos, ..
                    } => {
                        let target = match self.modsyms.get(name) {
                            Some(ModSym::Var(s)) => match self.syms[*s as usize] {
                                Sym::Global(t) => RelocTarget::Global(t),
                                _ => return Err(perr(pos, "a global or function symbol")),
                            },
                            Some(ModSym::Func(f)) => RelocTarget::Function(*f),
                            None => return Err(perr(pos, format!("a declared symbol `{name}`"))),
                        };
                        relocs.push(Reloc {
                            offset: off,
                            size: es as u32,
                            target,
                            addend: offset,
                        });
                    }
                    v => {
                        let b = imm_bits(v, ty).to_le_bytes();
                        bytes[off as usize..(off + es) as usize].copy_from_slice(&b[..es as usize]);
                    }
                }
            }
            let gi = &mut self.globals[g.0 as usize];
            gi.init = bytes;
            gi.relocs = relocs;
        }
        Ok(())
    }

    /// Lays out `.param` declarations from `offset`: returns (offset, size) of each and the end.
    fn layout_params(
        ps: &[ast::ParamDecl<'a>],
        mut offset: u64,
    ) -> Result<(Vec<ParamInfo>, u64), ParseError> {
        let mut out = Vec::new();
        for p in ps {
            let dims = p.array.map(|n| vec![Some(n)]).unwrap_or_default();
            let (size, align, _) = var_layout(p.ty, p.vec, &dims, p.align, None, p.pos)?;
            offset = align_up(offset, align);
            out.push(ParamInfo {
                offset: offset as u32,
                size: size as u32,
                align: align as u32,
            });
            offset = offset
                .checked_add(size)
                .filter(|e| *e <= u32::MAX as u64 / 2)
                .ok_or_else(|| perr(p.pos, "smaller parameters"))?;
        }
        Ok((out, offset))
    }

    fn declare_func(&mut self, f: &ast::FuncDecl<'a>) -> Result<(), ParseError> {
        if self.func_names.contains_key(f.name) {
            return Ok(());
        }
        let (params, rets, end) = if f.is_entry {
            let (p, _) = Self::layout_params(&f.params, 0)?;
            (p, Vec::new(), 0)
        } else {
            let (r, e) = Self::layout_params(&f.rets, 0)?;
            let (p, e) = Self::layout_params(&f.params, e)?;
            (p, r, e)
        };
        let intrinsic = match f.name {
            "vprintf" => Some(Intrinsic::Vprintf),
            "__assertfail" => Some(Intrinsic::AssertFail),
            "malloc" if !f.is_entry => Some(Intrinsic::Malloc),
            "free" if !f.is_entry => Some(Intrinsic::Free),
            _ => None,
        };
        let idx = self.funcs.len() as u32;
        self.funcs.push(Func {
            name: f.name.to_string(),
            entry: 0,
            nregs: 0,
            declared_regs: 0,
            frame_size: end as u32,
            is_kernel: f.is_entry,
            defined: false,
            intrinsic,
            params: params.iter().map(|p| (p.offset, p.size)).collect(),
            rets: rets.iter().map(|p| (p.offset, p.size)).collect(),
            callees: Vec::new(),
            module_shared: Vec::new(),
            indirect_calls: false,
            warp_sync: false,
        });
        self.func_names.insert(f.name, idx);
        self.modsyms.insert(f.name, ModSym::Func(idx));
        if f.is_entry {
            let param_size = params.last().map_or(0, |p| p.offset + p.size);
            self.kernels.push(KernelInfo {
                name: f.name.to_string(),
                params,
                param_size,
                static_shared: 0,
                local_bytes: 0,
                reqntid: f.perf.reqntid,
                maxntid: f.perf.maxntid,
                minnctapersm: f.perf.minnctapersm,
                maxnreg: f.perf.maxnreg,
                reqnctapercluster: f.perf.reqnctapercluster,
                explicit_cluster: f.perf.explicitcluster,
                maxclusterrank: f.perf.maxclusterrank,
                func: idx,
                shared_base: 0,
                dyn_align: 16,
                module_shared: Vec::new(),
            });
        }
        Ok(())
    }

    fn define_func(&mut self, f: &ast::FuncDecl<'a>) -> Result<(), ParseError> {
        let idx = self.func_names[f.name];
        if self.funcs[idx as usize].defined {
            if f.linkage == Linkage::Weak {
                // Another unit's definition of the same weak function (an inline function
                // or template instance every unit that uses it carries) wins.
                return Ok(());
            }
            return Err(perr(f.pos, format!("a single definition of `{}`", f.name)));
        }
        let mut st = FnState {
            is_kernel: f.is_entry,
            scopes: vec![Scope::default()],
            next_decl: 0,
            reg_of_decl: HashMap::new(),
            decl_ty: HashMap::new(),
            nregs: 0,
            cc: None,
            frame: self.funcs[idx as usize].frame_size as u64,
            frame_max: self.funcs[idx as usize].frame_size as u64,
            labels: Vec::new(),
            tables: Vec::new(),
            fixups: Vec::new(),
            kernel_shared: 0,
            pending_label: None,
            callees: Vec::new(),
            module_shared: Vec::new(),
            indirect_calls: false,
            warp_sync: false,
            frame_sizes: HashMap::new(),
        };
        // Parameters are visible by name.
        if f.is_entry {
            let params = self
                .kernels
                .iter()
                .find(|k| k.func == idx)
                .map(|k| k.params.clone());
            for (p, info) in f.params.iter().zip(params.unwrap_or_default()) {
                st.scopes[0]
                    .names
                    .insert(p.name, Local::KParam(info.offset));
            }
        } else {
            let func = &self.funcs[idx as usize];
            for (p, (off, _)) in f.rets.iter().zip(func.rets.clone()) {
                st.scopes[0].names.insert(p.name, Local::Frame(off));
            }
            for (p, (off, _)) in f.params.iter().zip(func.params.clone()) {
                if p.space == "reg" {
                    let ty = type_of(p.ty, p.pos)?;
                    let d = st.new_decl(ty);
                    st.scopes[0].names.insert(p.name, Local::Reg(d));
                } else {
                    st.scopes[0].names.insert(p.name, Local::Frame(off));
                }
            }
        }
        let entry = self.code.len() as u32;
        let body = f.body.as_deref().unwrap_or(&[]);
        let reserved: Vec<&str> = f.params.iter().chain(&f.rets).map(|p| p.name).collect();
        let fused = super::contract::contract(body, &reserved);
        self.block(&mut st, fused.as_deref().unwrap_or(body), false)?;
        // Falling off the end returns.
        self.push(Inst {
            op: Op::Ret,
            guard: None,
            line: 0,
        })?;
        for (at, ids) in std::mem::take(&mut st.fixups) {
            let pcs = ids
                .iter()
                .map(|&id| st.labels.get(id as usize).copied().flatten())
                .collect::<Option<Vec<u32>>>();
            let line = self.code[at].line;
            let Some(pcs) = pcs else {
                return Err(perr(Pos { line, col: 1 }, "a defined label"));
            };
            match &mut self.code[at].op {
                Op::Bra { target } => *target = pcs[0],
                Op::Brx { targets, .. } => *targets = pcs.into_boxed_slice(),
                _ => {}
            }
        }
        let func = &mut self.funcs[idx as usize];
        func.entry = entry;
        func.nregs = st.nregs;
        func.declared_regs = st.next_decl;
        func.frame_size = align_up(st.frame_max.max(st.frame), 16).min(u32::MAX as u64) as u32;
        func.defined = true;
        func.callees = st.callees;
        let mut shared = st.module_shared;
        shared.sort_unstable();
        shared.dedup();
        func.module_shared = shared;
        func.indirect_calls = st.indirect_calls;
        func.warp_sync = st.warp_sync;
        if f.is_entry
            && let Some(k) = self.kernels.iter_mut().find(|k| k.func == idx)
        {
            k.static_shared = st.kernel_shared as u32;
        }
        Ok(())
    }

    fn push(&mut self, i: Inst) -> Result<(), ParseError> {
        if self.code.len() >= MAX_CODE {
            return Err(perr(Pos::default(), "a smaller module"));
        }
        self.code.push(i);
        Ok(())
    }

    fn block(
        &mut self,
        st: &mut FnState<'a>,
        stmts: &[Stmt<'a>],
        nested: bool,
    ) -> Result<(), ParseError> {
        // Frame space of a block's `.local`/`.param` variables is reused after the block.
        let frame_at_entry = st.frame;
        if nested {
            st.scopes.push(Scope::default());
        }
        // Labels are visible in their whole block.
        for s in stmts {
            if let Stmt::Label(name, pos) = s {
                let id = st.labels.len() as u32;
                st.labels.push(None);
                if let Some(sc) = st.scopes.last_mut()
                    && let Some(Local::Label(_)) = sc.names.insert(name, Local::Label(id))
                {
                    return Err(perr(
                        *pos,
                        format!("a unique label, `{name}` is defined twice"),
                    ));
                }
            }
        }
        for s in stmts {
            match s {
                Stmt::Decl(d) => self.local_decl(st, d)?,
                Stmt::Label(name, _) => {
                    if let Some(Local::Label(id)) = st.lookup(name)
                        && let Some(slot) = st.labels.get_mut(id as usize)
                    {
                        *slot = Some(self.code.len() as u32);
                    }
                    st.pending_label = Some(name);
                    continue;
                }
                Stmt::BranchTargets(list) => {
                    let mut ids = Vec::new();
                    for (name, pos) in list {
                        match st.lookup(name) {
                            Some(Local::Label(id)) => ids.push(id),
                            _ => return Err(perr(*pos, format!("a label `{name}`"))),
                        }
                    }
                    let t = st.tables.len() as u32;
                    st.tables.push(ids);
                    if let Some(l) = st.pending_label {
                        st.scopes
                            .last_mut()
                            .map(|sc| sc.names.insert(l, Local::Table(t)));
                    }
                }
                Stmt::Inst(i) => {
                    let line = i.pos.line;
                    let guard = match i.guard {
                        Some((g, neg, pos)) => Some((st.reg(g, pos)?, neg)),
                        None => None,
                    };
                    let op = match self.inst(st, i) {
                        Ok(op) => op,
                        Err(DErr::Parse(e)) => return Err(e),
                        Err(DErr::Unsupported(what)) => {
                            let mut text = i.op.to_string();
                            for m in &i.mods {
                                text.push('.');
                                text.push_str(m);
                            }
                            if !what.is_empty() {
                                text.push_str(&format!(" ({what})"));
                            }
                            Op::Unsupported(text.into_boxed_str())
                        }
                    };
                    self.push(Inst { op, guard, line })?;
                }
                Stmt::Block(b) => self.block(st, b, true)?,
            }
            st.pending_label = None;
        }
        if nested {
            st.scopes.pop();
            st.frame_max = st.frame_max.max(st.frame);
            st.frame = frame_at_entry;
        }
        Ok(())
    }

    fn finish_kernels(&mut self) {
        let nf = self.funcs.len();
        for k in 0..self.kernels.len() {
            let root = self.kernels[k].func as usize;
            let mut seen = vec![false; nf];
            let mut stack = vec![root];
            let mut used = std::collections::BTreeSet::new();
            while let Some(f) = stack.pop() {
                if std::mem::replace(&mut seen[f], true) {
                    continue;
                }
                used.extend(self.funcs[f].module_shared.iter().copied());
                stack.extend(self.funcs[f].callees.iter().map(|&c| c as usize));
                if self.funcs[f].indirect_calls {
                    stack.extend(self.addr_taken.iter().map(|&c| c as usize));
                }
            }
            let local = (self.funcs[root].frame_size as u64).saturating_add(self.max_chain(
                root,
                &mut vec![0; nf],
                &mut vec![0; nf],
            ));
            // The variables it uses, in declaration order, each at its alignment.
            let mut end = 0u64;
            let mut layout = Vec::with_capacity(used.len());
            for s in used {
                let (size, align) = self.shared_vars.get(&s).copied().unwrap_or((0, 1));
                let off = align_up(end, align);
                end = off.saturating_add(size);
                layout.push((s, off.min(u64::from(u32::MAX)) as u32));
            }
            let kernel = &mut self.kernels[k];
            let base = if layout.is_empty() {
                0
            } else {
                align_up(end, 16).min(u64::from(u32::MAX))
            };
            kernel.module_shared = layout;
            kernel.shared_base = base as u32;
            kernel.static_shared = (base + kernel.static_shared as u64).min(u32::MAX as u64) as u32;
            kernel.local_bytes = local.min(u32::MAX as u64) as u32;
            kernel.dyn_align = self.dyn_align as u32;
        }
    }

    /// Deepest frame sum over call chains below `f` (memoized; recursion is cut).
    fn max_chain(&self, f: usize, state: &mut Vec<u8>, memo: &mut Vec<u64>) -> u64 {
        match state[f] {
            1 => return 0,
            2 => return memo[f],
            _ => {}
        }
        state[f] = 1;
        let mut best = 0;
        for &c in &self.funcs[f].callees {
            let c = c as usize;
            let d =
                (self.funcs[c].frame_size as u64).saturating_add(self.max_chain(c, state, memo));
            best = best.max(d);
        }
        state[f] = 2;
        memo[f] = best;
        best
    }
}

fn count_init(i: &Init<'_>) -> usize {
    match i {
        Init::List(v) => v.iter().map(count_init).sum(),
        Init::Value(_) => 1,
    }
}

fn flatten_init<'a>(i: &Init<'a>, out: &mut Vec<Value<'a>>) {
    match i {
        Init::List(v) => v.iter().for_each(|x| flatten_init(x, out)),
        Init::Value(v) => out.push(*v),
    }
}

impl<'a> Lower<'a> {
    pub(super) fn local_decl(
        &mut self,
        st: &mut FnState<'a>,
        d: &ast::VarDecl<'a>,
    ) -> Result<(), ParseError> {
        for n in &d.names {
            let local = match d.space {
                "reg" => {
                    if d.vec != 1 {
                        return Err(perr(
                            d.pos,
                            "a scalar register (vector registers are not supported)",
                        ));
                    }
                    let ty = type_of(d.ty, d.pos)?;
                    if let Some(count) = n.range {
                        let first = st.next_decl;
                        st.next_decl = st
                            .next_decl
                            .checked_add(count)
                            .ok_or_else(|| perr(n.pos, "fewer registers"))?;
                        if let Some(sc) = st.scopes.last_mut() {
                            sc.ranges.push((n.name, Local::Range(first, count)));
                        }
                        continue;
                    }
                    Local::Reg(st.new_decl(ty))
                }
                "local" | "param" => {
                    let (size, align, _) = var_layout(d.ty, d.vec, &n.dims, d.align, None, n.pos)?;
                    let off = align_up(st.frame, align);
                    st.frame = off
                        .checked_add(size)
                        .filter(|e| *e <= u32::MAX as u64 / 2)
                        .ok_or_else(|| perr(n.pos, "a smaller frame"))?;
                    st.frame_max = st.frame_max.max(st.frame);
                    st.frame_sizes.insert(n.name, size as u32);
                    Local::Frame(off as u32)
                }
                "shared" => {
                    let (size, align, _) = var_layout(d.ty, d.vec, &n.dims, d.align, None, n.pos)?;
                    let s = if d.linkage == Linkage::Extern || n.dims.first() == Some(&None) {
                        self.dyn_align = self.dyn_align.max(align);
                        self.add_sym(Sym::SharedDynamic)
                    } else if st.is_kernel {
                        let off = align_up(st.kernel_shared, align);
                        st.kernel_shared = off
                            .checked_add(size)
                            .filter(|e| *e <= u32::MAX as u64)
                            .ok_or_else(|| perr(n.pos, "less shared memory"))?;
                        self.add_sym(Sym::SharedKernel(off as u32))
                    } else {
                        // A device function's `.shared` variable: module scope.
                        let s = self.add_shared(size, align, n.pos)?;
                        st.module_shared.push(s);
                        s
                    };
                    Local::Sym(s)
                }
                "global" | "const" => {
                    // Function-scope statics are module variables.
                    let (size, align, _) = var_layout(d.ty, d.vec, &n.dims, d.align, None, n.pos)?;
                    let id = GlobalId(self.globals.len() as u32);
                    self.globals.push(GlobalInfo {
                        name: n.name.to_string(),
                        space: if d.space == "global" {
                            GlobalSpace::Global
                        } else {
                            GlobalSpace::Const
                        },
                        size,
                        align: align as u32,
                        init: Vec::new(),
                        relocs: Vec::new(),
                        is_extern: false,
                        visible: false,
                        managed: d.managed,
                    });
                    Local::Sym(self.add_sym(Sym::Global(id)))
                }
                _ => {
                    return Err(perr(
                        d.pos,
                        format!("a known state space, not `.{}`", d.space),
                    ));
                }
            };
            st.scopes
                .last_mut()
                .map(|sc| sc.names.insert(n.name, local));
        }
        Ok(())
    }
}
