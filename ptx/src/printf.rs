// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device `printf` (`vprintf(format, args)`) formatting, following glibc's `printf`, which is
//! what formats CUDA's device printf output on the host.

/// Where the interpreter gets `vprintf` arguments from.
pub(crate) trait Args {
    /// Reads `size` (4 or 8) bytes at `offset` of the argument buffer.
    fn arg(&mut self, offset: u64, size: u32) -> Option<u64>;
    /// Reads a NUL-terminated string at a generic address, at most `max` bytes.
    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>>;
}

/// Longest `%s` string read from device memory.
const MAX_STR: usize = 1 << 16;

/// Formats `fmt` with the packed argument buffer. Returns the text and the number of arguments
/// consumed; `None` if an argument could not be read.
pub(crate) fn format(fmt: &[u8], args: &mut dyn Args) -> Option<(Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut off = 0u64;
    let mut nargs = 0u32;
    let mut i = 0;
    let mut next = |size: u32, args: &mut dyn Args| -> Option<u64> {
        off = off.div_ceil(size as u64) * size as u64;
        let v = args.arg(off, size)?;
        off += size as u64;
        nargs += 1;
        Some(v)
    };
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut spec = Spec::default();
        while let Some(&f) = fmt.get(i) {
            match f {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            i += 1;
            let w = next(4, args)? as u32 as i32;
            if w < 0 {
                spec.left = true;
            }
            spec.width = w.unsigned_abs() as usize;
        } else {
            while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                spec.width = (spec.width * 10 + (d - b'0') as usize).min(4096);
                i += 1;
            }
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            let mut p = 0usize;
            if fmt.get(i) == Some(&b'*') {
                i += 1;
                let v = next(4, args)? as u32 as i32;
                spec.prec = if v < 0 { None } else { Some(v as usize) };
            } else {
                while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                    p = (p * 10 + (d - b'0') as usize).min(4096);
                    i += 1;
                }
                spec.prec = Some(p);
            }
        }
        let mut long = false;
        while let Some(&l) = fmt.get(i) {
            match l {
                b'l' | b'z' | b'j' | b't' | b'L' | b'q' => long = true,
                b'h' => {}
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        let isize = if long { 8 } else { 4 };
        match conv {
            b'd' | b'i' => {
                let v = next(isize, args)?;
                let v = if long {
                    v as i64
                } else {
                    v as u32 as i32 as i64
                };
                let digits = v.unsigned_abs().to_string();
                let sign = if v < 0 {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                spec.int(&mut out, sign, "", &digits, v == 0);
            }
            b'u' | b'o' | b'x' | b'X' => {
                let v = next(isize, args)?;
                let v = if long { v } else { v as u32 as u64 };
                let digits = match conv {
                    b'u' => v.to_string(),
                    b'o' => format!("{v:o}"),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                };
                let prefix = match conv {
                    b'x' if spec.alt && v != 0 => "0x",
                    b'X' if spec.alt && v != 0 => "0X",
                    _ => "",
                };
                let digits = if conv == b'o' && spec.alt && !digits.starts_with('0') {
                    format!("0{digits}")
                } else {
                    digits
                };
                spec.int(&mut out, "", prefix, &digits, v == 0 && conv != b'o');
            }
            b'c' => {
                let v = next(4, args)? as u8;
                spec.pad(&mut out, &[v]);
            }
            b's' => {
                let p = next(8, args)?;
                let s = if p == 0 {
                    b"(null)".to_vec()
                } else {
                    args.string(p, spec.prec.unwrap_or(MAX_STR).min(MAX_STR))?
                };
                let s = match spec.prec {
                    Some(n) if n < s.len() => &s[..n],
                    _ => &s[..],
                };
                spec.pad(&mut out, s);
            }
            b'p' => {
                let p = next(8, args)?;
                let s = if p == 0 {
                    "(nil)".to_string()
                } else {
                    format!("0x{p:x}")
                };
                spec.zero = false;
                spec.pad(&mut out, s.as_bytes());
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let v = f64::from_bits(next(8, args)?);
                let body = float(v, conv, &spec);
                let sign = if v.is_sign_negative() && !v.is_nan() {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                let finite = v.is_finite();
                spec.num(&mut out, sign, &body, finite);
            }
            b'%' => out.push(b'%'),
            b'n' => {
                next(8, args)?;
            }
            _ => out.extend_from_slice(&fmt[start..i]),
        }
    }
    Some((out, nargs))
}

#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

impl Spec {
    fn pad(&self, out: &mut Vec<u8>, s: &[u8]) {
        let fill = self.width.saturating_sub(s.len());
        if !self.left {
            out.extend(std::iter::repeat_n(b' ', fill));
        }
        out.extend_from_slice(s);
        if self.left {
            out.extend(std::iter::repeat_n(b' ', fill));
        }
    }

    fn int(&self, out: &mut Vec<u8>, sign: &str, prefix: &str, digits: &str, zero: bool) {
        let digits = match self.prec {
            Some(0) if zero => String::new(),
            Some(p) if p > digits.len() => format!("{}{digits}", "0".repeat(p - digits.len())),
            _ => digits.to_string(),
        };
        let body_len = sign.len() + prefix.len() + digits.len();
        let fill = self.width.saturating_sub(body_len);
        if self.left {
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(digits.as_bytes());
            out.extend(std::iter::repeat_n(b' ', fill));
        } else if self.zero && self.prec.is_none() {
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(prefix.as_bytes());
            out.extend(std::iter::repeat_n(b'0', fill));
            out.extend_from_slice(digits.as_bytes());
        } else {
            out.extend(std::iter::repeat_n(b' ', fill));
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(digits.as_bytes());
        }
    }

    fn num(&self, out: &mut Vec<u8>, sign: &str, body: &str, finite: bool) {
        let fill = self.width.saturating_sub(sign.len() + body.len());
        if self.left {
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(body.as_bytes());
            out.extend(std::iter::repeat_n(b' ', fill));
        } else if self.zero && finite {
            out.extend_from_slice(sign.as_bytes());
            out.extend(std::iter::repeat_n(b'0', fill));
            out.extend_from_slice(body.as_bytes());
        } else {
            out.extend(std::iter::repeat_n(b' ', fill));
            out.extend_from_slice(sign.as_bytes());
            out.extend_from_slice(body.as_bytes());
        }
    }
}

/// Formats |v| for a float conversion (sign handled by the caller).
fn float(v: f64, conv: u8, spec: &Spec) -> String {
    let upper = conv.is_ascii_uppercase();
    let a = v.abs();
    if !a.is_finite() {
        let s = if a.is_nan() { "nan" } else { "inf" };
        return if upper {
            s.to_uppercase()
        } else {
            s.to_string()
        };
    }
    let prec = spec.prec.unwrap_or(6);
    let s = match conv {
        b'f' | b'F' => {
            let mut s = format!("{a:.prec$}");
            if spec.alt && prec == 0 {
                s.push('.');
            }
            s
        }
        b'e' | b'E' | b'a' | b'A' => exp_form(a, prec, spec.alt),
        _ => {
            let p = if prec == 0 { 1 } else { prec };
            // Exponent after rounding to p significant digits.
            let e = exp_form(a, p - 1, false);
            let x: i32 = e
                .rsplit_once('e')
                .and_then(|(_, x)| x.parse().ok())
                .unwrap_or(0);
            let mut s = if (p as i32) > x && x >= -4 {
                let fp = (p as i32 - 1 - x).max(0) as usize;
                format!("{a:.fp$}")
            } else {
                exp_form(a, p - 1, false)
            };
            if !spec.alt {
                s = strip_zeros(&s);
            } else if !s.contains('.') {
                if let Some(k) = s.find('e') {
                    s.insert(k, '.');
                } else {
                    s.push('.');
                }
            }
            s
        }
    };
    if upper { s.to_uppercase() } else { s }
}

/// `d.dddde+XX` with `prec` fraction digits.
fn exp_form(a: f64, prec: usize, alt: bool) -> String {
    let s = format!("{a:.prec$e}");
    let (m, x) = s.split_once('e').unwrap_or((&s, "0"));
    let x: i32 = x.parse().unwrap_or(0);
    let mut m = m.to_string();
    if alt && prec == 0 {
        m.push('.');
    }
    format!(
        "{m}e{}{:02}",
        if x < 0 { '-' } else { '+' },
        x.unsigned_abs()
    )
}

fn strip_zeros(s: &str) -> String {
    let (m, e) = match s.find('e') {
        Some(k) => (&s[..k], &s[k..]),
        None => (s, ""),
    };
    let m = if m.contains('.') {
        m.trim_end_matches('0').trim_end_matches('.')
    } else {
        m
    };
    format!("{m}{e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Buf(Vec<u8>, Vec<(u64, Vec<u8>)>);
    impl Args for Buf {
        fn arg(&mut self, offset: u64, size: u32) -> Option<u64> {
            let b = self
                .0
                .get(offset as usize..(offset + size as u64) as usize)?;
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            Some(u64::from_le_bytes(v))
        }
        fn string(&mut self, addr: u64, _max: usize) -> Option<Vec<u8>> {
            self.1
                .iter()
                .find(|(a, _)| *a == addr)
                .map(|(_, s)| s.clone())
        }
    }

    fn fmt(f: &str, args: &[u8]) -> String {
        let mut b = Buf(args.to_vec(), vec![(0x100, b"hello".to_vec())]);
        String::from_utf8(format(f.as_bytes(), &mut b).unwrap().0).unwrap()
    }

    #[test]
    fn formats_like_glibc() {
        let mut a = Vec::new();
        a.extend_from_slice(&(-42i32).to_le_bytes());
        a.extend_from_slice(&255u32.to_le_bytes());
        a.extend_from_slice(&3.25f64.to_le_bytes());
        a.extend_from_slice(&0x100u64.to_le_bytes());
        a.extend_from_slice(&(-7i64).to_le_bytes());
        assert_eq!(
            fmt("%d|%5x|%.2f|%s|%lld|%%", &a),
            "-42|   ff|3.25|hello|-7|%"
        );
        assert_eq!(fmt("[%-6d][%06d]", &a), "[-42   ][000255]");
        assert_eq!(
            fmt("[%06d][%+d]", &[214, 255, 255, 255, 1, 0, 0, 0]),
            "[-00042][+1]"
        );
        let g = |v: f64, f: &str| fmt(f, &v.to_le_bytes());
        assert_eq!(g(1234567.0, "%g"), "1.23457e+06");
        assert_eq!(g(0.0001, "%g"), "0.0001");
        assert_eq!(g(100.0, "%g"), "100");
        assert_eq!(g(1.5e-10, "%e"), "1.500000e-10");
        assert_eq!(g(2.5, "%10.2e"), "  2.50e+00");
        assert_eq!(g(f64::INFINITY, "%f"), "inf");
        assert_eq!(g(-0.5, "%G"), "-0.5");
        assert_eq!(
            fmt(
                "%p %p",
                &[0x34, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            ),
            "0x1234 (nil)"
        );
        assert_eq!(
            fmt("%.2s|%8s|", &0x100u64.to_le_bytes().repeat(2)),
            "he|   hello|"
        );
        assert_eq!(fmt("%c%c", &[65, 0, 0, 0, 66, 0, 0, 0]), "AB");
        assert!(format(b"%d", &mut Buf(vec![], vec![])).is_none());
    }
}
