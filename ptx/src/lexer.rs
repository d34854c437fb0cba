// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tokenizer for PTX source text.

use crate::error::ParseError;

/// One token. Identifiers and directives borrow from the source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tok<'a> {
    /// An identifier: `%r1`, `$L__BB0_2`, `ld`, `_Z3fooi`.
    Ident(&'a str),
    /// A dotted word, without the dot: `.global` -> `global`, `.L2::cache_hint` -> `L2::cache_hint`.
    Dot(&'a str),
    /// An integer literal (its 64-bit pattern).
    Int(u64),
    /// `0fXXXXXXXX`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`.
    F64(u64),
    /// A decimal floating-point literal such as `1.5` or `2e-3`.
    Float(f64),
    /// A string literal, without the quotes (escapes are not interpreted).
    Str(&'a str),
    /// A single punctuation character.
    Punct(u8),
    Eof,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
    /// True when whitespace or a comment separates this token from the previous one.
    pub space_before: bool,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Tokenizes `src` completely. Never panics.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(b.len() / 4);
    let mut i = 0usize;
    let mut line = 1u32;
    let mut line_start = 0usize;
    let mut space = true;
    while i < b.len() {
        let c = b[i];
        let col = (i - line_start + 1) as u32;
        let start_line = line;
        let err = move |what: &str| ParseError::new(start_line, col, what);
        if c == b'\n' {
            line = line.saturating_add(1);
            i += 1;
            line_start = i;
            space = true;
            continue;
        }
        if c.is_ascii_whitespace() || c == 0 {
            i += 1;
            space = true;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            space = true;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err(err("end of comment `*/`"));
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    line = line.saturating_add(1);
                    line_start = i + 1;
                }
                i += 1;
            }
            space = true;
            continue;
        }
        let start = i;
        let tok = if is_ident_start(c) {
            i += 1;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            Tok::Ident(&src[start..i])
        } else if c == b'.' && b.get(i + 1).is_some_and(|&c| is_ident_char(c)) {
            i += 1;
            loop {
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                // Qualifiers such as `.L2::cache_hint` and `.async::generic`.
                if b.get(i) == Some(&b':')
                    && b.get(i + 1) == Some(&b':')
                    && b.get(i + 2).is_some_and(|&c| is_ident_char(c))
                {
                    i += 2;
                    continue;
                }
                break;
            }
            Tok::Dot(&src[start + 1..i])
        } else if c.is_ascii_digit() {
            lex_number(b, &mut i).ok_or_else(|| err("a valid number"))?
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if i < b.len() && b[i] == b'\n' {
                    return Err(err("a closing `\"` on the same line"));
                }
                i += 1;
            }
            if i >= b.len() {
                return Err(err("a closing `\"`"));
            }
            i += 1;
            Tok::Str(src.get(start + 1..i - 1).ok_or_else(|| err("a string"))?)
        } else if c.is_ascii_punctuation() {
            i += 1;
            Tok::Punct(c)
        } else {
            return Err(err("a PTX token"));
        };
        toks.push(Token {
            tok,
            line,
            col,
            space_before: space,
        });
        space = false;
    }
    let col = (b.len() - line_start + 1) as u32;
    toks.push(Token {
        tok: Tok::Eof,
        line,
        col,
        space_before: true,
    });
    Ok(toks)
}

fn lex_number(b: &[u8], i: &mut usize) -> Option<Tok<'static>> {
    let start = *i;
    // Hex float bit patterns.
    if b[start] == b'0' && matches!(b.get(start + 1), Some(b'f' | b'F' | b'd' | b'D')) {
        let digits = if matches!(b[start + 1], b'f' | b'F') {
            8
        } else {
            16
        };
        let end = start + 2 + digits;
        let hex = b.get(start + 2..end)?;
        if hex.iter().all(u8::is_ascii_hexdigit) && !b.get(end).is_some_and(|&c| is_ident_char(c)) {
            let v = u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            *i = end;
            return Some(if digits == 8 {
                Tok::F32(v as u32)
            } else {
                Tok::F64(v)
            });
        }
        return None;
    }
    let mut j = start;
    let mut is_float = false;
    if b[start] == b'0' && matches!(b.get(start + 1), Some(b'x' | b'X' | b'b' | b'B')) {
        j += 2;
        while j < b.len() && b[j].is_ascii_alphanumeric() {
            j += 1;
        }
    } else {
        while j < b.len() {
            let c = b[j];
            if c.is_ascii_digit() {
                j += 1;
            } else if c == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
                is_float = true;
                j += 1;
            } else if (c == b'e' || c == b'E')
                && (b.get(j + 1).is_some_and(u8::is_ascii_digit)
                    || (matches!(b.get(j + 1), Some(b'+' | b'-'))
                        && b.get(j + 2).is_some_and(u8::is_ascii_digit)))
            {
                is_float = true;
                j += 2;
            } else if c == b'.' && !b.get(j + 1).is_some_and(|&c| is_ident_char(c)) {
                // `1.` is a float.
                is_float = true;
                j += 1;
            } else {
                break;
            }
        }
        if !is_float {
            while j < b.len() && b[j].is_ascii_alphanumeric() {
                j += 1;
            }
        }
    }
    let text = std::str::from_utf8(&b[start..j]).ok()?;
    *i = j;
    if is_float {
        return text.parse::<f64>().ok().map(Tok::Float);
    }
    let t = text.trim_end_matches(['U', 'u']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(bits) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(bits, 2).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(Tok::Int(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn basic_tokens() {
        assert_eq!(
            toks("ld.global.L1::no_allocate.f32 %f1, [%rd2+-4]; // c"),
            vec![
                Tok::Ident("ld"),
                Tok::Dot("global"),
                Tok::Dot("L1::no_allocate"),
                Tok::Dot("f32"),
                Tok::Ident("%f1"),
                Tok::Punct(b','),
                Tok::Punct(b'['),
                Tok::Ident("%rd2"),
                Tok::Punct(b'+'),
                Tok::Punct(b'-'),
                Tok::Int(4),
                Tok::Punct(b']'),
                Tok::Punct(b';'),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("0f3F800000 0d4000000000000000 0x10 010 0b101 1.5 2e3 7U"),
            vec![
                Tok::F32(0x3F80_0000),
                Tok::F64(0x4000_0000_0000_0000),
                Tok::Int(16),
                Tok::Int(8),
                Tok::Int(5),
                Tok::Float(1.5),
                Tok::Float(2000.0),
                Tok::Int(7),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = tokenize("mov.u32 %r1,\n  0xZZ;").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(tokenize("/* open").is_err());
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("é").is_err());
    }
}
