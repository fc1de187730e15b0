//! [`ContentId`]: the BLAKE3 hash of an object's uncompressed bytes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const PREFIX: &str = "blake3:";

/// The id of a stored object: `blake3:` and the 64 lowercase hex digits of the
/// BLAKE3 hash of its uncompressed bytes.
///
/// The parser accepts exactly that form and nothing else, so no path, no
/// `..` and no other case can be smuggled through an id.
///
/// # Examples
///
/// ```
/// use spillway::ContentId;
/// let id = ContentId::of(b"hello");
/// let text = id.to_string();
/// assert!(text.starts_with("blake3:") && text.len() == 71);
/// assert_eq!(text.parse::<ContentId>().unwrap(), id);
/// assert!("blake3:../../etc/passwd".parse::<ContentId>().is_err());
/// assert!(text.to_uppercase().parse::<ContentId>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId([u8; 32]);

/// Why a content id or an id prefix did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdError {
    input: String,
    reason: &'static str,
}

impl IdError {
    fn new(input: &str, reason: &'static str) -> Self {
        let mut shown: String = input.chars().take(80).collect();
        if shown.len() < input.len() {
            shown.push('…');
        }
        IdError {
            input: shown,
            reason,
        }
    }
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid content id {:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for IdError {}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl ContentId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ContentId(*blake3::hash(bytes).as_bytes())
    }

    /// The id of `bytes` hashed on two threads when `budget` gives a
    /// second one (the same id as [`of`](Self::of)), for a caller with
    /// nothing else to do meanwhile.
    pub(crate) fn of_parallel(bytes: &[u8], budget: &crate::Parallelism) -> Self {
        Self::of_split(bytes, crate::offload::THREAD_AFTER as usize, budget)
    }

    fn of_split(bytes: &[u8], from: usize, budget: &crate::Parallelism) -> Self {
        use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
        if bytes.len() < from.max(2 * blake3::CHUNK_LEN) {
            return Self::of(bytes);
        }
        // BLAKE3's tree: the left subtree is the largest power of two of
        // chunks below the whole; its chaining value and the right one's
        // make the root. When the right one is small, the left one's two
        // halves are hashed apart instead, so both threads have work.
        let cv = |part: &[u8], offset: usize| {
            blake3::Hasher::new()
                .set_input_offset(offset as u64)
                .update(part)
                .finalize_non_root()
        };
        let left_len = blake3::hazmat::left_subtree_len(bytes.len() as u64) as usize;
        let (left, right) = bytes.split_at(left_len);
        let balanced = right.len() >= left_len / 2;
        let (one, two) = if balanced {
            (left, &[][..])
        } else {
            left.split_at(left_len / 2)
        };
        let other = || {
            if balanced {
                (cv(right, left_len), None)
            } else {
                (cv(two, left_len / 2), Some(cv(right, left_len)))
            }
        };
        let (a, (b, c)) = std::thread::scope(|s| {
            let first = crate::threads::scoped(s, budget, "spillway-hash", || cv(one, 0));
            let rest = other();
            match first {
                Ok(h) => (h.join(), rest),
                // No thread to be had: hashed here.
                Err(work) => (work(), rest),
            }
        });
        let hash = match c {
            None => merge_subtrees_root(&a, &b, Mode::Hash),
            Some(c) => {
                merge_subtrees_root(&merge_subtrees_non_root(&a, &b, Mode::Hash), &c, Mode::Hash)
            }
        };
        ContentId(*hash.as_bytes())
    }

    /// The id for a finished BLAKE3 hash.
    pub fn from_hash(hash: blake3::Hash) -> Self {
        ContentId(*hash.as_bytes())
    }

    /// The 32 hash bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, without the `blake3:` prefix.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        s
    }

    /// Parses the 64 hex digits alone (as in an object's file name).
    ///
    /// # Errors
    ///
    /// [`IdError`] unless `hex` is exactly 64 lowercase hex digits.
    pub fn from_hex(hex: &str) -> Result<Self, IdError> {
        if hex.len() != 64 {
            return Err(IdError::new(hex, "expected 64 hex digits"));
        }
        if !is_lower_hex(hex) {
            return Err(IdError::new(
                hex,
                "expected lowercase hex digits (0-9, a-f)",
            ));
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            let digit = |c: u8| if c <= b'9' { c - b'0' } else { c - b'a' + 10 };
            out[i] = digit(pair[0]) << 4 | digit(pair[1]);
        }
        Ok(ContentId(out))
    }
}

impl FromStr for ContentId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, IdError> {
        let hex = s
            .strip_prefix(PREFIX)
            .ok_or_else(|| IdError::new(s, "expected \"blake3:\" followed by 64 hex digits"))?;
        ContentId::from_hex(hex).map_err(|e| IdError::new(s, e.reason))
    }
}

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.to_hex())
    }
}

impl fmt::Debug for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentId({self})")
    }
}

impl Serialize for ContentId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A unique prefix of a content id: at least 8 lowercase hex digits, with or
/// without `blake3:`.
///
/// # Examples
///
/// ```
/// use spillway::IdPrefix;
/// assert!("blake3:0123abcd".parse::<IdPrefix>().is_ok());
/// assert!("0123abcd".parse::<IdPrefix>().is_ok());
/// assert!("0123abc".parse::<IdPrefix>().is_err());
/// assert!("../0123abcd".parse::<IdPrefix>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdPrefix(String);

/// The fewest hex digits an id prefix may have.
pub const MIN_PREFIX_DIGITS: usize = 8;

impl IdPrefix {
    /// The hex digits.
    pub fn hex(&self) -> &str {
        &self.0
    }

    /// The full id, when the prefix has all 64 digits.
    pub fn full(&self) -> Option<ContentId> {
        ContentId::from_hex(&self.0).ok()
    }

    /// Whether `id` starts with this prefix.
    pub fn matches(&self, id: &ContentId) -> bool {
        id.to_hex().starts_with(&self.0)
    }
}

impl FromStr for IdPrefix {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, IdError> {
        let hex = s.strip_prefix(PREFIX).unwrap_or(s);
        if hex.len() < MIN_PREFIX_DIGITS || hex.len() > 64 {
            return Err(IdError::new(
                s,
                "expected 8 to 64 hex digits, optionally after \"blake3:\"",
            ));
        }
        if !is_lower_hex(hex) {
            return Err(IdError::new(s, "expected lowercase hex digits (0-9, a-f)"));
        }
        Ok(IdPrefix(hex.to_string()))
    }
}

impl fmt::Display for IdPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_is_the_blake3_of_the_bytes() {
        let id = ContentId::of(b"abc");
        assert_eq!(id.to_hex(), blake3::hash(b"abc").to_hex().as_str());
        assert_eq!(ContentId::from_hex(&id.to_hex()).unwrap(), id);
    }

    /// Split for two threads at every kind of length: a power of two of
    /// chunks, just over and under one, a right subtree of one chunk or
    /// of one byte, and an odd length.
    #[test]
    fn the_two_thread_hash_is_blake3() {
        let bytes: Vec<u8> = (0..(70u32 << 10))
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let chunk = blake3::CHUNK_LEN;
        let lens = [
            2 * chunk,
            2 * chunk + 1,
            3 * chunk,
            4 * chunk - 1,
            16 * chunk,
            16 * chunk + 1,
            17 * chunk,
            24 * chunk,
            33 * chunk + 7,
            bytes.len(),
        ];
        // With a second thread and without one (the fallback): one id.
        for budget in [crate::Parallelism::new(1), crate::Parallelism::new(0)] {
            for len in lens {
                let part = &bytes[..len];
                assert_eq!(
                    ContentId::of_split(part, 0, &budget),
                    ContentId::of(part),
                    "{len} bytes"
                );
            }
            assert_eq!(
                ContentId::of_parallel(&bytes, &budget),
                ContentId::of(&bytes)
            );
            assert_eq!(ContentId::of_split(b"", 0, &budget), ContentId::of(b""));
        }
    }

    #[test]
    fn hostile_ids_are_rejected() {
        let good = ContentId::of(b"x").to_string();
        let hostile = [
            String::new(),
            "blake3:".into(),
            good[7..].to_string(),
            good.to_uppercase(),
            format!("{good}0"),
            good[..70].to_string(),
            format!("sha256:{}", &good[7..]),
            format!("blake3:../{}", &good[10..]),
            format!("blake3:{}/", &good[8..]),
            format!("blake3:{}g", &good[8..]),
            format!(" {good}"),
            "blake3:".to_string() + &"é".repeat(32),
        ];
        for h in hostile {
            assert!(h.parse::<ContentId>().is_err(), "{h:?} parsed");
        }
        assert!(good.parse::<ContentId>().is_ok());
    }

    #[test]
    fn prefixes() {
        let id = ContentId::of(b"x");
        let p: IdPrefix = id.to_hex()[..8].parse().unwrap();
        assert!(p.matches(&id));
        assert!(p.full().is_none());
        let full: IdPrefix = id.to_string().parse().unwrap();
        assert_eq!(full.full(), Some(id));
        for bad in [
            "abc",
            "blake3:abc",
            "ABCDEF0123",
            "0123456/89",
            &"a".repeat(65),
        ] {
            assert!(bad.parse::<IdPrefix>().is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_uses_the_text_form() {
        let id = ContentId::of(b"x");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ContentId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<ContentId>("\"blake3:zz\"").is_err());
    }
}
