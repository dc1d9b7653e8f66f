//! The C `long double` of Redis on x86-64 (the x87 80-bit extended format: a 64-bit mantissa
//! with an explicit integer bit, exponents -16382..=16383, denormals down to 2^-16445),
//! emulated exactly with integers where Redis's replies depend on it:
//!
//! - `string2ld` (util.c): glibc's `strtold`, correctly rounded to nearest-even, with
//!   Redis's refusals (no leading space, nothing left over, NaN, a result that overflows or
//!   underflows to zero, 5,120 bytes or more), for decimal, hexadecimal (`0x1p-3`) and
//!   `inf`/`infinity` text;
//! - a sum rounded to nearest-even (HINCRBYFLOAT's `value += incr`);
//! - `%.17Lf` (`ld2string`'s `LD_STR_HUMAN`, glibc rounding an exact tie to even) with its
//!   trailing zeros trimmed;
//! - `(long long) ceill(v * 1000.0)` (`getTimeoutFromObjectOrReply`'s seconds, BLPOP's
//!   timeout), where a value outside the range of `long long` converts to its minimum.
//!
//! No float of the host is used: the same inputs give the same replies on every machine,
//! and a timeout, which orders events, is an integer computed from the text.

use std::cmp::Ordering;

/// `MAX_LONG_DOUBLE_CHARS` (util.h): `string2ld` refuses text of this length or more.
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;
/// The weight of the least significant mantissa bit of the smallest denormal, and of every
/// denormal: 2^-16445.
const MIN_LSB_EXP: i64 = -16445;
/// The largest exponent of a finite value's top bit.
const MAX_TOP_EXP: i64 = 16383;

/// A finite or infinite `long double` (NaN is never kept: every path that would make one
/// refuses first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongDouble {
    /// `(-1)^neg × mant × 2^exp`.
    // Invariant: a normal value has the top bit of `mant` set and `exp` in
    // MIN_LSB_EXP..=MAX_TOP_EXP - 63; a denormal (or zero) has `exp == MIN_LSB_EXP`.
    Finite {
        neg: bool,
        mant: u64,
        exp: i64,
    },
    Inf {
        neg: bool,
    },
}

/// A value rounded to the format: what `strtold` and the arithmetic can end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rounded {
    Value(LongDouble),
    /// Past the largest finite value: infinity (ERANGE for `strtold`).
    Overflow {
        neg: bool,
    },
    /// A non-zero value that rounds to zero (ERANGE for `strtold`).
    Underflow {
        neg: bool,
    },
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble::Finite {
        neg: false,
        mant: 0,
        exp: MIN_LSB_EXP,
    };

    /// `string2ld`: the value of `s`, or `None` where Redis refuses it.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS || is_c_space(s[0]) {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = body.to_ascii_lowercase();
        if lower == b"inf" || lower == b"infinity" {
            return Some(LongDouble::Inf { neg });
        }
        let rounded = if lower.starts_with(b"0x") {
            parse_hex(&body[2..], neg)?
        } else {
            parse_decimal(body, neg)?
        };
        match rounded {
            Rounded::Value(v) => Some(v),
            // ERANGE with HUGE_VAL or zero: refused.
            Rounded::Overflow { .. } | Rounded::Underflow { .. } => None,
        }
    }

    /// A signed integer's value (exact: it fits the 64-bit mantissa).
    pub fn from_i64(n: i64) -> LongDouble {
        let neg = n < 0;
        round(neg, u128::from(n.unsigned_abs()), 0, false).value()
    }

    pub fn is_inf(self) -> bool {
        matches!(self, LongDouble::Inf { .. })
    }

    /// `self + other` (C's `+`), rounded to nearest-even; `None` for infinity minus infinity (NaN).
    pub fn plus(self, other: LongDouble) -> Option<LongDouble> {
        use LongDouble::{Finite, Inf};
        let (
            Finite {
                neg: na,
                mant: ma,
                exp: ea,
            },
            Finite {
                neg: nb,
                mant: mb,
                exp: eb,
            },
        ) = (self, other)
        else {
            return match (self, other) {
                (Inf { neg: a }, Inf { neg: b }) if a != b => None,
                (Inf { neg }, _) | (_, Inf { neg }) => Some(Inf { neg }),
                _ => unreachable!("two finite values are handled below"),
            };
        };
        // Both as integers at the weight of the smaller exponent; past 62 bits apart the
        // smaller one only decides the rounding (a sticky bit below the larger's 62 extra
        // bits of precision: enough for round-to-nearest).
        let ((n_hi, m_hi, e_hi), (n_lo, m_lo, e_lo)) = if ea >= eb {
            ((na, ma, ea), (nb, mb, eb))
        } else {
            ((nb, mb, eb), (na, ma, ea))
        };
        let d = (e_hi - e_lo) as u64;
        let (hi, lo, weight, sticky) = if d <= 62 {
            (u128::from(m_hi) << d, u128::from(m_lo), e_lo, false)
        } else {
            let shift = d - 62;
            let lo = if shift >= 64 {
                0
            } else {
                u128::from(m_lo >> shift)
            };
            let lost = shift >= 64 || m_lo & ((1u64 << shift) - 1) != 0;
            (u128::from(m_hi) << 62, lo, e_hi - 62, lost && m_lo != 0)
        };
        let (neg, sig, sticky) = if n_hi == n_lo {
            (n_hi, hi + lo, sticky)
        } else {
            match hi.cmp(&lo) {
                // A sticky bit taken away from the larger: one less, with the bit set.
                Ordering::Greater if sticky => (n_hi, hi - lo - 1, true),
                Ordering::Greater => (n_hi, hi - lo, false),
                Ordering::Less => (n_lo, lo - hi, sticky),
                // Exact cancellation gives +0 in round-to-nearest.
                Ordering::Equal => return Some(LongDouble::ZERO),
            }
        };
        Some(match round(neg, sig, weight, sticky) {
            Rounded::Value(v) => v,
            Rounded::Overflow { neg } => LongDouble::Inf { neg },
            Rounded::Underflow { neg } => LongDouble::Finite {
                neg,
                mant: 0,
                exp: MIN_LSB_EXP,
            },
        })
    }

    /// `(long long) ceill(self * 1000.0)`: the product rounded to the format, its ceiling,
    /// and the x87 conversion, which gives `i64::MIN` for anything out of range.
    pub fn ceil_thousandths(self) -> i64 {
        let LongDouble::Finite { neg, mant, exp } = self else {
            return i64::MIN;
        };
        let LongDouble::Finite { mant, exp, .. } =
            (match round(neg, u128::from(mant) * 1000, exp, false) {
                Rounded::Value(v) => v,
                Rounded::Overflow { .. } => return i64::MIN,
                Rounded::Underflow { .. } => unreachable!("a product by 1000 is not smaller"),
            })
        else {
            unreachable!("`round` gives a finite value")
        };
        // |v| = mant × 2^exp; the ceiling of v is ceil(|v|) for v > 0, -floor(|v|) for v < 0.
        let magnitude: u128 = if exp >= 0 {
            if exp > 64 {
                return i64::MIN;
            }
            u128::from(mant) << exp
        } else {
            let shift = (-exp) as u32;
            let (whole, frac) = if shift >= 64 {
                (0, mant != 0)
            } else {
                (mant >> shift, mant & ((1u64 << shift) - 1) != 0)
            };
            u128::from(whole) + u128::from(frac && !neg)
        };
        if neg {
            if magnitude > 1u128 << 63 {
                i64::MIN
            } else {
                (magnitude as i128).wrapping_neg() as i64
            }
        } else {
            i64::try_from(magnitude).unwrap_or(i64::MIN)
        }
    }

    /// `ld2string(..., LD_STR_HUMAN)` of a finite value: `%.17Lf`, trailing zeros (and a bare
    /// point) trimmed, `-0` written `0`. Infinities are written `inf` / `-inf`.
    pub fn to_human(self) -> String {
        let (neg, mant, exp) = match self {
            LongDouble::Inf { neg: false } => return "inf".into(),
            LongDouble::Inf { neg: true } => return "-inf".into(),
            LongDouble::Finite { neg, mant, exp } => (neg, mant, exp),
        };
        let scaled = fixed_digits(mant, exp, 17);
        let mut digits = scaled.to_decimal();
        if digits.len() < 18 {
            digits = format!("{}{digits}", "0".repeat(18 - digits.len()));
        }
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut out = String::with_capacity(digits.len() + 2);
        if neg {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        if out == "-0" {
            out = "0".into();
        }
        out
    }
}

impl Rounded {
    fn value(self) -> LongDouble {
        match self {
            Rounded::Value(v) => v,
            _ => unreachable!("an exact integer of 64 bits or less is representable"),
        }
    }
}

/// C's `isspace` in the "C" locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Rounds `sig × 2^weight` (and a sticky bit below `sig`: something non-zero was cut off
/// below its last bit) to the format, to nearest-even.
fn round(neg: bool, sig: u128, weight: i64, sticky: bool) -> Rounded {
    if sig == 0 {
        return if sticky {
            Rounded::Underflow { neg }
        } else {
            Rounded::Value(LongDouble::Finite {
                neg,
                mant: 0,
                exp: MIN_LSB_EXP,
            })
        };
    }
    let top = i64::from(127 - sig.leading_zeros()) + weight;
    let lsb = (top - 63).max(MIN_LSB_EXP);
    let drop = lsb - weight;
    let mut m: u128 = if drop <= 0 {
        // Exact: nothing is cut off (and nothing was below, or `drop` would be positive).
        sig << (-drop)
    } else if drop > 128 {
        // Everything is cut off, and it is less than half of the last kept bit.
        0
    } else if drop == 128 {
        let half = 1u128 << 127;
        u128::from(sig > half || (sig == half && sticky))
    } else {
        let d = drop as u32;
        let kept = sig >> d;
        let rest = sig & ((1u128 << d) - 1);
        let half = 1u128 << (d - 1);
        let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
        kept + u128::from(up)
    };
    let mut lsb = lsb;
    if m == 1u128 << 64 {
        m >>= 1;
        lsb += 1;
    }
    if m == 0 {
        return Rounded::Underflow { neg };
    }
    if i64::from(127 - m.leading_zeros()) + lsb > MAX_TOP_EXP {
        return Rounded::Overflow { neg };
    }
    Rounded::Value(LongDouble::Finite {
        neg,
        mant: m as u64,
        exp: lsb,
    })
}

/// `P / Q × 2^scale` rounded to the format (P, Q > 0 unless P is zero).
fn round_ratio(neg: bool, p: &Nat, q: &Nat, scale: i64) -> Rounded {
    if p.is_zero() {
        return round(neg, 0, 0, false);
    }
    // A quotient of 66 to 68 bits: at least two bits below the 64 kept.
    let s = 67 - (p.bits() as i64 - q.bits() as i64);
    let (a, b) = if s >= 0 {
        (p.shl(s as u64), q.clone())
    } else {
        (p.clone(), q.shl((-s) as u64))
    };
    let (quot, sticky) = a.div_small(&b);
    round(neg, quot, scale - s, sticky)
}

/// Decimal text after the sign: digits with an optional point (at least one digit), then an
/// optional exponent. `None`: not all of it is a number.
fn parse_decimal(s: &[u8], neg: bool) -> Option<Rounded> {
    let mut i = 0;
    let mut digits: Vec<u8> = Vec::new();
    let mut frac_digits: i64 = 0;
    let mut seen_digit = false;
    while i < s.len() && s[i].is_ascii_digit() {
        digits.push(s[i] - b'0');
        seen_digit = true;
        i += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            digits.push(s[i] - b'0');
            frac_digits += 1;
            seen_digit = true;
            i += 1;
        }
    }
    if !seen_digit {
        return None;
    }
    let mut exp10: i64 = 0;
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        let (e, used) = parse_exponent(&s[i + 1..])?;
        exp10 = e;
        i += 1 + used;
    }
    if i != s.len() {
        return None;
    }
    // Leading and trailing zeros change nothing but the work.
    let first = digits.iter().position(|&d| d != 0);
    let Some(first) = first else {
        return Some(round(neg, 0, 0, false));
    };
    let last = digits.iter().rposition(|&d| d != 0).unwrap_or(first);
    let trailing = (digits.len() - 1 - last) as i64;
    let digits = &digits[first..=last];
    let exp10 = exp10.saturating_add(trailing).saturating_sub(frac_digits);
    let magnitude = exp10.saturating_add(digits.len() as i64);
    // Far outside the format either way (10^4934 > the largest finite value; 10^-4952 is
    // below half the smallest denormal): no arithmetic needed.
    if magnitude > 4934 {
        return Some(Rounded::Overflow { neg });
    }
    if magnitude < -4952 {
        return Some(Rounded::Underflow { neg });
    }
    let n = Nat::from_digits(digits, 10);
    Some(if exp10 >= 0 {
        round_ratio(neg, &n.mul(&Nat::pow10(exp10 as u64)), &Nat::one(), 0)
    } else {
        round_ratio(neg, &n, &Nat::pow10((-exp10) as u64), 0)
    })
}

/// Hexadecimal text after `0x`: hex digits with an optional point (at least one digit),
/// then an optional binary exponent `p[+-]digits`.
fn parse_hex(s: &[u8], neg: bool) -> Option<Rounded> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut i = 0;
    let mut digits: Vec<u8> = Vec::new();
    let mut frac_digits: i64 = 0;
    let mut seen_digit = false;
    while let Some(d) = s.get(i).and_then(|&c| hex(c)) {
        digits.push(d);
        seen_digit = true;
        i += 1;
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        while let Some(d) = s.get(i).and_then(|&c| hex(c)) {
            digits.push(d);
            frac_digits += 1;
            seen_digit = true;
            i += 1;
        }
    }
    if !seen_digit {
        return None;
    }
    let mut exp2: i64 = 0;
    if i < s.len() && (s[i] == b'p' || s[i] == b'P') {
        let (e, used) = parse_exponent(&s[i + 1..])?;
        exp2 = e;
        i += 1 + used;
    }
    if i != s.len() {
        return None;
    }
    let Some(first) = digits.iter().position(|&d| d != 0) else {
        return Some(round(neg, 0, 0, false));
    };
    let digits = &digits[first..];
    let scale = exp2.saturating_sub(frac_digits.saturating_mul(4));
    // The exponent of the top bit: at least the value's, at most one below what it rounds to.
    let first_bits = i64::from(8 - digits[0].leading_zeros());
    let top = scale.saturating_add(4 * (digits.len() as i64 - 1) + first_bits - 1);
    if top > MAX_TOP_EXP {
        return Some(Rounded::Overflow { neg });
    }
    if top < MIN_LSB_EXP - 2 {
        return Some(Rounded::Underflow { neg });
    }
    Some(round_ratio(
        neg,
        &Nat::from_digits(digits, 16),
        &Nat::one(),
        scale,
    ))
}

/// `[+-]digits` of an exponent: its value (saturated far past any format) and the bytes
/// read. `None` without a digit (strtold would stop before the `e`, leaving text over).
fn parse_exponent(s: &[u8]) -> Option<(i64, usize)> {
    let (neg, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut i = start;
    let mut v: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = (v * 10 + i64::from(s[i] - b'0')).min(1 << 40);
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -v } else { v }, i))
}

/// `mant × 2^exp × 10^places` rounded to the nearest integer (an exact tie to even), as
/// printf's `%.<places>Lf` rounds its last digit.
fn fixed_digits(mant: u64, exp: i64, places: u64) -> Nat {
    let scaled = Nat::from_u128(u128::from(mant)).mul(&Nat::pow10(places));
    if exp >= 0 {
        return scaled.shl(exp as u64);
    }
    let shift = (-exp) as u64;
    if shift > scaled.bits() + 1 {
        return Nat::zero();
    }
    let kept = scaled.shr(shift);
    let cut = scaled.sub(&kept.shl(shift));
    let half = Nat::one().shl(shift - 1);
    let up = match cut.cmp(&half) {
        Ordering::Greater => true,
        Ordering::Equal => kept.is_odd(),
        Ordering::Less => false,
    };
    if up { kept.add_small(1) } else { kept }
}

/// A natural number as little-endian 32-bit limbs, with only what the conversions need.
// Invariant: no trailing zero limb (zero is the empty vector).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Nat(Vec<u32>);

impl Nat {
    fn zero() -> Nat {
        Nat(Vec::new())
    }
    fn one() -> Nat {
        Nat(vec![1])
    }
    fn from_u128(mut v: u128) -> Nat {
        let mut limbs = Vec::new();
        while v != 0 {
            limbs.push(v as u32);
            v >>= 32;
        }
        Nat(limbs)
    }
    fn trimmed(mut self) -> Nat {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self
    }
    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
    fn is_odd(&self) -> bool {
        self.0.first().is_some_and(|l| l & 1 == 1)
    }
    fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(top) => 32 * (self.0.len() as u64 - 1) + u64::from(32 - top.leading_zeros()),
        }
    }
    /// Digits in `base` (10 or 16), most significant first.
    fn from_digits(digits: &[u8], base: u32) -> Nat {
        let mut n = Nat::zero();
        for chunk in digits.chunks(7) {
            let mul = base.pow(chunk.len() as u32);
            let add = chunk.iter().fold(0u32, |acc, &d| acc * base + u32::from(d));
            n = n.mul_small(mul).add_small(add);
        }
        n
    }
    fn pow10(n: u64) -> Nat {
        let mut r = Nat::one();
        let mut left = n;
        while left > 0 {
            let step = left.min(9);
            r = r.mul_small(10u32.pow(step as u32));
            left -= step;
        }
        r
    }
    fn mul_small(&self, m: u32) -> Nat {
        let mut carry = 0u64;
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for &l in &self.0 {
            let v = u64::from(l) * u64::from(m) + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        if carry != 0 {
            out.push(carry as u32);
        }
        Nat(out).trimmed()
    }
    fn add_small(&self, a: u32) -> Nat {
        let mut out = self.0.clone();
        let mut carry = u64::from(a);
        for l in &mut out {
            if carry == 0 {
                break;
            }
            let v = u64::from(*l) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            out.push(carry as u32);
        }
        Nat(out).trimmed()
    }
    fn mul(&self, other: &Nat) -> Nat {
        let mut out = vec![0u32; self.0.len() + other.0.len()];
        for (i, &a) in self.0.iter().enumerate() {
            let mut carry = 0u64;
            for (j, &b) in other.0.iter().enumerate() {
                let v = u64::from(out[i + j]) + u64::from(a) * u64::from(b) + carry;
                out[i + j] = v as u32;
                carry = v >> 32;
            }
            let mut k = i + other.0.len();
            while carry != 0 {
                let v = u64::from(out[k]) + carry;
                out[k] = v as u32;
                carry = v >> 32;
                k += 1;
            }
        }
        Nat(out).trimmed()
    }
    fn shl(&self, bits: u64) -> Nat {
        if self.is_zero() {
            return Nat::zero();
        }
        let (limbs, rem) = ((bits / 32) as usize, (bits % 32) as u32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            if rem == 0 {
                out.push(l);
            } else {
                out.push((l << rem) | carry);
                carry = l >> (32 - rem);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        Nat(out).trimmed()
    }
    fn shr(&self, bits: u64) -> Nat {
        let (limbs, rem) = ((bits / 32) as usize, (bits % 32) as u32);
        if limbs >= self.0.len() {
            return Nat::zero();
        }
        let src = &self.0[limbs..];
        let out = (0..src.len())
            .map(|i| {
                let hi = src.get(i + 1).copied().unwrap_or(0);
                if rem == 0 {
                    src[i]
                } else {
                    (src[i] >> rem) | (hi << (32 - rem))
                }
            })
            .collect();
        Nat(out).trimmed()
    }
    /// `self - other`, `other <= self`.
    fn sub(&self, other: &Nat) -> Nat {
        let mut out = self.0.clone();
        let mut borrow = 0i64;
        for (i, l) in out.iter_mut().enumerate() {
            let b = i64::from(other.0.get(i).copied().unwrap_or(0));
            let mut v = i64::from(*l) - b - borrow;
            borrow = i64::from(v < 0);
            if v < 0 {
                v += 1 << 32;
            }
            *l = v as u32;
        }
        debug_assert_eq!(borrow, 0, "sub of a larger number");
        Nat(out).trimmed()
    }
    /// `self / d` for a quotient known to be below 2^127, and whether a remainder was left.
    fn div_small(&self, d: &Nat) -> (u128, bool) {
        if self.cmp(d) == Ordering::Less {
            return (0, !self.is_zero());
        }
        let shift = self.bits() - d.bits();
        debug_assert!(shift < 127, "a quotient too large for div_small");
        let mut rest = self.clone();
        let mut step = d.shl(shift);
        let mut q: u128 = 0;
        for i in (0..=shift).rev() {
            if rest.cmp(&step) != Ordering::Less {
                rest = rest.sub(&step);
                q |= 1u128 << i;
            }
            step = step.shr(1);
        }
        (q, !rest.is_zero())
    }
    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut chunks: Vec<u32> = Vec::new();
        let mut n = self.0.clone();
        while !n.is_empty() {
            let mut rem = 0u64;
            for l in n.iter_mut().rev() {
                let v = (rem << 32) | u64::from(*l);
                *l = (v / 1_000_000_000) as u32;
                rem = v % 1_000_000_000;
            }
            chunks.push(rem as u32);
            while n.last() == Some(&0) {
                n.pop();
            }
        }
        let mut s = chunks.last().map(u32::to_string).unwrap_or_default();
        for c in chunks.iter().rev().skip(1) {
            s.push_str(&format!("{c:09}"));
        }
        s
    }
}

impl PartialOrd for Nat {
    fn partial_cmp(&self, other: &Nat) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Nat {
    fn cmp(&self, other: &Nat) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests;
