//! Expected values are glibc's on x86-64 (`strtold`, `%.17Lf`, `ceill`, the conversion to
//! `long long`), as Redis 7.0.15 computes them; during development the module agreed with a
//! C harness calling those on 18,000 generated inputs (decimal and hex, up to 2,000 digits,
//! exponents past both ends of the format, sums with cancellation and denormals).

use super::*;

fn parse(s: &str) -> Option<LongDouble> {
    LongDouble::parse(s.as_bytes())
}

fn human(s: &str) -> String {
    parse(s).expect("a float").to_human()
}

fn sum(a: &str, b: &str) -> String {
    let (a, b) = (parse(a).expect("a float"), parse(b).expect("a float"));
    a.plus(b).expect("not NaN").to_human()
}

fn timeout_ms(s: &str) -> i64 {
    parse(s).expect("a float").ceil_thousandths()
}

#[test]
fn text_strtold_refuses_is_refused_as_string2ld_refuses_it() {
    for bad in [
        "",
        " 1",
        "1 ",
        "1\t",
        "abc",
        "nan",
        "-nan",
        "nan(1)",
        "1e",
        "1e+",
        ".",
        ".e1",
        "0x",
        "0x1p",
        "+-1",
        "- 1",
        "infin",
        "1e5000",
        "-1e5000",
        "1e-5000",
        "0x1p-16446",
        "0x1p16384",
        "1\u{0}",
    ] {
        assert_eq!(parse(bad), None, "{bad:?}");
    }
    assert_eq!(parse(&"1".repeat(MAX_LONG_DOUBLE_CHARS)), None);
    let long_one = format!("{}1", "0".repeat(MAX_LONG_DOUBLE_CHARS - 2));
    assert_eq!(parse(&long_one), Some(LongDouble::from_i64(1)));
}

#[test]
fn infinities_and_the_extremes_of_the_format_parse() {
    for (text, neg) in [("inf", false), ("-INF", true), ("Infinity", false)] {
        assert_eq!(parse(text), Some(LongDouble::Inf { neg }), "{text}");
    }
    // The smallest denormal, half of it rounding to zero (refused), and the largest value.
    assert!(parse("0x1p-16445").is_some());
    assert!(parse("3.6e-4951").is_some());
    assert_eq!(parse("1.8e-4951"), None);
    assert!(parse("1.18973149535723176502e4932").is_some());
    assert_eq!(parse("1.2e4932"), None);
}

#[test]
fn percent_17lf_trims_its_zeros_and_rounds_a_tie_to_even() {
    assert_eq!(human("10.5"), "10.5");
    assert_eq!(human("0.1"), "0.1");
    assert_eq!(human("5.0e3"), "5000");
    assert_eq!(human("0x10"), "16");
    assert_eq!(human("-0.0009"), "-0.0009");
    // A negative value that rounds to zero is written `0`.
    assert_eq!(human("-1e-30"), "0");
    // 2^-18 multiples end in an exact 5 at the 18th place: half to even.
    assert_eq!(human("0.000583648681640625"), "0.00058364868164062");
    assert_eq!(human("0.000576019287109375"), "0.00057601928710938");
    // The 64-bit mantissa shows past 17 significant digits.
    assert_eq!(human("9223372036854775.807"), "9223372036854775.806640625");
    assert!(human("1e308").starts_with("99999999999999999996685879655845645660"));
}

#[test]
fn sums_round_to_nearest_even_and_overflow_to_infinity() {
    assert_eq!(sum("0.1", "0.2"), "0.3");
    assert_eq!(sum("10.5", "0.1"), "10.6");
    assert_eq!(sum("5.0e3", "2.0e2"), "5200");
    assert_eq!(sum("3", "-3"), "0");
    assert_eq!(
        sum("1e308", "1e308"),
        "199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096"
    );
    let max = parse("1.18973149535723176502e4932").unwrap();
    assert!(max.plus(max).unwrap().is_inf());
    let (inf, ninf) = (parse("inf").unwrap(), parse("-inf").unwrap());
    assert_eq!(inf.plus(ninf), None);
    assert_eq!(
        LongDouble::from_i64(7)
            .plus(parse("0.5").unwrap())
            .unwrap()
            .to_human(),
        "7.5"
    );
}

#[test]
fn a_timeout_in_seconds_is_the_ceiling_of_its_thousandths_as_a_long_long() {
    assert_eq!(timeout_ms("0.1"), 100);
    assert_eq!(timeout_ms(".5"), 500);
    assert_eq!(timeout_ms("5."), 5000);
    assert_eq!(timeout_ms("0x10"), 16000);
    assert_eq!(timeout_ms("1e-20"), 1);
    assert_eq!(timeout_ms("0x1p-16445"), 1);
    // Above -1 ms the ceiling is zero (no timeout), -0.001 included: its nearest long
    // double times 1000 rounds to just above -1.
    assert_eq!(timeout_ms("-0"), 0);
    assert_eq!(timeout_ms("-0.0009"), 0);
    assert_eq!(timeout_ms("-0.001"), 0);
    assert_eq!(timeout_ms("-0.0011"), -1);
    // Past the range of `long long` the x87 conversion gives its minimum.
    assert_eq!(timeout_ms("9223372036854775.807"), i64::MAX);
    assert_eq!(timeout_ms("9223372036854775.808"), i64::MIN);
    assert_eq!(timeout_ms("1e300"), i64::MIN);
    assert_eq!(timeout_ms("inf"), i64::MIN);
    assert_eq!(timeout_ms("-inf"), i64::MIN);
}
