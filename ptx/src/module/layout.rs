// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Small helpers of lowering shared by its passes: positioned errors, alignment, types and
//! the size and alignment of a declared variable.

use super::defs::MAX_VAR_BYTES;
use crate::{ast::Pos, error::ParseError, types::Ty};

pub(super) fn perr(pos: Pos, what: impl Into<String>) -> ParseError {
    ParseError::new(pos.line, pos.col, what)
}

pub(super) fn align_up(v: u64, a: u64) -> u64 {
    let a = a.max(1);
    v.div_ceil(a).saturating_mul(a)
}

pub(super) fn type_of(name: &str, pos: Pos) -> Result<Ty, ParseError> {
    Ty::parse(name).ok_or_else(|| perr(pos, format!("a type, not `.{name}`")))
}

/// Size/alignment of a declared variable.
pub(super) fn var_layout(
    ty: &str,
    vec: u32,
    dims: &[Option<u64>],
    align: Option<u64>,
    init_len: Option<u64>,
    pos: Pos,
) -> Result<(u64, u64, Ty), ParseError> {
    let t = match ty {
        "texref" | "samplerref" | "surfref" => Ty::B64,
        _ => type_of(ty, pos)?,
    };
    let elem = t.size() as u64 * vec as u64;
    let mut count = 1u64;
    for (k, d) in dims.iter().enumerate() {
        let n = match d {
            Some(n) => *n,
            // `x[]`: sized by the initializer (first dimension only), else 0 (extern).
            None if k == 0 => init_len.map_or(0, |l| l.div_ceil(elem.max(1))),
            None => 0,
        };
        count = count
            .checked_mul(n)
            .ok_or_else(|| perr(pos, "a smaller array"))?;
    }
    let size = elem
        .checked_mul(count)
        .filter(|s| *s <= MAX_VAR_BYTES)
        .ok_or_else(|| perr(pos, "a smaller variable"))?;
    let a = align.unwrap_or(elem).max(1);
    if !a.is_power_of_two() || a > 1 << 16 {
        return Err(perr(pos, "a power-of-two alignment"));
    }
    Ok((size, a, t))
}
