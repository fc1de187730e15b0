//! Human-readable sizes (`64KiB`, `1.5 MiB`, `50000`) and durations (`7d`, `90s`).
//!
//! Both types parse strictly: a bad value is an error that names the value and
//! says what would have been accepted; nothing is silently rounded or clamped.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// A number of bytes, parsed from and printed in human form.
///
/// Accepted forms: a plain integer (`50000`), or a number with a unit
/// (`64KiB`, `1.5 MiB`, `2GB`). Binary units (`KiB`, `MiB`, `GiB`, `TiB`, and the
/// short forms `K`, `M`, `G`, `T`) are powers of 1024; decimal units (`kB`,
/// `MB`, `GB`, `TB`) are powers of 1000. Units are case-insensitive and may be
/// separated from the number by spaces. A fraction must come out to a whole
/// number of bytes.
///
/// # Examples
///
/// ```
/// use spillway::ByteSize;
/// assert_eq!("64KiB".parse::<ByteSize>().unwrap().get(), 65_536);
/// assert_eq!("1.5 MiB".parse::<ByteSize>().unwrap().get(), 1_572_864);
/// assert_eq!(ByteSize::new(65_536).to_string(), "64 KiB");
/// assert!("-1".parse::<ByteSize>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(u64);

impl ByteSize {
    /// Wraps a byte count.
    pub const fn new(bytes: u64) -> Self {
        ByteSize(bytes)
    }

    /// The byte count.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// Why a size or a duration could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseUnitError {
    input: String,
    reason: &'static str,
}

impl fmt::Display for ParseUnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid value {:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for ParseUnitError {}

fn unit_err(input: &str, reason: &'static str) -> ParseUnitError {
    let mut shown: String = input.chars().take(64).collect();
    if shown.len() < input.len() {
        shown.push('…');
    }
    ParseUnitError {
        input: shown,
        reason,
    }
}

/// Splits `"1.5 MiB"` into `("1.5", "MiB")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

/// Multiplies a decimal string by `scale`, exactly, failing on overflow or on a
/// fractional result.
fn scaled(input: &str, number: &str, scale: u64) -> Result<u64, ParseUnitError> {
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(unit_err(input, "expected a number, such as 50000 or 64KiB"));
    }
    if frac.contains('.') || frac.len() > 18 {
        return Err(unit_err(input, "malformed number"));
    }
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| unit_err(input, "number is too large"))?
    };
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse()
            .map_err(|_| unit_err(input, "malformed number"))?
    };
    let denom = 10u128.pow(frac.len() as u32);
    let total = int_v
        .checked_mul(denom)
        .and_then(|v| v.checked_add(frac_v))
        .and_then(|v| v.checked_mul(u128::from(scale)))
        .ok_or_else(|| unit_err(input, "number is too large"))?;
    if total % denom != 0 {
        return Err(unit_err(input, "not a whole number"));
    }
    u64::try_from(total / denom).map_err(|_| unit_err(input, "number is too large"))
}

impl FromStr for ByteSize {
    type Err = ParseUnitError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        if s.starts_with('-') {
            return Err(unit_err(input, "a size cannot be negative"));
        }
        let (number, unit) = split_number(s);
        let scale: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            _ => {
                return Err(unit_err(
                    input,
                    "unknown unit (use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB)",
                ))
            }
        };
        scaled(input, number, scale).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    /// Prints the largest binary unit that keeps at least one whole unit, with
    /// up to one decimal (`64 KiB`, `1.5 MiB`, `999 B`). Exact multiples print
    /// without a decimal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, scale) in UNITS {
            if self.0 >= scale {
                if self.0.is_multiple_of(scale) {
                    return write!(f, "{} {name}", self.0 / scale);
                }
                let tenths = (u128::from(self.0) * 10 + u128::from(scale) / 2) / u128::from(scale);
                return write!(f, "{}.{} {name}", tenths / 10, tenths % 10);
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte count such as 50000 or \"64KiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ByteSize, E> {
                Err(E::custom(format!(
                    "a size must be a whole number of bytes, not {v}"
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A span of time in human form: `90s`, `15m`, `12h`, `7d`, `2w`, or a
/// combination such as `1d12h`. A bare number is seconds.
///
/// # Examples
///
/// ```
/// use spillway::HumanDuration;
/// let d: HumanDuration = "1d12h".parse().unwrap();
/// assert_eq!(d.get().as_secs(), 36 * 3600);
/// assert_eq!(d.to_string(), "1d12h");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(Duration);

impl HumanDuration {
    /// Wraps a duration.
    pub const fn new(d: Duration) -> Self {
        HumanDuration(d)
    }

    /// The duration.
    pub const fn get(self) -> Duration {
        self.0
    }
}

impl FromStr for HumanDuration {
    type Err = ParseUnitError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut s = input.trim();
        if s.is_empty() {
            return Err(unit_err(
                input,
                "expected a duration such as 90s, 12h or 7d",
            ));
        }
        if s.starts_with('-') {
            return Err(unit_err(input, "a duration cannot be negative"));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            let secs = s
                .parse::<u64>()
                .map_err(|_| unit_err(input, "number is too large"))?;
            return Ok(HumanDuration(Duration::from_secs(secs)));
        }
        let mut total: u64 = 0;
        while !s.is_empty() {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            if end == 0 {
                return Err(unit_err(input, "expected a number before each unit"));
            }
            let n: u64 = s[..end]
                .parse()
                .map_err(|_| unit_err(input, "number is too large"))?;
            s = s[end..].trim_start();
            let uend = s
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(s.len());
            let scale = match &s[..uend] {
                "s" => 1,
                "m" => 60,
                "h" => 3600,
                "d" => 86_400,
                "w" => 604_800,
                _ => return Err(unit_err(input, "unknown unit (use s, m, h, d or w)")),
            };
            s = s[uend..].trim_start();
            total = n
                .checked_mul(scale)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| unit_err(input, "duration is too large"))?;
        }
        Ok(HumanDuration(Duration::from_secs(total)))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut secs = self.0.as_secs();
        if secs == 0 {
            return f.write_str("0s");
        }
        for (name, scale) in [
            ("w", 604_800),
            ("d", 86_400),
            ("h", 3600),
            ("m", 60),
            ("s", 1),
        ] {
            if secs >= scale {
                write!(f, "{}{name}", secs / scale)?;
                secs %= scale;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_every_documented_form() {
        let cases = [
            ("0", 0),
            ("50000", 50_000),
            ("50_000", 50_000),
            ("64KiB", 65_536),
            ("64 kib", 65_536),
            ("64k", 65_536),
            ("1MiB", 1 << 20),
            ("1.5 MiB", 3 << 19),
            ("64MiB", 64 << 20),
            ("2GB", 2_000_000_000),
            ("10kB", 10_000),
            (" 7 B ", 7),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<ByteSize>().unwrap().get(), want, "{text}");
        }
    }

    #[test]
    fn bad_sizes_are_errors_that_name_the_value() {
        for bad in [
            "",
            "-1",
            "1.5",
            "0.1KiB",
            "12 parsecs",
            "1..2",
            "KiB",
            "99999999999999999999999",
        ] {
            let err = bad.parse::<ByteSize>().unwrap_err();
            assert!(err.to_string().contains("invalid value"), "{bad}: {err}");
        }
    }

    #[test]
    fn sizes_print_in_human_form_and_round_trip_when_exact() {
        assert_eq!(ByteSize::new(999).to_string(), "999 B");
        assert_eq!(ByteSize::new(65_536).to_string(), "64 KiB");
        assert_eq!(ByteSize::new(3 << 19).to_string(), "1.5 MiB");
        for n in [0u64, 1, 1024, 64 << 20, 3 << 19] {
            let s = ByteSize::new(n).to_string().replace(' ', "");
            assert_eq!(s.parse::<ByteSize>().unwrap().get(), n);
        }
    }

    #[test]
    fn sizes_deserialize_from_numbers_and_strings_but_not_negatives() {
        let v: ByteSize = serde_json::from_str("\"64KiB\"").unwrap();
        assert_eq!(v.get(), 65_536);
        let v: ByteSize = serde_json::from_str("123").unwrap();
        assert_eq!(v.get(), 123);
        assert!(serde_json::from_str::<ByteSize>("-5").is_err());
        assert!(serde_json::from_str::<ByteSize>("1.5").is_err());
    }

    #[test]
    fn durations_parse_and_print() {
        let cases = [
            ("90", 90),
            ("90s", 90),
            ("15m", 900),
            ("12h", 43_200),
            ("7d", 604_800),
            ("1d12h", 129_600),
            ("2w", 1_209_600),
        ];
        for (text, secs) in cases {
            assert_eq!(
                text.parse::<HumanDuration>().unwrap().get().as_secs(),
                secs,
                "{text}"
            );
        }
        assert_eq!(
            "1d12h".parse::<HumanDuration>().unwrap().to_string(),
            "1d12h"
        );
        for bad in ["", "-1d", "7y", "d", "1.5d"] {
            assert!(bad.parse::<HumanDuration>().is_err(), "{bad}");
        }
    }
}
