// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Recursive-descent parser from tokens to the syntax tree. Never panics; nesting is bounded.

use crate::{
    ast::*,
    error::ParseError,
    lexer::{Tok, Token, tokenize},
};

/// Deepest nesting of blocks, initializer lists and parenthesized expressions.
const MAX_DEPTH: u32 = 64;

pub(crate) fn parse(src: &str) -> Result<AstModule<'_>, ParseError> {
    let toks = tokenize(src)?;
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
    };
    p.module()
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    i: usize,
    depth: u32,
}

type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    fn tok(&self) -> Token<'a> {
        // The token list always ends with Eof and `i` never passes it.
        self.toks[self.i.min(self.toks.len() - 1)]
    }

    fn peek(&self) -> Tok<'a> {
        self.tok().tok
    }

    fn peek_at(&self, n: usize) -> Tok<'a> {
        self.toks.get(self.i + n).map_or(Tok::Eof, |t| t.tok)
    }

    fn pos(&self) -> Pos {
        let t = self.tok();
        Pos {
            line: t.line,
            col: t.col,
        }
    }

    fn bump(&mut self) -> Token<'a> {
        let t = self.tok();
        if !matches!(t.tok, Tok::Eof) {
            self.i += 1;
        }
        t
    }

    fn err<T>(&self, expected: impl Into<String>) -> PResult<T> {
        let t = self.tok();
        let found = match t.tok {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Dot(s) => format!("`.{s}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::F32(_) | Tok::F64(_) | Tok::Float(_) => "a float literal".into(),
            Tok::Str(_) => "a string".into(),
            Tok::Punct(c) => format!("`{}`", c as char),
            Tok::Eof => "end of input".into(),
        };
        Err(ParseError::new(
            t.line,
            t.col,
            format!("{}, found {found}", expected.into()),
        ))
    }

    fn is_punct(&self, c: u8) -> bool {
        self.peek() == Tok::Punct(c)
    }

    fn eat_punct(&mut self, c: u8) -> bool {
        if self.is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: u8) -> PResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("`{}`", c as char))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<&'a str> {
        match self.peek() {
            Tok::Ident(s) => {
                self.bump();
                Ok(s)
            }
            _ => self.err(what),
        }
    }

    fn dot(&mut self, what: &str) -> PResult<&'a str> {
        match self.peek() {
            Tok::Dot(s) => {
                self.bump();
                Ok(s)
            }
            _ => self.err(what),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return self.err("less deeply nested input");
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips the rest of the current source line (for `.loc`, `.file`).
    fn skip_line(&mut self, line: u32) {
        while !matches!(self.peek(), Tok::Eof) && self.tok().line == line {
            self.bump();
        }
    }

    /// Skips to and past the next `;` at brace depth 0.
    fn skip_statement(&mut self) -> PResult<()> {
        let mut depth = 0u32;
        loop {
            match self.peek() {
                Tok::Eof => return self.err("`;`"),
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') => {
                    if depth == 0 {
                        return self.err("`;`");
                    }
                    depth -= 1;
                }
                Tok::Punct(b';') if depth == 0 => {
                    self.bump();
                    return Ok(());
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips a balanced `{ ... }` (debug sections).
    fn skip_braces(&mut self) -> PResult<()> {
        self.expect_punct(b'{')?;
        let mut depth = 1u32;
        while depth > 0 {
            match self.bump().tok {
                Tok::Eof => return self.err("`}`"),
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    fn uint(&mut self, what: &str) -> PResult<u64> {
        let v = self.const_expr()?;
        u64::try_from(v).or_else(|_| self.err(what))
    }

    fn u32_val(&mut self, what: &str) -> PResult<u32> {
        let v = self.uint(what)?;
        u32::try_from(v).or_else(|_| self.err(what))
    }

    fn module(&mut self) -> PResult<AstModule<'a>> {
        let mut m = AstModule::default();
        loop {
            let pos = self.pos();
            match self.peek() {
                Tok::Eof => return Ok(m),
                Tok::Dot("version") => {
                    self.bump();
                    m.version = Some(match self.bump().tok {
                        Tok::Float(f) => f,
                        Tok::Int(v) => v as f64,
                        _ => return self.err("a version number"),
                    });
                }
                Tok::Dot("target") => {
                    self.bump();
                    loop {
                        m.target.push(self.ident("a target name")?);
                        if !self.eat_punct(b',') {
                            break;
                        }
                    }
                }
                Tok::Dot("address_size") => {
                    self.bump();
                    m.address_size = Some(self.uint("an address size")?);
                }
                Tok::Dot("file") | Tok::Dot("loc") => {
                    self.bump();
                    self.skip_line(pos.line);
                }
                Tok::Dot("section") => {
                    self.bump();
                    while !self.is_punct(b'{') && !matches!(self.peek(), Tok::Eof) {
                        self.bump();
                    }
                    self.skip_braces()?;
                }
                Tok::Dot("pragma") => self.skip_statement()?,
                Tok::Dot("alias") => {
                    self.bump();
                    let a = self.ident("an alias name")?;
                    self.expect_punct(b',')?;
                    let b = self.ident("an aliasee name")?;
                    self.expect_punct(b';')?;
                    m.items.push(Item::Alias(a, b, pos));
                }
                Tok::Punct(b';') => {
                    self.bump();
                }
                Tok::Dot(_) => {
                    let linkage = self.linkage();
                    match self.peek() {
                        Tok::Dot("entry") | Tok::Dot("func") => {
                            let f = self.function(linkage)?;
                            m.items.push(Item::Func(f));
                        }
                        Tok::Dot(_) => {
                            let d = self.var_decl(linkage)?;
                            m.items.push(Item::Var(d));
                        }
                        _ => return self.err("a declaration"),
                    }
                }
                _ => return self.err("a directive"),
            }
        }
    }

    fn linkage(&mut self) -> Linkage {
        let mut l = Linkage::None;
        loop {
            l = match self.peek() {
                Tok::Dot("visible") => Linkage::Visible,
                Tok::Dot("extern") => Linkage::Extern,
                Tok::Dot("weak") => Linkage::Weak,
                Tok::Dot("common") => Linkage::Common,
                _ => return l,
            };
            self.bump();
        }
    }

    /// `.space [.attribute(..)] [.align N] [.vN] .type name[dims] [= init] {, name ...};`
    fn var_decl(&mut self, linkage: Linkage) -> PResult<VarDecl<'a>> {
        let pos = self.pos();
        let space = self.dot("a state space")?;
        let mut align = None;
        let mut vec = 1;
        let mut ty = None;
        let mut managed = false;
        while let Tok::Dot(d) = self.peek() {
            self.bump();
            match d {
                "align" => align = Some(self.uint("an alignment")?),
                "v2" => vec = 2,
                "v4" => vec = 4,
                "v8" => vec = 8,
                "attribute" => {
                    self.expect_punct(b'(')?;
                    while !self.eat_punct(b')') {
                        match self.peek() {
                            Tok::Eof => return self.err("`)`"),
                            Tok::Dot("managed") => managed = true,
                            _ => {}
                        }
                        self.bump();
                    }
                }
                "ptr" | "global" | "shared" | "const" | "local" => {}
                _ => ty = Some(d),
            }
        }
        let Some(ty) = ty else {
            return self.err("a type");
        };
        let mut names = Vec::new();
        loop {
            let npos = self.pos();
            let name = self.ident("a variable name")?;
            let mut range = None;
            if self.eat_punct(b'<') {
                range = Some(self.u32_val("a register count")?);
                self.expect_punct(b'>')?;
            }
            let mut dims = Vec::new();
            while self.eat_punct(b'[') {
                if self.eat_punct(b']') {
                    dims.push(None);
                } else {
                    dims.push(Some(self.uint("an array size")?));
                    self.expect_punct(b']')?;
                }
            }
            let init = if self.eat_punct(b'=') {
                Some(self.init()?)
            } else {
                None
            };
            names.push(DeclName {
                pos: npos,
                name,
                range,
                dims,
                init,
            });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_punct(b';')?;
        Ok(VarDecl {
            pos,
            linkage,
            space,
            align,
            vec,
            ty,
            names,
            managed,
        })
    }

    fn init(&mut self) -> PResult<Init<'a>> {
        if self.eat_punct(b'{') {
            self.enter()?;
            let mut items = Vec::new();
            if !self.is_punct(b'}') {
                loop {
                    items.push(self.init()?);
                    if !self.eat_punct(b',') {
                        break;
                    }
                }
            }
            self.expect_punct(b'}')?;
            self.leave();
            return Ok(Init::List(items));
        }
        Ok(Init::Value(self.value()?))
    }

    /// A literal, `sym+off` or `generic(sym)+off`.
    fn value(&mut self) -> PResult<Value<'a>> {
        let pos = self.pos();
        match self.peek() {
            Tok::Ident("generic") if self.peek_at(1) == Tok::Punct(b'(') => {
                self.bump();
                self.bump();
                let name = self.ident("a symbol")?;
                self.expect_punct(b')')?;
                let offset = self.offset()?;
                Ok(Value::Addr { name, offset, pos })
            }
            Tok::Ident(name) => {
                self.bump();
                let offset = self.offset()?;
                Ok(Value::Addr { name, offset, pos })
            }
            Tok::F32(v) => {
                self.bump();
                Ok(Value::F32(v))
            }
            Tok::F64(v) => {
                self.bump();
                Ok(Value::F64(v))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(Value::Float(v))
            }
            Tok::Punct(b'-')
                if matches!(self.peek_at(1), Tok::F32(_) | Tok::F64(_) | Tok::Float(_)) =>
            {
                self.bump();
                Ok(match self.bump().tok {
                    Tok::F32(v) => Value::F32(v ^ 0x8000_0000),
                    Tok::F64(v) => Value::F64(v ^ (1 << 63)),
                    Tok::Float(v) => Value::Float(-v),
                    _ => return self.err("a float"),
                })
            }
            _ => Ok(Value::Int(self.const_expr()? as u64)),
        }
    }

    /// Optional `+ expr` / `- expr` after a symbol.
    fn offset(&mut self) -> PResult<i64> {
        let mut off = 0i64;
        loop {
            if self.eat_punct(b'+') {
                off = off.wrapping_add(self.unary()?);
            } else if self.eat_punct(b'-') {
                off = off.wrapping_sub(self.unary()?);
            } else {
                return Ok(off);
            }
        }
    }

    /// Integer constant expression with C precedence (no `?:`).
    fn const_expr(&mut self) -> PResult<i64> {
        self.binary(0)
    }

    fn binary(&mut self, min_prec: u8) -> PResult<i64> {
        let mut lhs = self.unary()?;
        loop {
            let (op, len) = match (self.peek(), self.peek_at(1)) {
                (Tok::Punct(b'<'), Tok::Punct(b'<')) => ("<<", 2),
                (Tok::Punct(b'>'), Tok::Punct(b'>')) => (">>", 2),
                (Tok::Punct(b'&'), Tok::Punct(b'&')) => ("&&", 2),
                (Tok::Punct(b'|'), Tok::Punct(b'|')) => ("||", 2),
                (Tok::Punct(b'='), Tok::Punct(b'=')) => ("==", 2),
                (Tok::Punct(b'!'), Tok::Punct(b'=')) => ("!=", 2),
                (Tok::Punct(b'*'), _) => ("*", 1),
                (Tok::Punct(b'/'), _) => ("/", 1),
                (Tok::Punct(b'%'), _) => ("%", 1),
                (Tok::Punct(b'+'), _) => ("+", 1),
                (Tok::Punct(b'-'), _) => ("-", 1),
                (Tok::Punct(b'&'), _) => ("&", 1),
                (Tok::Punct(b'^'), _) => ("^", 1),
                (Tok::Punct(b'|'), _) => ("|", 1),
                _ => return Ok(lhs),
            };
            let prec = match op {
                "*" | "/" | "%" => 10,
                "+" | "-" => 9,
                "<<" | ">>" => 8,
                "==" | "!=" => 6,
                "&" => 5,
                "^" => 4,
                "|" => 3,
                "&&" => 2,
                _ => 1,
            };
            if prec < min_prec {
                return Ok(lhs);
            }
            for _ in 0..len {
                self.bump();
            }
            self.enter()?;
            let rhs = self.binary(prec + 1)?;
            self.leave();
            lhs = match op {
                "*" => lhs.wrapping_mul(rhs),
                "/" => lhs.checked_div(rhs).unwrap_or(0),
                "%" => lhs.checked_rem(rhs).unwrap_or(0),
                "+" => lhs.wrapping_add(rhs),
                "-" => lhs.wrapping_sub(rhs),
                "<<" => lhs.wrapping_shl(rhs as u32),
                ">>" => lhs.wrapping_shr(rhs as u32),
                "==" => (lhs == rhs) as i64,
                "!=" => (lhs != rhs) as i64,
                "&" => lhs & rhs,
                "^" => lhs ^ rhs,
                "|" => lhs | rhs,
                "&&" => (lhs != 0 && rhs != 0) as i64,
                _ => (lhs != 0 || rhs != 0) as i64,
            };
        }
    }

    fn unary(&mut self) -> PResult<i64> {
        match self.peek() {
            Tok::Int(v) => {
                self.bump();
                Ok(v as i64)
            }
            Tok::Punct(c @ (b'-' | b'~' | b'!' | b'+' | b'(')) => {
                self.bump();
                self.enter()?;
                let v = if c == b'(' {
                    let v = self.const_expr()?;
                    self.expect_punct(b')')?;
                    v
                } else {
                    self.unary()?
                };
                self.leave();
                Ok(match c {
                    b'-' => v.wrapping_neg(),
                    b'~' => !v,
                    b'!' => (v == 0) as i64,
                    _ => v,
                })
            }
            _ => self.err("an integer constant"),
        }
    }

    fn param_list(&mut self) -> PResult<Vec<ParamDecl<'a>>> {
        self.expect_punct(b'(')?;
        let mut v = Vec::new();
        if self.eat_punct(b')') {
            return Ok(v);
        }
        loop {
            v.push(self.param_decl()?);
            if self.eat_punct(b')') {
                return Ok(v);
            }
            self.expect_punct(b',')?;
        }
    }

    fn param_decl(&mut self) -> PResult<ParamDecl<'a>> {
        let pos = self.pos();
        let space = self.dot("`.param` or `.reg`")?;
        let mut align = None;
        let mut vec = 1;
        let mut ty = None;
        // After `.ptr`, a state space and `.align N` describe the memory the pointer points
        // to, not the parameter (`.param .u64 .ptr .global .align 16 p`).
        let mut pointee = false;
        while let Tok::Dot(d) = self.peek() {
            self.bump();
            match d {
                "align" if pointee => {
                    self.uint("an alignment")?;
                }
                "align" => align = Some(self.uint("an alignment")?),
                "v2" => vec = 2,
                "v4" => vec = 4,
                "v8" => vec = 8,
                "ptr" => pointee = true,
                "global" | "shared" | "const" | "local" => {}
                _ => ty = Some(d),
            }
        }
        let Some(ty) = ty else {
            return self.err("a parameter type");
        };
        let name = self.ident("a parameter name")?;
        let mut array = None;
        if self.eat_punct(b'[') {
            if self.eat_punct(b']') {
                array = Some(0);
            } else {
                array = Some(self.uint("an array size")?);
                self.expect_punct(b']')?;
            }
        }
        Ok(ParamDecl {
            pos,
            space,
            align,
            vec,
            ty,
            name,
            array,
        })
    }

    fn function(&mut self, linkage: Linkage) -> PResult<FuncDecl<'a>> {
        let pos = self.pos();
        let is_entry = self.dot("`.entry` or `.func`")? == "entry";
        let mut rets = Vec::new();
        if !is_entry && self.is_punct(b'(') {
            rets = self.param_list()?;
        }
        let name = self.ident("a function name")?;
        let params = if self.is_punct(b'(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let mut perf = Perf::default();
        loop {
            match self.peek() {
                Tok::Punct(b';') => {
                    self.bump();
                    return Ok(FuncDecl {
                        pos,
                        linkage,
                        is_entry,
                        name,
                        rets,
                        params,
                        perf,
                        body: None,
                    });
                }
                Tok::Punct(b'{') => break,
                Tok::Dot("pragma") => self.skip_statement()?,
                Tok::Dot(d) => {
                    self.bump();
                    let mut vals = Vec::new();
                    if matches!(self.peek(), Tok::Int(_)) {
                        loop {
                            vals.push(self.u32_val("a number")?);
                            if !self.eat_punct(b',') {
                                break;
                            }
                        }
                    }
                    let dim3 = |v: &[u32]| {
                        [
                            v.first().copied().unwrap_or(1),
                            v.get(1).copied().unwrap_or(1),
                            v.get(2).copied().unwrap_or(1),
                        ]
                    };
                    match d {
                        "maxntid" => perf.maxntid = Some(dim3(&vals)),
                        "reqntid" => perf.reqntid = Some(dim3(&vals)),
                        "minnctapersm" => perf.minnctapersm = vals.first().copied(),
                        "maxnreg" => perf.maxnreg = vals.first().copied(),
                        "reqnctapercluster" => perf.reqnctapercluster = Some(dim3(&vals)),
                        "explicitcluster" => perf.explicitcluster = true,
                        "maxclusterrank" => perf.maxclusterrank = vals.first().copied(),
                        _ => {}
                    }
                }
                _ => return self.err("a function body"),
            }
        }
        let body = self.block()?;
        Ok(FuncDecl {
            pos,
            linkage,
            is_entry,
            name,
            rets,
            params,
            perf,
            body: Some(body),
        })
    }

    fn block(&mut self) -> PResult<Vec<Stmt<'a>>> {
        self.expect_punct(b'{')?;
        self.enter()?;
        let mut stmts = Vec::new();
        loop {
            let pos = self.pos();
            match self.peek() {
                Tok::Punct(b'}') => {
                    self.bump();
                    break;
                }
                Tok::Punct(b'{') => stmts.push(Stmt::Block(self.block()?)),
                Tok::Punct(b';') => {
                    self.bump();
                }
                Tok::Dot("loc") | Tok::Dot("file") => {
                    self.bump();
                    self.skip_line(pos.line);
                }
                Tok::Dot("reg" | "local" | "shared" | "param" | "const" | "global") => {
                    stmts.push(Stmt::Decl(self.var_decl(Linkage::None)?));
                }
                Tok::Dot("branchtargets") => {
                    self.bump();
                    let mut v = Vec::new();
                    loop {
                        let p = self.pos();
                        v.push((self.ident("a label")?, p));
                        if !self.eat_punct(b',') {
                            break;
                        }
                    }
                    self.expect_punct(b';')?;
                    stmts.push(Stmt::BranchTargets(v));
                }
                // .pragma, .callprototype, .calltargets and anything else: ignored.
                Tok::Dot(_) => self.skip_statement()?,
                Tok::Ident(name) if self.peek_at(1) == Tok::Punct(b':') => {
                    self.bump();
                    self.bump();
                    stmts.push(Stmt::Label(name, pos));
                }
                Tok::Ident(_) | Tok::Punct(b'@') => stmts.push(Stmt::Inst(self.inst()?)),
                Tok::Eof => return self.err("`}`"),
                _ => return self.err("an instruction"),
            }
        }
        self.leave();
        Ok(stmts)
    }

    fn inst(&mut self) -> PResult<Inst<'a>> {
        let pos = self.pos();
        let mut guard = None;
        if self.eat_punct(b'@') {
            let neg = self.eat_punct(b'!');
            let gpos = self.pos();
            guard = Some((self.ident("a predicate register")?, neg, gpos));
        }
        let op = self.ident("an opcode")?;
        let mut mods = Vec::new();
        while let Tok::Dot(m) = self.peek() {
            self.bump();
            mods.push(m);
        }
        let mut args = Vec::new();
        if !self.eat_punct(b';') {
            loop {
                args.push(self.operand()?);
                if self.eat_punct(b';') {
                    break;
                }
                self.expect_punct(b',')?;
            }
        }
        Ok(Inst {
            pos,
            guard,
            op,
            mods,
            args,
        })
    }

    fn operand_list(&mut self, close: u8) -> PResult<Vec<Operand<'a>>> {
        self.enter()?;
        let mut v = Vec::new();
        if !self.eat_punct(close) {
            loop {
                v.push(self.operand()?);
                if self.eat_punct(close) {
                    break;
                }
                self.expect_punct(b',')?;
            }
        }
        self.leave();
        Ok(v)
    }

    fn operand(&mut self) -> PResult<Operand<'a>> {
        let pos = self.pos();
        let first = match self.peek() {
            Tok::Punct(b'[') => {
                self.bump();
                let mut list = self.operand_list(b']')?;
                return Ok(
                    if list.len() == 1 && matches!(list[0], Operand::Name { .. } | Operand::Imm(_))
                    {
                        Operand::Addr(Box::new(list.remove(0)))
                    } else {
                        Operand::Bracket(list)
                    },
                );
            }
            Tok::Punct(b'{') => {
                self.bump();
                // `{a, b, c, d}|p` (texture fetches with a residency predicate) pairs below.
                Operand::Vec(self.operand_list(b'}')?)
            }
            Tok::Punct(b'(') if !matches!(self.peek_at(1), Tok::Int(_) | Tok::Punct(b'-')) => {
                self.bump();
                return Ok(Operand::List(self.operand_list(b')')?));
            }
            Tok::Punct(b'!') => {
                self.bump();
                self.enter()?;
                let o = self.operand()?;
                self.leave();
                return Ok(Operand::Not(Box::new(o)));
            }
            Tok::Ident("_") => {
                self.bump();
                Operand::Sink
            }
            Tok::Ident(name) => {
                self.bump();
                let mut comp = None;
                if let Tok::Dot(c) = self.peek()
                    && !self.tok().space_before
                {
                    self.bump();
                    comp = Some(c);
                }
                let offset = self.offset()?;
                Operand::Name {
                    name,
                    comp,
                    offset,
                    pos,
                }
            }
            _ => Operand::Imm(self.value()?),
        };
        if self.is_punct(b'|') && !matches!(self.peek_at(1), Tok::Punct(b'|')) {
            self.bump();
            let second = self.operand()?;
            return Ok(Operand::Pair(Box::new(first), Box::new(second)));
        }
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel() {
        let src = r#"
.version 9.0
.target sm_90
.address_size 64
.global .align 4 .b8 tbl[8] = {1, 2, 3};
.visible .entry k(.param .u64 k_param_0, .param .align 8 .b8 k_param_1[16]) .maxntid 128, 1, 1
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .loc 1 2 3
    mov.u32 %r1, %tid.x;
    setp.lt.s32 %p1|%p2, %r1, -4;
    @!%p1 bra $L__BB0_1;
    { .reg .b32 t; call.uni (retval0), vprintf, (param0, param1); }
$L__BB0_1:
    st.global.v2.u32 [%rd1+-8], {%r1, _};
    ret;
}
"#;
        let m = parse(src).unwrap();
        assert_eq!(m.items.len(), 2);
        let Item::Func(f) = &m.items[1] else { panic!() };
        assert_eq!(f.perf.maxntid, Some([128, 1, 1]));
        assert_eq!(f.params[1].array, Some(16));
        let body = f.body.as_ref().unwrap();
        assert_eq!(body.len(), 9);
    }

    #[test]
    fn reports_position() {
        let e = parse(".version 9.0\n.entry k(\n{ }").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.expected.contains("`.param`"), "{e}");
        assert!(parse(&"{".repeat(1000)).is_err());
        let deep = format!(".global .u32 x = {}1{};", "{".repeat(500), "}".repeat(500));
        assert!(parse(&deep).is_err());
    }
}
