//! Eight bytes read as one number and tested at once: the word-wide byte
//! tests the core's short searches share (a line's end, an escape's start,
//! a JSON string's end, a line's skeleton), where a call to a vectorized
//! search costs more than the few words a short search reads.

/// A byte of one in each of a word's eight places.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Each byte's high bit.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight bytes (`bytes` holds exactly eight) as one number, the first the
/// lowest.
#[inline(always)]
pub(crate) fn le_word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("a word"))
}

/// The bytes of `word` below `n` (from 1 to 0x80), each marked by its high
/// bit: `x - n` borrows into the high bit of a byte below `n` (`& !word`
/// keeps only bytes that had it clear). A borrow can also mark a byte
/// above a marked one, never one below it: only the lowest mark is sure
/// ([`first`]).
#[inline(always)]
pub(crate) fn below(word: u64, n: u8) -> u64 {
    debug_assert!((1..=0x80).contains(&n));
    word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH
}

/// The bytes of `word` equal to `b`, marked as [`below`] marks them (a
/// byte equal to `b` is a zero byte of `word ^ b`): only the lowest mark
/// is sure.
#[inline(always)]
pub(crate) fn equal(word: u64, b: u8) -> u64 {
    below(word ^ (ONES * u64::from(b)), 1)
}

/// The place of the lowest byte marked in `marks`, if any.
#[inline(always)]
pub(crate) fn first(marks: u64) -> Option<usize> {
    (marks != 0).then(|| (marks.trailing_zeros() / 8) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first byte found equal to, or below, a value is the first such
    /// byte, for every byte in every place beside neighbours a borrow
    /// could mark (the value itself, the bytes around it and at the ends
    /// of the range).
    #[test]
    fn the_first_mark_is_the_first_such_byte() {
        let values = [
            0x00u8, 0x01, 0x0A, 0x1B, 0x1F, 0x20, b'"', b'\\', 0x7F, 0x80,
        ];
        let neighbours = [
            0x00u8, 0x01, 0x09, 0x0A, 0x0B, 0x1F, 0x20, 0x21, 0x7F, 0x80, 0x81, 0xFF,
        ];
        for at in 0..8 {
            for b in 0..=255u8 {
                for &other in &neighbours {
                    for after in [false, true] {
                        let mut bytes = [b'x'; 8];
                        bytes[at] = b;
                        // One neighbour before it, or all the bytes after.
                        if after {
                            bytes[at + 1..].fill(other);
                        } else if at > 0 {
                            bytes[at - 1] = other;
                        }
                        let w = le_word(&bytes);
                        for &v in &values {
                            assert_eq!(
                                first(equal(w, v)),
                                bytes.iter().position(|&c| c == v),
                                "{bytes:x?} equal to {v:#x}"
                            );
                            if (1..=0x80).contains(&v) {
                                assert_eq!(
                                    first(below(w, v)),
                                    bytes.iter().position(|&c| c < v),
                                    "{bytes:x?} below {v:#x}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
