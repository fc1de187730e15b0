//! The render's work on blocks of 64 bytes with AVX-512, where the
//! processor has it ([`available`]): a block stripped of its control
//! sequences ([`strip_blocks`]; the sequences found by masks of the
//! block's bytes, the text packed together by one `vpcompressb`), and the
//! line ends of a text ([`line_ends`]).
//!
//! A control sequence is ESC, `[`, any bytes from `0x20` to `0x3F`, and a
//! final byte from `0x40` to `0x7E`, which is its last; any other byte ends
//! it before itself ([`csi_end`](crate::preview::csi_end)). With one bit a
//! byte, a sequence's run of middle bytes is found by an addition: a bit
//! added at the run's first byte carries through the run's ones and stops
//! at the first byte past it.

use std::arch::x86_64::{
    __m512i, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512,
    _mm512_maskz_compress_epi8, _mm512_maskz_loadu_epi8, _mm512_set1_epi8, _mm512_storeu_si512,
    _mm512_sub_epi8,
};

/// Whether this processor has the instructions this module uses.
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vbmi2")
}

/// Strips `src` from `i` into `out` from `o`, 64 bytes at a time, up to
/// an escape the byte loop must read (one that is not a control sequence,
/// or one that may go on past its block) or to the last 64 bytes; gives
/// where it stopped in each. `out` must have room for all of `src`, and
/// `o <= i` (the text is never longer than what it came from).
///
/// # Panics
///
/// If [`available`] is false, or if `out` is shorter than `src`.
pub(super) fn strip_blocks(src: &[u8], out: &mut [u8], i: usize, o: usize) -> (usize, usize) {
    assert!(available(), "the processor lacks AVX-512 VBMI2");
    assert!(out.len() >= src.len() && o <= i);
    // SAFETY: the processor has the instructions (checked above), and the
    // function reads and writes only within `src` and `out` (its loop's
    // condition, with `o <= i` and `out.len() >= src.len()`).
    unsafe { blocks(src, out, i, o) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
unsafe fn blocks(src: &[u8], out: &mut [u8], mut i: usize, mut o: usize) -> (usize, usize) {
    while i + 64 <= src.len() {
        // SAFETY: `src[i..i + 64]` is in bounds (the loop's condition).
        let v = unsafe { _mm512_loadu_si512(src.as_ptr().add(i).cast::<__m512i>()) };
        let esc = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(0x1B));
        let (keep, len) = if esc == 0 {
            (u64::MAX, 64)
        } else {
            match sequences(v, esc) {
                (_, 0) => return (i, o),
                found => found,
            }
        };
        let text = _mm512_maskz_compress_epi8(keep, v);
        // SAFETY: `o <= i` (nothing is ever added), so `out[o..o + 64]` is
        // within `out[..i + 64]`, which is in bounds as `src[..i + 64]` is.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(o).cast::<__m512i>(), text) };
        i += len;
        o += keep.count_ones() as usize;
        if len < 64 {
            return (i, o);
        }
    }
    (i, o)
}

/// The block `v`'s bytes to keep, of its first `len` (its bytes before an
/// escape the byte loop must read, all 64 if none), given where its ESCs
/// are (`esc`, not empty).
#[target_feature(enable = "avx512f,avx512bw")]
fn sequences(v: __m512i, esc: u64) -> (u64, usize) {
    let open = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'[' as i8));
    // Bytes from 0x20 to 0x3F go on; 0x40 to 0x7E end a sequence.
    let middle = _mm512_cmplt_epu8_mask(
        _mm512_sub_epi8(v, _mm512_set1_epi8(0x20)),
        _mm512_set1_epi8(0x20),
    );
    let last = _mm512_cmplt_epu8_mask(
        _mm512_sub_epi8(v, _mm512_set1_epi8(0x40)),
        _mm512_set1_epi8(0x3F),
    );
    // Control sequences' ESCs (a `[` next; an ESC at the block's last byte
    // is not known to be one), and the first of the others.
    let starts = esc & (open >> 1);
    let mut len = (esc & !starts).trailing_zeros();
    // A sequence whose middle bytes would start past the block may go on.
    let late = starts & (0b11 << 62);
    len = len.min(late.trailing_zeros());
    let runs = (starts & !late) << 2;
    let (sum, past) = middle.overflowing_add(runs);
    if past {
        // The last sequence's middle bytes reach past the block.
        len = len.min(63 - (starts & !late).leading_zeros());
    }
    // Where each run stopped: a byte that does not go on.
    let stops = sum & !middle;
    let drop = starts | starts << 1 | ((sum ^ middle) & !stops) | (stops & last);
    let within = if len == 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    (!drop & within, len as usize)
}

/// Appends where each `\n` of `text` is to `ends`, in order.
///
/// # Panics
///
/// If [`available`] is false.
pub(super) fn line_ends(text: &[u8], ends: &mut Vec<usize>) {
    assert!(available(), "the processor lacks AVX-512");
    // SAFETY: the processor has the instructions (checked above); the
    // function reads only within `text`.
    unsafe { ends_of(text, ends) }
}

#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn ends_of(text: &[u8], ends: &mut Vec<usize>) {
    let mut at = 0;
    while at < text.len() {
        let left = text.len() - at;
        let within = if left >= 64 {
            u64::MAX
        } else {
            (1u64 << left) - 1
        };
        // SAFETY: the mask loads only the bytes of `text[at..]` that are in
        // bounds (a masked-off byte is not read, and cannot fault).
        let v = unsafe { _mm512_maskz_loadu_epi8(within, text.as_ptr().add(at).cast::<i8>()) };
        let mut nl = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\n' as i8)) & within;
        while nl != 0 {
            ends.push(at + nl.trailing_zeros() as usize);
            nl &= nl - 1;
        }
        at += 64;
    }
}
