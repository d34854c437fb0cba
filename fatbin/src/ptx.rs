// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A light scanner of PTX module-level declarations: `.entry` parameter lists (with the byte
//! offsets nvcc gives them) and `.global` / `.const` variables.
//!
//! Parameters are laid out in order, each at the next multiple of its alignment: the
//! `.align N` given before the type, or else the natural size of the type (`.u64` 8, `.f32`
//! 4, ...). An `.align` after `.ptr` is the pointee's alignment and does not count. The
//! total is the end of the last parameter, not rounded up, as ptxas reports it.
//!
//! The scanner never fails: declarations it cannot understand are left out, and so are
//! entries whose parameters exceed [`MAX_PARAM_BYTES`].

use std::iter::Peekable;

use crate::MAX_PARAM_BYTES;

/// One `.entry` parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxParam {
    /// Parameter name (e.g. `_Z5mixedPfif3S12d_param_0`).
    pub name: String,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
}

/// One `.entry` declaration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxEntry {
    /// Mangled kernel name.
    pub name: String,
    /// Parameters in declaration order.
    pub params: Vec<PtxParam>,
    /// End of the last parameter.
    pub param_size: u32,
    /// `.maxntid` (missing dimensions are 1).
    pub maxntid: Option<[u32; 3]>,
    /// `.reqntid` (missing dimensions are 1).
    pub reqntid: Option<[u32; 3]>,
    /// `.minnctapersm`.
    pub minnctapersm: Option<u32>,
    /// `.maxnreg`.
    pub maxnreg: Option<u32>,
}

/// State space of a module-level variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateSpace {
    /// `.global` (`__device__`).
    Global,
    /// `.const` (`__constant__`).
    Const,
}

/// One module-level `.global` or `.const` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxVariable {
    /// Name (mangled for C++ variables).
    pub name: String,
    /// State space.
    pub space: StateSpace,
    /// Size in bytes; `None` for opaque types (`.texref`) and unsized `extern` arrays.
    pub size: Option<u64>,
    /// Alignment in bytes.
    pub align: u32,
    /// Declared `.extern` (defined in another module).
    pub external: bool,
}

/// What [`scan`] finds in a PTX module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxModule {
    /// `.version major.minor`.
    pub version: Option<(u32, u32)>,
    /// `.target` items (e.g. `sm_90`, `debug`).
    pub target: Vec<String>,
    /// `.address_size`.
    pub address_size: Option<u32>,
    /// Kernels, in order.
    pub entries: Vec<PtxEntry>,
    /// Module-level `.global` / `.const` variables, in order.
    pub variables: Vec<PtxVariable>,
}

/// The `.entry` declarations of `ptx` with their parameter layouts.
pub fn entry_params(ptx: &str) -> Vec<PtxEntry> {
    scan(ptx).entries
}

/// The module-level `.global` / `.const` variables of `ptx`.
pub fn variables(ptx: &str) -> Vec<PtxVariable> {
    scan(ptx).variables
}

/// Scans the module-level declarations of `ptx`.
pub fn scan(ptx: &str) -> PtxModule {
    let mut module = PtxModule::default();
    let mut toks = Lexer { s: ptx, pos: 0 }.peekable();
    let (mut braces, mut parens) = (0usize, 0usize);
    let mut external = false;
    while let Some(t) = toks.next() {
        match t {
            Tok::Punct('{') => braces += 1,
            Tok::Punct('}') => braces = braces.saturating_sub(1),
            Tok::Punct('(') => parens += 1,
            Tok::Punct(')') => parens = parens.saturating_sub(1),
            Tok::Punct(';') => external = false,
            Tok::Word(w) if braces == 0 && parens == 0 => match w {
                ".version" => {
                    if let Some(Tok::Number(v)) = toks.peek().copied() {
                        toks.next();
                        let mut it = v.splitn(2, '.').map(|p| p.parse().ok());
                        if let (Some(Some(a)), Some(Some(b))) = (it.next(), it.next()) {
                            module.version = Some((a, b));
                        }
                    }
                }
                ".target" => loop {
                    match toks.peek().copied() {
                        Some(Tok::Punct(',')) => {}
                        Some(Tok::Word(w)) if !w.starts_with('.') => {
                            module.target.push(w.to_owned())
                        }
                        _ => break,
                    }
                    toks.next();
                },
                ".address_size" => {
                    if let Some(Tok::Number(n)) = toks.peek().copied() {
                        toks.next();
                        module.address_size = parse_int(n).and_then(|v| u32::try_from(v).ok());
                    }
                }
                ".extern" => external = true,
                ".entry" => {
                    if let Some(e) = parse_entry(&mut toks) {
                        module.entries.push(e);
                    }
                    external = false;
                }
                ".global" | ".const" => {
                    let space = if w == ".global" {
                        StateSpace::Global
                    } else {
                        StateSpace::Const
                    };
                    module
                        .variables
                        .extend(parse_variables(&mut toks, space, external));
                    external = false;
                }
                _ => {}
            },
            _ => {}
        }
    }
    module
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    /// A directive, type, identifier or instruction (`.param`, `.u64`, `foo`, `ld.param.u32`).
    Word(&'a str),
    /// Something starting with a digit (`16`, `0x10`, `9.0`, `0f3F800000`).
    Number(&'a str),
    /// A string literal.
    Str,
    /// Any other character.
    Punct(char),
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        let b = self.s.as_bytes();
        loop {
            let c = *b.get(self.pos)?;
            match c {
                c if c.is_ascii_whitespace() => self.pos += 1,
                b'/' if b.get(self.pos + 1) == Some(&b'/') => {
                    self.pos = memchr(b, self.pos, b'\n').map_or(b.len(), |p| p + 1);
                }
                b'/' if b.get(self.pos + 1) == Some(&b'*') => {
                    self.pos = self.s[self.pos + 2..]
                        .find("*/")
                        .map_or(b.len(), |p| self.pos + p + 4);
                }
                _ => break,
            }
        }
        let start = self.pos;
        let c = b[start];
        let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%' | b'.');
        if c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.') || c.is_ascii_digit() {
            self.pos += 1;
            while b.get(self.pos).is_some_and(|&c| word(c)) {
                self.pos += 1;
            }
            let text = &self.s[start..self.pos];
            return Some(if c.is_ascii_digit() {
                Tok::Number(text)
            } else {
                Tok::Word(text)
            });
        }
        if c == b'"' {
            self.pos += 1;
            while let Some(&c) = b.get(self.pos) {
                self.pos += if c == b'\\' { 2 } else { 1 };
                if c == b'"' {
                    break;
                }
            }
            self.pos = self.pos.min(b.len());
            return Some(Tok::Str);
        }
        // Any other character, UTF-8 included, is one punctuation token.
        let ch = self.s[start..].chars().next()?;
        self.pos += ch.len_utf8();
        Some(Tok::Punct(ch))
    }
}

fn memchr(b: &[u8], from: usize, c: u8) -> Option<usize> {
    b[from..].iter().position(|&x| x == c).map(|p| p + from)
}

/// A PTX integer literal: decimal, `0x` hex, `0b` binary or `0` octal, with an optional `U`.
fn parse_int(s: &str) -> Option<u64> {
    let s = s.strip_suffix('U').unwrap_or(s);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// Size of a scalar PTX type.
fn type_size(t: &str) -> Option<u32> {
    Some(match t {
        ".b8" | ".u8" | ".s8" | ".e4m3" | ".e5m2" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" | ".e4m3x2" | ".e5m2x2" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" | ".tf32" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// Type, size and alignment of one declaration (`.align 8 .b8 name[16]`), shared by
/// parameters and variables.
#[derive(Debug, Default)]
struct Decl<'a> {
    name: Option<&'a str>,
    elem: Option<u32>,
    vector: u32,
    align: Option<u32>,
    dims: Vec<Option<u64>>,
    opaque: bool,
    ptr: bool,
    bad: bool,
}

impl<'a> Decl<'a> {
    /// Feeds one token; returns false for tokens that end the declarator (`,` `;` `)` `=`).
    fn feed<I: Iterator<Item = Tok<'a>>>(&mut self, t: Tok<'a>, toks: &mut Peekable<I>) -> bool {
        match t {
            Tok::Word(".align") => match toks.next() {
                // After `.ptr` it is the pointee's alignment (`.u64 .ptr .align 1 p`).
                Some(Tok::Number(_)) if self.ptr => {}
                Some(Tok::Number(n)) => {
                    let a = parse_int(n).and_then(|v| u32::try_from(v).ok());
                    self.bad |= a.is_none() || self.align.is_some();
                    self.align = a;
                }
                _ => self.bad = true,
            },
            Tok::Word(".ptr") => self.ptr = true,
            Tok::Word(".v2") => self.vector = 2,
            Tok::Word(".v4") => self.vector = 4,
            Tok::Word(".v8") => self.vector = 8,
            Tok::Word(".texref" | ".samplerref" | ".surfref") => {
                self.elem = Some(8);
                self.opaque = true;
            }
            Tok::Word(
                ".global" | ".shared" | ".const" | ".local" | ".param" | ".visible" | ".weak"
                | ".extern" | ".common",
            ) => {}
            Tok::Word(".attribute") => {
                // `.attribute(.managed)`: skip the parenthesized list.
                if toks.peek() == Some(&Tok::Punct('(')) {
                    for t in toks.by_ref() {
                        if t == Tok::Punct(')') {
                            break;
                        }
                    }
                }
            }
            Tok::Word(w) if w.starts_with('.') => match type_size(w) {
                Some(s) if self.elem.is_none() => self.elem = Some(s),
                _ => self.bad = true,
            },
            Tok::Word(w) if self.name.is_none() => self.name = Some(w),
            Tok::Punct('[') => {
                let dim = match toks.next() {
                    Some(Tok::Number(n)) => {
                        let d = parse_int(n);
                        self.bad |= d.is_none() || toks.next() != Some(Tok::Punct(']'));
                        d
                    }
                    Some(Tok::Punct(']')) => None,
                    _ => {
                        self.bad = true;
                        None
                    }
                };
                self.dims.push(dim);
            }
            Tok::Punct(',' | ';' | ')' | '=') => return false,
            _ => self.bad = true,
        }
        true
    }

    /// (size, align) when fully known; `Some((None, align))` for unsized or opaque.
    fn layout(&self) -> Option<(Option<u64>, u32)> {
        if self.bad || self.name.is_none() {
            return None;
        }
        let elem = self.elem?;
        let vector = self.vector.max(1);
        let natural = elem.checked_mul(vector)?;
        let align = self.align.unwrap_or(natural);
        if align == 0 || !align.is_power_of_two() {
            return None;
        }
        let mut size = Some(u64::from(natural));
        for d in &self.dims {
            size = match (size, d) {
                (Some(s), Some(d)) => Some(s.checked_mul(*d)?),
                _ => None,
            };
        }
        Some((
            if self.opaque && self.dims.is_empty() {
                None
            } else {
                size
            },
            align,
        ))
    }
}

fn parse_entry<'a, I: Iterator<Item = Tok<'a>>>(toks: &mut Peekable<I>) -> Option<PtxEntry> {
    let Some(Tok::Word(name)) = toks.next() else {
        return None;
    };
    let mut entry = PtxEntry {
        name: name.to_owned(),
        ..PtxEntry::default()
    };
    let mut ok = true;
    if toks.peek() == Some(&Tok::Punct('(')) {
        toks.next();
        let mut offset: u64 = 0;
        loop {
            let mut d = Decl::default();
            let mut seen_param = false;
            let mut end = None;
            while let Some(t) = toks.next() {
                if t == Tok::Word(".param") {
                    seen_param = true;
                }
                if !d.feed(t, toks) {
                    end = Some(t);
                    break;
                }
            }
            let end = end?;
            if end == Tok::Punct(')') && d.name.is_none() && !seen_param && entry.params.is_empty()
            {
                break; // `()`
            }
            match (seen_param, d.layout()) {
                (true, Some((Some(size), align)))
                    if end == Tok::Punct(',') || end == Tok::Punct(')') =>
                {
                    let start = offset.checked_next_multiple_of(u64::from(align))?;
                    offset = start.checked_add(size)?;
                    entry.params.push(PtxParam {
                        name: d.name.unwrap_or_default().to_owned(),
                        offset: u32::try_from(start).ok()?,
                        size: u32::try_from(size).ok()?,
                        align,
                    });
                }
                _ => ok = false,
            }
            if end != Tok::Punct(',') {
                if end != Tok::Punct(')') {
                    return None;
                }
                break;
            }
        }
        entry.param_size = u32::try_from(offset)
            .ok()
            .filter(|&s| s <= MAX_PARAM_BYTES)?;
    }
    // Performance directives up to the body or the `;` of a declaration.
    while let Some(Tok::Word(w)) = toks.peek().copied() {
        toks.next();
        let mut nums = Vec::new();
        while let Some(t @ (Tok::Number(_) | Tok::Punct(','))) = toks.peek().copied() {
            toks.next();
            if let Tok::Number(n) = t {
                nums.push(
                    parse_int(n)
                        .and_then(|v| u32::try_from(v).ok())
                        .unwrap_or(0),
                );
            }
        }
        let dims = || Some([0, 1, 2].map(|i| nums.get(i).copied().unwrap_or(1)));
        match w {
            ".maxntid" => entry.maxntid = dims(),
            ".reqntid" => entry.reqntid = dims(),
            ".minnctapersm" => entry.minnctapersm = nums.first().copied(),
            ".maxnreg" => entry.maxnreg = nums.first().copied(),
            _ => {}
        }
    }
    ok.then_some(entry)
}

fn parse_variables<'a, I: Iterator<Item = Tok<'a>>>(
    toks: &mut Peekable<I>,
    space: StateSpace,
    external: bool,
) -> Vec<PtxVariable> {
    let mut out = Vec::new();
    let mut d = Decl::default();
    loop {
        let Some(t) = toks.next() else { return out };
        if d.feed(t, toks) {
            continue;
        }
        if let (Some(name), Some((size, align))) = (d.name, d.layout()) {
            out.push(PtxVariable {
                name: name.to_owned(),
                space,
                size,
                align,
                external,
            });
        }
        match t {
            Tok::Punct('=') => {
                // Skip the initializer, braces and all, up to the `,` or `;` after it.
                let mut depth = 0usize;
                for t in toks.by_ref() {
                    match t {
                        Tok::Punct('{' | '(') => depth += 1,
                        Tok::Punct('}' | ')') => depth = depth.saturating_sub(1),
                        Tok::Punct(';') if depth == 0 => return out,
                        Tok::Punct(',') if depth == 0 => break,
                        _ => {}
                    }
                }
            }
            Tok::Punct(',') => {}
            _ => return out, // `;` or an unexpected `)`
        }
        // The next declarator keeps the type and alignment.
        d = Decl {
            name: None,
            dims: Vec::new(),
            ..d
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(e: &PtxEntry) -> Vec<(u32, u32)> {
        e.params.iter().map(|p| (p.offset, p.size)).collect()
    }

    #[test]
    fn natural_and_explicit_alignment() {
        let ptx = r#"
            .version 9.0
            .target sm_90, debug
            .address_size 64
            // .entry commented(.param .u8 x)
            /* .entry also_commented() */
            .global .align 4 .b8 dev_scale[64];
            .const .align 4 .b8 const_table[128] = {1, 2, 3};
            .visible .global .f64 a, b[2];
            .extern .global .align 8 .b8 unsized[];
            .global .texref tex;
            .func (.param .b32 rv) helper(.param .u64 .ptr .global .align 4 p) { ret; }
            .visible .entry _Z5mixedPfif3S12d(
                .param .u64 .ptr .global .align 1 p0,
                .param .u32 p1,
                .param .f32 p2,
                .param .align 4 .b8 p3[12],
                .param .f64 p4
            )
            .maxntid 128, 1, 1
            .minnctapersm 2
            {
                .reg .b64 %rd<5>;
                { .reg .pred %p; }
                ld.param.u64 %rd1, [p0];
                ret;
            }
            .entry noparams() { ret; }
            .visible .entry plainc(.param .u8 c, .param .u16 s, .param .u64 ll, .param .v2 .f32 v)
            .reqntid 32
            { ret; }
        "#;
        let m = scan(ptx);
        assert_eq!(m.version, Some((9, 0)));
        assert_eq!(m.target, ["sm_90", "debug"]);
        assert_eq!(m.address_size, Some(64));
        let names: Vec<_> = m.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["_Z5mixedPfif3S12d", "noparams", "plainc"]);
        let mixed = &m.entries[0];
        assert_eq!(layout(mixed), [(0, 8), (8, 4), (12, 4), (16, 12), (32, 8)]);
        assert_eq!(mixed.param_size, 40);
        assert_eq!(mixed.params[0].align, 8);
        assert_eq!(mixed.maxntid, Some([128, 1, 1]));
        assert_eq!(mixed.minnctapersm, Some(2));
        assert!(m.entries[1].params.is_empty());
        assert_eq!(layout(&m.entries[2]), [(0, 1), (2, 2), (8, 8), (16, 8)]);
        assert_eq!(m.entries[2].reqntid, Some([32, 1, 1]));
        let vars: Vec<_> = m
            .variables
            .iter()
            .map(|v| (v.name.as_str(), v.space, v.size, v.external))
            .collect();
        assert_eq!(
            vars,
            [
                ("dev_scale", StateSpace::Global, Some(64), false),
                ("const_table", StateSpace::Const, Some(128), false),
                ("a", StateSpace::Global, Some(8), false),
                ("b", StateSpace::Global, Some(16), false),
                ("unsized", StateSpace::Global, None, true),
                ("tex", StateSpace::Global, None, false),
            ]
        );
    }

    #[test]
    fn garbage_is_skipped() {
        assert!(entry_params("").is_empty());
        assert!(entry_params(".entry").is_empty());
        assert!(entry_params(".entry k(").is_empty());
        assert!(entry_params(".entry k(.param .u32 x[99999999999999999999]) {}").is_empty());
        assert!(entry_params(".entry k(.param .align 3 .u32 x) {}").is_empty());
        assert!(entry_params(".entry k(.param .q32 x) {}").is_empty());
        let e = entry_params(".entry bad(.param .u32 x, .param .weird y) {} .entry good() {}");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].name, "good");
        // Sizes that overflow u32 are rejected rather than wrapped; so are oversized entries.
        assert!(entry_params(".entry k(.param .b64 x[4294967296]) {}").is_empty());
        assert!(entry_params(".entry k(.param .b8 x[65537]) {}").is_empty());
        assert_eq!(
            entry_params(".entry k(.param .b8 x[65536]) {}")[0].param_size,
            65536
        );
        assert!(variables(".global .b8 \"x\";").is_empty());
    }
}
