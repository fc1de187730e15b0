//! A line's shape: what is left of it once the parts that vary between
//! occurrences of one message are blanked out. Lines of one shape are one
//! entry of the salient block, with a note of how many more there are.
//!
//! Blanked out, each as one placeholder:
//!
//! * a quoted value of one word (`"…"`, `` `…` ``, and `'…'` where the
//!   quote does not follow a letter or digit, so `don't` stays a word); a
//!   quoted key (`"level":`) is kept, and a quoted text of several words (a
//!   JSON log's message) is read as a line of its own;
//! * a path or URL: a whitespace-delimited run holding `/` or `\` that starts
//!   like a path (`/`, `./`, `../`, `~/`, `C:\`), holds two separators, or
//!   ends in a file name with an extension;
//! * a number: a word that starts with a digit (so timestamps, durations,
//!   IP addresses and hex literals), the digits inside a word (`worker-3`,
//!   `x12`), and a hex run of four or more holding a digit (hashes, UUIDs).
//!
//! Kept: everything else, including error codes (`E0308`, `TS2304`, `C2065`:
//! one to three capitals and digits), which name different errors. Runs of
//! whitespace are one space; whitespace at either end does not count.

use crate::word::le_word;

/// The shape key of `line` (escape sequences already removed) as a line
/// of `rank`: lines of different ranks are never one shape.
pub(crate) fn ranked(line: &[u8], rank: crate::salient::SalientRank) -> u64 {
    ranked_and_digits(line, rank).0
}

/// [`ranked`], and the digits of `line` that went into the key as they
/// are (in an error code or a quoted key): the key depends on which those
/// digits are, and on where the others are, never on which they are.
fn ranked_and_digits(line: &[u8], rank: crate::salient::SalientRank) -> (u64, Verbatim) {
    let mut h = Hasher::new(line);
    h.push(rank as u8);
    into(line, &mut h);
    (h.key, h.verbatim)
}

/// Where in a line the digits that went into its shape as they are lie,
/// and which they are. Lines of one skeleton have them in the same places
/// (whether a word is an error code, or a quoted value a key, depends on
/// where a line's digits are, not on which they are), so a line has the
/// shape remembered for its skeleton if it has the same digits there.
#[derive(Clone, Copy, Debug, Default)]
struct Verbatim {
    at: [u8; MAX_VERBATIM],
    digit: [u8; MAX_VERBATIM],
    len: u8,
    /// More of them than are kept, or past where a place is kept: such a
    /// shape is not remembered.
    over: bool,
}

/// The most verbatim digits a remembered shape may have (an error code's
/// are most often four).
const MAX_VERBATIM: usize = 8;

impl Verbatim {
    fn push(&mut self, at: usize, digit: u8) {
        let n = usize::from(self.len);
        match u8::try_from(at) {
            Ok(at) if n < MAX_VERBATIM => {
                self.at[n] = at;
                self.digit[n] = digit;
                self.len += 1;
            }
            _ => self.over = true,
        }
    }

    /// Whether `line` has these digits in these places.
    fn holds(&self, line: &[u8]) -> bool {
        let n = usize::from(self.len);
        self.at[..n]
            .iter()
            .zip(&self.digit[..n])
            .all(|(&at, &d)| line.get(usize::from(at)) == Some(&d))
    }
}

/// What a pattern that names a level holds: one of [`LEVEL_KEYS`].
pub(super) const LEVEL_PATTERN: &str = "(?:level|lvl|severity)";

/// The keys that name a level, as [`LEVEL_PATTERN`] has them (none is a
/// prefix of another). `level_pattern_names_the_level_keys` checks that
/// the two agree.
pub(super) const LEVEL_KEYS: [&[u8]; 3] = [b"level", b"lvl", b"severity"];

/// How a line was judged: its rank (`None` when it does not match), and
/// whether it holds a literal of the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Judged {
    pub(crate) rank: Option<crate::salient::SalientRank>,
    pub(crate) gated: bool,
}

impl Judged {
    /// A line that holds no literal of the gate: it does not match.
    pub(crate) const NO_LITERAL: Judged = Judged {
        rank: None,
        gated: false,
    };
}

/// The digits of `line` right after a JSON level's key (`"level":`,
/// `"lvl" : `, `"severity":`), the only digits a built-in pattern reads as
/// they are (`50`, `60`, `40`), each run whole. Where they are depends on
/// the line's other bytes alone, the same for every line of its skeleton.
fn level_digits(line: &[u8]) -> Verbatim {
    let blank = |i: &mut usize| {
        while matches!(line.get(*i), Some(b' ' | b'\t')) {
            *i += 1;
        }
    };
    let mut out = Verbatim::default();
    for q in memchr::memchr_iter(b'"', line) {
        let rest = &line[q + 1..];
        let Some(key) = LEVEL_KEYS
            .into_iter()
            .find(|k| rest.starts_with(k) && rest.get(k.len()) == Some(&b'"'))
        else {
            continue;
        };
        // Past the key and its closing quote.
        let mut i = q + 1 + key.len() + 1;
        blank(&mut i);
        if line.get(i) != Some(&b':') {
            continue;
        }
        i += 1;
        blank(&mut i);
        while let Some(&d) = line.get(i).filter(|d| d.is_ascii_digit()) {
            out.push(i, d);
            i += 1;
        }
    }
    out
}

/// The ranks and shapes of the lines a scan judged lately, by their
/// skeleton: the line with each digit made `0`, made sixteen bytes at a
/// time, far cheaper than a search or a shape. In a flood of one
/// message's lines most are found here; a line with a hex value of its
/// own (an object's id, an address) is found by its skeleton with the
/// value folded ([`Skeleton::fold`]).
///
/// A shape reads a digit as a digit, whichever it is, so two lines of one
/// skeleton and rank have one shape, unless a digit went into it as it is
/// (an error code such as `E0308`, a quoted key): such a shape is
/// remembered with those digits ([`Verbatim`]), and holds for a line that
/// has them too. The built-in patterns read a digit as a digit too (a class
/// of all ten, or none of them), except the JSON levels' `50`, `60` and
/// `40`, which they read only right after a level's key (`"level":`;
/// `the_built_in_patterns_read_digits_as_digits` checks it): a rank is
/// remembered with the digits there ([`level_digits`]), and only by the
/// gated built-in search. Whether a line holds a literal of the gate is
/// its skeleton's too (no literal holds a digit).
#[derive(Debug, Default)]
pub(crate) struct Memo {
    slots: Vec<Slot>,
    /// Each slot's tag: bits of its skeleton's hash, never 0, or 0 for an
    /// empty slot. Kept apart from the slots (8 KiB, which stay in the
    /// nearest cache, where the slots' 624 KiB do not while a stream
    /// passes through), so that a line of another skeleton misses without
    /// reading its slot: a line with a hex value of its own always misses
    /// once, before its folded skeleton is looked up.
    tags: Vec<u32>,
    skeleton: Skeleton,
    /// The tag of `skeleton`.
    tag: u32,
    /// The slot of the line [`rank`](Self::rank) looked up last, by where
    /// its bytes are.
    last: Option<Last>,
    /// How many shapes were made rather than remembered.
    #[cfg(test)]
    made: usize,
}

#[derive(Clone, Copy, Debug)]
struct Last {
    at: usize,
    len: usize,
    slot: usize,
    /// Whether the slot holds its skeleton: compared once, when it was
    /// looked up, and set when the line took the slot since.
    owned: bool,
}

/// A remembered skeleton. In this order (`repr(C)`), what a line's lookup
/// reads lies together at its start: its chances, how its lines were
/// judged, and the skeleton (its length, then its bytes), rather than
/// spread over the slot's 312 bytes (`a_lookup_reads_the_start_of_a_slot`
/// checks where the skeleton's bytes start).
#[derive(Debug, Default)]
#[repr(C)]
struct Slot {
    /// How many times a line of another skeleton must want the slot
    /// before it takes it over: one more each time a line finds it (up to
    /// [`MAX_CHANCES`]), one less each time another wants it.
    chances: u8,
    /// How its lines were judged, and the digits a line must have where
    /// a level's key is followed by a number.
    judged: Option<(Judged, Verbatim)>,
    /// A line's skeleton, once the slot is used (its tag is not 0).
    skeleton: Skeleton,
    /// Its lines' shapes, by rank, and the digits a line must have where
    /// they went into the shape as they are.
    shapes: [Option<(u64, Verbatim)>; 3],
}

/// Slots in a memo (a power of two): a line's skeleton is in one of two
/// slots, chosen by its hash; a line of another skeleton takes the one
/// with fewer chances over once it has none left, so that lines of a
/// skeleton seen once (each with a hash of its own) do not push out the
/// ones that come again. A build log's few hundred skeletons (each message
/// and the widths of its numbers) pushed one another out of 512. Since a
/// slot is read only when its tag matches, 2,048 (624 KiB, made on the
/// first lookup) cost no more per lookup than 1,024 and miss less. With
/// one slot to a skeleton, two that come often and share it took it from
/// each other again and again: on 16 MiB of a build log, of 1,809
/// skeletons, its scan's two threads judged 17,851 lines (10,133 with two
/// slots). A matcher keeps up to eight searches' states for reuse
/// (`SPARE_CACHES`), so a long-lived process holds up to 4.9 MiB of memos.
const MEMO_SLOTS: usize = 2048;

/// The most chances a slot keeps.
const MAX_CHANCES: u8 = 3;

/// Longer lines are judged and shaped each time: few lines are, and their
/// skeletons would take the memo's memory.
const MEMO_LINE: usize = 192;

impl Memo {
    /// The slot of `line`'s skeleton, left in `self.skeleton`, and
    /// whether the slot holds it; `None` for a line too long to remember.
    /// With `again`, the line the last [`rank`](Self::rank) looked up (the
    /// same bytes in the same place: nothing was read in between) is not
    /// made a skeleton or compared again.
    fn slot(&mut self, line: &[u8], again: bool) -> Option<(usize, bool)> {
        if line.len() > MEMO_LINE {
            self.last = None;
            return None;
        }
        let at = line.as_ptr() as usize;
        if let Some(l) = self
            .last
            .filter(|l| again && l.at == at && l.len == line.len())
        {
            return Some((l.slot, l.owned));
        }
        if self.slots.is_empty() {
            self.slots.resize_with(MEMO_SLOTS, Slot::default);
            self.tags = vec![0; MEMO_SLOTS];
        }
        let h = self.skeleton.make(line);
        let mut found = self.find(h);
        if found.is_err() {
            // A line with a hex value of its own is remembered by its
            // skeleton with the value folded (only such lines are: a line
            // whose skeleton is remembered as it is has none).
            if let Some(h) = self.skeleton.fold() {
                found = self.find(h);
            }
        }
        let (slot, owned) = match found {
            Ok(slot) => (slot, true),
            Err(set) => (self.victim(set), false),
        };
        self.last = Some(Last {
            at,
            len: line.len(),
            slot,
            owned,
        });
        Some((slot, owned))
    }

    /// The slot that holds the skeleton just made, of hash `h`, or the
    /// first slot of the two it may be in (chosen by the hash's top bits,
    /// the ones every word went into) if neither does. The skeleton's tag
    /// (the hash's low bits) is kept.
    #[inline]
    fn find(&mut self, h: u64) -> Result<usize, usize> {
        self.tag = h as u32 | 1;
        let set = (h >> (64 - MEMO_SLOTS.trailing_zeros())) as usize & !1;
        [set, set + 1]
            .into_iter()
            .find(|&slot| self.holds(slot))
            .ok_or(set)
    }

    /// Which of the two slots from `set` a skeleton that is in neither
    /// would take: an empty one, else the one with fewer chances.
    fn victim(&self, set: usize) -> usize {
        let (a, b) = (set, set + 1);
        match (self.tags[a], self.tags[b]) {
            (0, _) => a,
            (_, 0) => b,
            _ if self.slots[b].chances < self.slots[a].chances => b,
            _ => a,
        }
    }

    /// Whether `slot` holds the skeleton just made: its tag first, then
    /// its bytes.
    #[inline]
    fn holds(&self, slot: usize) -> bool {
        self.tags[slot] == self.tag && self.slots[slot].skeleton == self.skeleton
    }

    /// Makes `slot` hold the skeleton just made, unless it holds another
    /// that still has chances (which loses one); `owned`: whether it holds
    /// it already. Whether it does now.
    fn take(&mut self, slot: usize, owned: bool) -> bool {
        let used = self.tags[slot] != 0;
        let s = &mut self.slots[slot];
        if !owned {
            if used && s.chances > 0 {
                s.chances -= 1;
                return false;
            }
            s.skeleton.clone_from(&self.skeleton);
            self.tags[slot] = self.tag;
            s.judged = None;
            s.shapes = [None; 3];
            s.chances = 0;
        }
        true
    }

    /// Forgets which line was looked up last (its bytes may be gone).
    pub(crate) fn forget_last(&mut self) {
        self.last = None;
    }

    /// How a line of `line`'s skeleton (and of its level's digits) was
    /// judged, when it is known.
    pub(crate) fn rank(&mut self, line: &[u8]) -> Option<Judged> {
        let (slot, owned) = self.slot(line, false)?;
        if !owned {
            return None;
        }
        // Found: the slot gains a chance.
        let s = &mut self.slots[slot];
        s.chances = (s.chances + 1).min(MAX_CHANCES);
        match &s.judged {
            Some((judged, digits)) if digits.holds(line) => Some(*judged),
            _ => None,
        }
    }

    /// Remembers how `line`, the line [`rank`](Self::rank) looked up
    /// last, was judged, unless its level's digits are too many to keep.
    pub(crate) fn remember_rank(&mut self, line: &[u8], judged: Judged) {
        let Some(l) = self.last else {
            return;
        };
        debug_assert!(l.at == line.as_ptr() as usize && l.len == line.len());
        let digits = level_digits(line);
        if digits.over {
            return;
        }
        if self.take(l.slot, l.owned) {
            self.slots[l.slot].judged = Some((judged, digits));
            self.last = Some(Last { owned: true, ..l });
        }
    }

    /// [`ranked`], from the memo when a line of the same skeleton and rank
    /// was shaped lately.
    pub(crate) fn ranked(&mut self, line: &[u8], rank: crate::salient::SalientRank) -> u64 {
        let slot = self.slot(line, true);
        // What comes next may be other bytes in the same place.
        self.last = None;
        let Some((slot, owned)) = slot else {
            return ranked(line, rank);
        };
        if let (true, Some((shape, v))) = (owned, &self.slots[slot].shapes[rank as usize]) {
            if v.holds(line) {
                return *shape;
            }
        }
        let (shape, verbatim) = ranked_and_digits(line, rank);
        #[cfg(test)]
        {
            self.made += 1;
        }
        if !verbatim.over && self.take(slot, owned) {
            self.slots[slot].shapes[rank as usize] = Some((shape, verbatim));
        }
        shape
    }
}

/// A line of at most [`MEMO_LINE`] bytes with each digit made `0`, and
/// its length. Made sixteen bytes a block, each block written once, where
/// it lies, as two words: the last block's bytes past the line are zero.
/// Compared and hashed a word at a time.
///
/// Its length comes first, right before its bytes (`repr(C)`, no padding:
/// every field is bytes).
#[derive(Clone, Debug)]
#[repr(C)]
struct Skeleton {
    len: u8,
    /// Whether its hex values are folded ([`Skeleton::fold`]): a folded
    /// skeleton is never the same as one that is not, whatever its bytes.
    folded: bool,
    bytes: [u8; SKELETON_BYTES],
}

// A skeleton's length is one byte.
const _: () = assert!(MEMO_LINE <= u8::MAX as usize);

/// The high bit of each byte of `w` that is `0`, and no other bit.
fn zeros(w: u64) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let x = w ^ 0x3030_3030_3030_3030;
    // A byte's low seven bits plus 0x7F carry into its high bit unless
    // they are all zero; no byte carries into the next.
    !(((x & LOW) + LOW) | x) & !LOW
}

/// The high bit of each byte of `w` from `a` to `f`, and no other bit.
fn hex_letters(w: u64) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let y = w & LOW;
    // A byte's high bit: set by adding 0x1F from `a` (0x61) up, by adding
    // 0x19 from `g` (0x67) up; none carries into the next byte.
    let from_a = y + 0x1F1F_1F1F_1F1F_1F1F;
    let from_g = y + 0x1919_1919_1919_1919;
    from_a & !from_g & !w & !LOW
}

/// Where in `words` (a skeleton's words: its bytes past the line are
/// zero) the first hex value's mark of two bytes from `from` on is: a
/// digit (`0`) right after one of `a` to `f`, or one of them right after
/// a digit, where the second byte is. Every hex value has one, most lines
/// none. Eight bytes at a time.
fn mark(words: &[u8], from: usize) -> Option<usize> {
    let first = from / 8;
    let (mut digits, mut letters) = (0u64, 0u64);
    for (k, w) in words.chunks_exact(8).enumerate().skip(first) {
        let w = le_word(w);
        let (d, l) = (zeros(w), hex_letters(w));
        // A byte's neighbour before it: the byte below, or the last byte
        // of the word before.
        let mut pairs = (d & (l << 8 | letters >> 56)) | (l & (d << 8 | digits >> 56));
        if k == first {
            // Only a second byte past `from`.
            pairs &= u64::MAX << (8 * (from % 8)) << 8;
        }
        if pairs != 0 {
            return Some(8 * k + (pairs.trailing_zeros() / 8) as usize);
        }
        (digits, letters) = (d, l);
    }
    None
}

/// Mixed into a folded skeleton's hash.
const FOLDED: u64 = 0xF0_1D_ED_F0_1D_ED_F0_1D;

/// Room for the longest line in blocks of sixteen.
const SKELETON_BYTES: usize = MEMO_LINE.next_multiple_of(16);

impl Default for Skeleton {
    fn default() -> Skeleton {
        Skeleton {
            bytes: [0; SKELETON_BYTES],
            len: 0,
            folded: false,
        }
    }
}

impl PartialEq for Skeleton {
    /// A word at a time, in line (a call to compare a few words costs
    /// more than comparing them): the bytes past the line are zero in
    /// both.
    fn eq(&self, other: &Skeleton) -> bool {
        let n = usize::from(self.len).div_ceil(8) * 8;
        self.len == other.len
            && self.folded == other.folded
            && self.bytes[..n]
                .chunks_exact(8)
                .zip(other.bytes[..n].chunks_exact(8))
                .all(|(a, b)| le_word(a) == le_word(b))
    }
}

/// A word of eight bytes with each digit made `0`: a digit is a byte
/// whose distance from `0` is under ten, and made `0` by clearing its low
/// four bits.
#[inline(always)]
fn zeroed(w: u64) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let x = w ^ 0x3030_3030_3030_3030;
    // A byte's low seven bits plus 0x76 carry into its high bit from ten
    // up; no byte carries into the next. A digit: high bit clear in both.
    let digits = !(((x & LOW) + 0x7676_7676_7676_7676) | x) & !LOW;
    // Each digit's low four bits: 0x10 less 0x01 a byte, no borrow.
    w & !((digits >> 3) - (digits >> 7))
}

/// The last `line.len() % 16` bytes of `line` (at least one), as the
/// first bytes of a block of two words (the first eight in `lo`) whose
/// other bytes are zero. Read in at most two loads from where they are
/// and shifted into place: bytes copied one by one into memory and read
/// back as a word wait there for the copies.
#[inline(always)]
fn last_block(line: &[u8]) -> (u64, u64) {
    let (len, rest) = (line.len(), line.len() % 16);
    debug_assert!(rest > 0);
    if len >= 16 {
        let v = (u128::from(le_word(&line[len - 8..])) << 64
            | u128::from(le_word(&line[len - 16..len - 8])))
            >> (8 * (16 - rest));
        (v as u64, (v >> 64) as u64)
    } else if len > 8 {
        (
            le_word(&line[..8]),
            le_word(&line[len - 8..]) >> (8 * (16 - len)),
        )
    } else if len == 8 {
        (le_word(line), 0)
    } else {
        let lo = line
            .iter()
            .rev()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        (lo, 0)
    }
}

/// One step of a skeleton's hash: a word rotated in.
#[inline(always)]
fn mix(h: u64, word: u64) -> u64 {
    h.rotate_left(7) ^ word
}

/// A skeleton's hash before its words, in each of its two lanes: its
/// length, and whether it is folded.
#[inline(always)]
fn seed(len: usize, folded: bool) -> [u64; 2] {
    [len as u64 ^ if folded { FOLDED } else { 0 }, 0]
}

/// The hash's end: its two lanes (each block's first word went into the
/// first, its second into the second: two chains half as long) mixed
/// once more. The hash only picks a slot, and the slot's skeleton is
/// compared.
#[inline(always)]
fn end([a, b]: [u64; 2]) -> u64 {
    let h = a ^ b.rotate_left(32);
    (h ^ (h >> 29)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

impl Skeleton {
    /// Makes this the skeleton of `line` (at most [`MEMO_LINE`] bytes),
    /// and gives its hash ([`hash`](Self::hash)'s), made from each word
    /// as it is written rather than read back. Each block is written
    /// once, where it lies, as two words: a word read back from bytes
    /// written a moment before by more than one write waits for them to
    /// reach the cache.
    fn make(&mut self, line: &[u8]) -> u64 {
        debug_assert!(line.len() <= MEMO_LINE);
        let len = line.len();
        self.len = len as u8;
        self.folded = false;
        let mut h = seed(len, false);
        let (blocks, _) = self.bytes.split_at_mut(16 * len.div_ceil(16));
        let mut out = blocks.chunks_exact_mut(16);
        let mut put = |o: &mut [u8], (lo, hi): (u64, u64)| {
            let (a, b) = o.split_at_mut(8);
            a.copy_from_slice(&lo.to_le_bytes());
            b.copy_from_slice(&hi.to_le_bytes());
            h = [mix(h[0], lo), mix(h[1], hi)];
        };
        for (c, o) in line.chunks_exact(16).zip(&mut out) {
            put(o, (zeroed(le_word(&c[..8])), zeroed(le_word(&c[8..]))));
        }
        if let Some(o) = out.next() {
            let (lo, hi) = last_block(line);
            put(o, (zeroed(lo), zeroed(hi)));
        }
        end(h)
    }

    /// Its hash: its length, then its blocks, each block's two words
    /// rotated into two lanes (the bytes past the line in its last block
    /// are zero), mixed once at the end.
    fn hash(&self) -> u64 {
        let len = usize::from(self.len);
        let h = self.bytes[..len.div_ceil(16) * 16]
            .chunks_exact(16)
            .fold(seed(len, self.folded), |[a, b], w| {
                [mix(a, le_word(&w[..8])), mix(b, le_word(&w[8..]))]
            });
        end(h)
    }

    /// Folds the hex values of a skeleton just made, if it has any (and
    /// no quote), and gives its new hash. A hex value is a word (a run of
    /// letters, digits and `_` as a whole) of four or more bytes, each a
    /// digit or one of `a` to `f`, at least one of each, not right after
    /// `[`: a hash, an address, an object id. Folded, its first and last
    /// bytes say only whether they are a digit (`0` or `a`), and the bytes
    /// between are `1`, so every line of a message that names a different
    /// object has one folded skeleton. No other byte of a skeleton is a
    /// digit but `0`: a folded value is never taken for a word of digits,
    /// or a word of digits for it (`1234` and `7f18` in one line).
    ///
    /// A line's rank and shape are those of every line of its folded
    /// skeleton. Its shape: such a word is a number (`#`) whatever its
    /// letters, and only a path's extension reads its first byte (a
    /// letter after the dot); a quoted key is hashed as it is, so a line
    /// with a quote is not folded. Its rank, by the built-in patterns
    /// (the memo's ranks are theirs alone): no gate literal and no
    /// pattern's word lies inside a run of hex letters and digits (each
    /// holds a letter past `f`, or a capital), so a pattern reads such a
    /// word only as a run of digits or not, at its edges: `[0-9] E tag: `
    /// reads the last byte, `not ok [0-9]+` the first, `\([0-9]+\)` the
    /// whole word (never a run of digits, as it holds a letter), and
    /// `error[E0308]:`'s `[A-Za-z]*[0-9]+` all of it, which is why a word
    /// right after `[` is not folded. `no_gate_literal_reads_inside_a_hex_value`
    /// checks the gate's literals; the property tests check the ranks
    /// (against every pattern) and shapes of lines whose hex values are
    /// drawn anew.
    fn fold(&mut self) -> Option<u64> {
        let len = usize::from(self.len);
        let words = len.div_ceil(8) * 8;
        let mut at = mark(&self.bytes[..words], 0)?;
        if memchr::memchr3(b'"', b'\'', b'`', &self.bytes[..len]).is_some() {
            return None;
        }
        // Each word that holds a mark, from the first: a word that holds
        // none is not a hex value, and is passed over eight bytes at a
        // time.
        let mut folded = false;
        loop {
            let line = &mut self.bytes[..len];
            let start = line[..at]
                .iter()
                .rposition(|&b| !is_word(b))
                .map_or(0, |p| p + 1);
            let mut end = start;
            let (mut digit, mut letter, mut hex) = (false, false, true);
            while end < len && is_word(line[end]) {
                let b = line[end];
                // Its digits are `0` already.
                let d = b == b'0';
                let l = (b'a'..=b'f').contains(&b);
                digit |= d;
                letter |= l;
                hex &= d | l;
                end += 1;
            }
            if hex && digit && letter && end - start >= 4 && (start == 0 || line[start - 1] != b'[')
            {
                let class = |b: u8| if b == b'0' { b'0' } else { b'a' };
                line[start] = class(line[start]);
                line[end - 1] = class(line[end - 1]);
                line[start + 1..end - 1].fill(b'1');
                folded = true;
            }
            // Past the word: the byte at `end` ends it, so no mark of the
            // bytes just folded is found again.
            match mark(&self.bytes[..words], end) {
                Some(next) => at = next,
                None => break,
            }
        }
        self.folded = folded;
        folded.then(|| self.hash())
    }

    /// Its bytes.
    #[cfg(test)]
    fn bytes(&self) -> Vec<u8> {
        self.bytes[..usize::from(self.len)].to_vec()
    }
}

/// The shape key of `line`.
#[cfg(test)]
pub(crate) fn key(line: &[u8]) -> u64 {
    let mut h = Hasher::new(line);
    into(line, &mut h);
    h.key
}

fn into(line: &[u8], h: &mut Hasher) {
    let line = trim(line);
    let n = line.len();
    let mut i = 0;
    while i < n {
        let b = line[i];
        let c = CLASS[usize::from(b)];
        if c == SPACE {
            i += 1;
            while i < n && CLASS[usize::from(line[i])] == SPACE {
                i += 1;
            }
            h.push(b' ');
            continue;
        }
        if c == QUOTE && opens_quote(line, i) {
            if let Some(j) = memchr::memchr(b, &line[i + 1..]) {
                let inside = &line[i + 1..i + 1 + j];
                i += j + 2;
                let key = line[i..]
                    .iter()
                    .find(|&&b| CLASS[usize::from(b)] != SPACE)
                    .is_some_and(|&b| b == b':');
                if key {
                    // A key (`"level":`): part of the line's form.
                    h.push(b'K');
                    h.extend(inside);
                    h.verbatim_digits(inside);
                } else if inside.iter().any(|&b| CLASS[usize::from(b)] == SPACE) {
                    // A message (`"msg": "disk full"`): read as a line.
                    h.push(b'M');
                    into(inside, h);
                    h.push(b'M');
                } else {
                    h.push(b'Q');
                }
                continue;
            }
        }
        // A run up to the next space or quote.
        let mut end = i + 1;
        let mut seps = usize::from(c == SEP);
        let mut digits = c == DIGIT;
        while end < n {
            let c = CLASS[usize::from(line[end])];
            if c == SPACE || (c == QUOTE && opens_quote(line, end)) {
                break;
            }
            seps += usize::from(c == SEP);
            digits |= c == DIGIT;
            end += 1;
        }
        let run = &line[i..end];
        if seps > 0 && is_path(run, seps) {
            h.push(b'P');
        } else if digits {
            words(run, h);
        } else {
            // Nothing in it is blanked (most runs): hashed as it is.
            h.push(b'R');
            h.extend(run);
        }
        i = end;
    }
}

const OTHER: u8 = 0;
const SPACE: u8 = 1;
const QUOTE: u8 = 2;
const SEP: u8 = 3;
const ALPHA: u8 = 4;
const DIGIT: u8 = 5;

/// Each byte's class.
static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c' => SPACE,
            b'"' | b'`' | b'\'' => QUOTE,
            b'/' | b'\\' => SEP,
            b'0'..=b'9' => DIGIT,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => ALPHA,
            _ => OTHER,
        };
        b += 1;
    }
    t
};

fn trim(mut line: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = line {
        if CLASS[usize::from(*first)] == SPACE {
            line = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = line {
        if CLASS[usize::from(*last)] == SPACE {
            line = rest;
        } else {
            break;
        }
    }
    line
}

fn is_word(b: u8) -> bool {
    let c = CLASS[usize::from(b)];
    c == ALPHA || c == DIGIT
}

/// Whether `line[i]` opens a quoted value.
fn opens_quote(line: &[u8], i: usize) -> bool {
    match line[i] {
        b'"' | b'`' => true,
        b'\'' => i == 0 || !line[i - 1].is_ascii_alphanumeric(),
        _ => false,
    }
}

/// Whether a run holding `seps` separators is a path.
fn is_path(run: &[u8], seps: usize) -> bool {
    let starts = run.starts_with(b"/")
        || run.starts_with(b"./")
        || run.starts_with(b"../")
        || run.starts_with(b"~/")
        || (run.len() > 2 && run[0].is_ascii_alphabetic() && &run[1..3] == b":\\");
    if starts || seps >= 2 {
        return true;
    }
    // One separator: a file name with an extension after it (`src/a.rs`).
    let last = run
        .iter()
        .rposition(|&b| b == b'/' || b == b'\\')
        .unwrap_or(0);
    let name = &run[last + 1..];
    name.iter()
        .position(|&b| b == b'.')
        .is_some_and(|d| d > 0 && name.get(d + 1).is_some_and(u8::is_ascii_alphabetic))
}

/// Hashes a run without spaces, quotes or paths: its words blanked as the
/// module says, its punctuation kept.
fn words(run: &[u8], h: &mut Hasher) {
    // A run of several words with digits is a name made of numbered parts
    // (a node `R30-M0-NB-C:J16-U01`, a version, an address): none of its
    // words is an error code, and its short parts of capitals and digits
    // (`R30`, `NB`, `C`) are positions that vary together, all blanked.
    let codes = run
        .split(|&b| !is_word(b))
        .filter(|w| w.iter().any(u8::is_ascii_digit))
        .nth(1)
        .is_none();
    let part = |w: &[u8]| {
        !codes
            && w.len() <= 3
            && w.iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let mut i = 0;
    while i < run.len() {
        let b = run[i];
        if !is_word(b) {
            h.push(b);
            i += 1;
            continue;
        }
        let mut end = i + 1;
        let mut digits = CLASS[usize::from(b)] == DIGIT;
        while end < run.len() {
            let c = CLASS[usize::from(run[end])];
            if c != ALPHA && c != DIGIT {
                break;
            }
            digits |= c == DIGIT;
            end += 1;
        }
        let w = &run[i..end];
        if part(w) {
            h.push(b'#');
        } else if digits {
            word(w, codes, h);
        } else {
            h.extend(w);
        }
        i = end;
    }
}

/// A word holding a digit; `codes`: whether it may be an error code.
fn word(w: &[u8], codes: bool, h: &mut Hasher) {
    if w[0].is_ascii_digit() {
        h.push(b'#');
        return;
    }
    // An error code: one to three capitals, then only digits.
    let caps = w.iter().take_while(|b| b.is_ascii_uppercase()).count();
    if codes
        && (1..=3).contains(&caps)
        && w.len() - caps >= 2
        && w[caps..].iter().all(u8::is_ascii_digit)
    {
        h.extend(w);
        h.verbatim_digits(w);
        return;
    }
    if w.len() >= 4 && w.iter().all(u8::is_ascii_hexdigit) {
        h.push(b'#');
        return;
    }
    // The digits inside a word.
    let mut in_digits = false;
    for &b in w {
        if b.is_ascii_digit() {
            if !in_digits {
                h.push(b'#');
            }
            in_digits = true;
        } else {
            h.push(b);
            in_digits = false;
        }
    }
}

/// A 64-bit multiplicative hash, one byte at a time (the shape's bytes are
/// never kept, only this), and the digits that went into it as they are.
struct Hasher {
    key: u64,
    /// Where the line starts in memory, for the places of its digits.
    base: usize,
    verbatim: Verbatim,
}

impl Hasher {
    fn new(line: &[u8]) -> Hasher {
        Hasher {
            key: 0,
            base: line.as_ptr() as usize,
            verbatim: Verbatim::default(),
        }
    }

    /// Notes the digits of `bytes`, a part of the line that went into the
    /// key as it is.
    fn verbatim_digits(&mut self, bytes: &[u8]) {
        let start = bytes.as_ptr() as usize - self.base;
        for (k, &b) in bytes.iter().enumerate() {
            if b.is_ascii_digit() {
                self.verbatim.push(start + k, b);
            }
        }
    }

    #[inline]
    fn push(&mut self, b: u8) {
        self.key = (self.key.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    /// Eight bytes at a time, then one at a time; the length goes in too,
    /// so a word is not the same as its bytes pushed one by one.
    fn extend(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.push(b);
        }
        self.word(bytes.len() as u64 | 1 << 63);
    }

    #[inline]
    fn word(&mut self, w: u64) {
        self.key = (self.key.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use super::key;
    use crate::salient::SalientRank;
    use proptest::prelude::*;

    /// The skeleton a word at a time is the line with each digit made `0`,
    /// for every byte in every place of a word and in the last bytes.
    #[test]
    fn the_skeleton_makes_each_digit_0() {
        let mut out = super::Skeleton::default();
        for len in [1, 7, 8, 9, 16, 23, super::MEMO_LINE - 1, super::MEMO_LINE] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut line = vec![b'x'; len];
                    line[at] = b;
                    out.make(&line);
                    let want: Vec<u8> = line
                        .iter()
                        .map(|&c| if c.is_ascii_digit() { b'0' } else { c })
                        .collect();
                    assert_eq!(out.bytes(), want, "byte {b} at {at} of {len}");
                }
            }
        }
        // A skeleton made where a longer one was is the one made fresh,
        // and hashes the same: nothing of the longer one is left in the
        // bytes it is compared and hashed by.
        let long = vec![0xFFu8; super::MEMO_LINE];
        for len in 0..=super::MEMO_LINE {
            let line: Vec<u8> = (0..len).map(|i| b"a1 \x00"[i % 4]).collect();
            let mut fresh = super::Skeleton::default();
            let want = fresh.make(&line);
            assert_eq!(fresh.hash(), want, "made as written is read back, at {len}");
            out.make(&long);
            assert_eq!(out.make(&line), want, "the hash, at {len}");
            assert_eq!(out, fresh, "the skeleton, at {len}");
        }
        let mut other = super::Skeleton::default();
        out.make(b"ab1");
        other.make(b"ab1\0");
        assert_ne!(out, other, "the length counts");
        other.make(b"ab7");
        assert_eq!(out, other);
    }

    proptest! {
        /// The memo gives every line the shape it has, whatever lines of
        /// the same skeleton (their digits changed) came before it.
        #[test]
        fn the_memo_gives_each_line_its_shape(
            lines in proptest::collection::vec(
                (
                    proptest::collection::vec(
                        prop_oneof![
                            Just(" ".to_owned()), Just("\"".to_owned()), Just("'".to_owned()),
                            Just("/".to_owned()), Just(":".to_owned()), Just("-".to_owned()),
                            Just(".".to_owned()), Just("\"p9\":".to_owned()),
                            Just("E0308".to_owned()), Just("TS2304".to_owned()),
                            "[0-9]{1,4}", "[a-f0-9]{3,6}", "[A-Z]{1,4}[0-9]{0,3}", "[a-z]{1,5}",
                            Just("[".to_owned()), Just("(".to_owned()), Just("_".to_owned()),
                            "[a-f][a-f0-9]{3,6}", "[0-9][a-f0-9]{3,6}",
                        ],
                        0..16,
                    ),
                    any::<u64>(),
                    0..3u8,
                ),
                1..24,
            )
        ) {
            let mut memo = super::Memo::default();
            for (parts, seed, rank) in lines {
                let rank = [SalientRank::Word, SalientRank::Warning, SalientRank::Error][rank as usize];
                let line = parts.concat();
                // The line, the line with its digits changed, and with
                // each byte of its words of digits and `a` to `f` drawn
                // anew among those (other hex values).
                let mut other = line.clone().into_bytes();
                let mut x = seed;
                let mut next = |n: u64| {
                    x = x.rotate_left(7) ^ 0x9E37_79B9_7F4A_7C15;
                    (x % n) as u8
                };
                for b in other.iter_mut().filter(|b| b.is_ascii_digit()) {
                    *b = b'0' + next(10);
                }
                let mut hex = other.clone();
                let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
                let mut i = 0;
                while i < hex.len() {
                    let n = hex[i..].iter().take_while(|b| word(b)).count();
                    let run = &mut hex[i..i + n];
                    if run.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
                        for b in run {
                            *b = b"0123456789abcdef"[usize::from(next(16))];
                        }
                    }
                    i += n.max(1);
                }
                for l in [line.as_bytes(), &other[..], &hex[..]] {
                    prop_assert_eq!(memo.ranked(l, rank), super::ranked(l, rank), "{:?}", String::from_utf8_lossy(l));
                }
            }
        }
    }

    /// Lines of one message with other numbers are found in the memo; an
    /// error code or a quoted key with digits is remembered with its
    /// digits, which are part of the shape.
    #[test]
    fn a_flood_is_shaped_from_the_memo() {
        let mut memo = super::Memo::default();
        let r = SalientRank::Error;
        let a = memo.ranked(b"2026-12-06 ERROR request 123 failed", r);
        assert_eq!(memo.ranked(b"2026-12-07 ERROR request 456 failed", r), a);
        assert_eq!(memo.made, 1);
        let code = memo.ranked(b"src/a.rs:12:9: error[E0308]: mismatched types", r);
        let again = memo.ranked(b"src/a.rs:47:3: error[E0308]: mismatched types", r);
        assert_eq!((again, memo.made), (code, 2), "one code: from the memo");
        let other = memo.ranked(b"src/a.rs:47:3: error[E0425]: mismatched types", r);
        assert_ne!(code, other);
        assert_eq!(
            other,
            super::ranked(b"src/a.rs:47:3: error[E0425]: mismatched types", r)
        );
        assert_eq!(memo.made, 3, "another code: made");
        let key = memo.ranked(br#"{"p95":1,"msg":"slow"}"#, r);
        let p99 = memo.ranked(br#"{"p99":1,"msg":"slow"}"#, r);
        assert_ne!(key, p99);
        assert_eq!(p99, memo.ranked(br#"{"p99":7,"msg":"slow"}"#, r));
        assert_eq!(memo.made, 5);
    }

    /// The level patterns' alternation names exactly the keys the memory
    /// and the anchored level search look for.
    #[test]
    fn level_pattern_names_the_level_keys() {
        let keys: Vec<String> = super::LEVEL_KEYS
            .iter()
            .map(|k| String::from_utf8(k.to_vec()).unwrap())
            .collect();
        assert_eq!(super::LEVEL_PATTERN, format!("(?:{})", keys.join("|")));
        for a in super::LEVEL_KEYS {
            for b in super::LEVEL_KEYS {
                assert!(a == b || !a.starts_with(b), "{a:?} {b:?}");
            }
        }
    }

    /// Lines of one message that each name an object by a hex value of
    /// their own are found in the memo by their folded skeleton: one
    /// skeleton for all whose values start and end with a digit or a
    /// letter alike. A value right after `[` (where an error code's
    /// letters and digits are read) and a line with a quote are not
    /// folded, and a word of digits and `a` to `f` without a letter, or of
    /// fewer than four bytes, is not a hex value.
    #[test]
    fn a_hex_value_of_its_own_is_shaped_from_the_memo() {
        let mut memo = super::Memo::default();
        let r = SalientRank::Error;
        let line = |v: &str| format!("src/m12.rs:3:4: error in expression {v} of m12").into_bytes();
        let shape = memo.ranked(&line("1e240"), r);
        for v in ["2f3a0", "9ab07", "4c5d8"] {
            assert_eq!(memo.ranked(&line(v), r), shape, "{v}");
        }
        assert_eq!(memo.made, 1, "one skeleton");
        for v in ["ae240", "1e24f", "c0ffe"] {
            assert_eq!(memo.ranked(&line(v), r), shape, "{v}");
        }
        assert_eq!(memo.made, 4, "another first or last byte: made once each");
        let once = memo.made;
        for v in ["[1e240]", "[2f3a0]", "'1e240'", "'2f3a0'"] {
            assert_eq!(memo.ranked(&line(v), r), super::ranked(&line(v), r), "{v}");
        }
        assert_eq!(memo.made, once + 4, "not folded: made each time");
        let mut skeleton = super::Skeleton::default();
        for (word, folds) in [
            ("1e240", true),
            ("e240", true),
            ("e24", false),
            ("12345", false),
            ("faced", false),
            ("1e2g0", false),
            ("1E240", false),
            ("x_1e240", false),
            ("x-1e240", true),
            ("[1e240]", false),
            ("(1e240)", true),
        ] {
            skeleton.make(format!("object {word} moved").as_bytes());
            assert_eq!(skeleton.fold().is_some(), folds, "{word}");
            assert_eq!(skeleton.folded, folds, "{word}");
        }
        let mut other = super::Skeleton::default();
        skeleton.make(b"F/libc ( 1234): x 1f2e3d");
        other.make(b"F/libc ( 7f18): x 1f2e3d");
        assert!(skeleton.fold().is_some() && other.fold().is_some());
        assert_ne!(skeleton, other, "a word of digits is not a folded value");
        // Two values whose marks lie in one word of eight bytes, and more
        // further on: each is folded.
        skeleton.make(b"0aaa a000 f00d x dead0beef");
        assert!(skeleton.fold().is_some());
        assert_eq!(skeleton.bytes(), b"011a a110 a11a x a1111111a");
    }

    /// The eight-bytes-at-a-time marks and digits made `0` are each
    /// byte's: every byte in every place, beside every other.
    #[test]
    fn the_marks_of_eight_bytes_are_each_bytes() {
        for at in 0..8 {
            for b in 0..=255u8 {
                for other in [
                    0u8, b'/', b'0', b'9', b':', b'a', b'f', b'g', 0x80, 0xB9, 0xE6, 0xFF,
                ] {
                    let mut bytes = [other; 8];
                    bytes[at] = b;
                    let w = u64::from_le_bytes(bytes);
                    let mark = |f: fn(u8) -> bool| {
                        bytes
                            .iter()
                            .enumerate()
                            .fold(0u64, |m, (i, &c)| m | (u64::from(f(c)) << (8 * i + 7)))
                    };
                    assert_eq!(super::zeros(w), mark(|c| c == b'0'), "{b} at {at}");
                    let zeroed = bytes.map(|c| if c.is_ascii_digit() { b'0' } else { c });
                    assert_eq!(
                        super::zeroed(w),
                        u64::from_le_bytes(zeroed),
                        "{b} at {at} beside {other}"
                    );
                    assert_eq!(
                        super::hex_letters(w),
                        mark(|c| (b'a'..=b'f').contains(&c)),
                        "{b} at {at}"
                    );
                }
            }
        }
    }

    /// The skeleton a line's hex values fold to, word by word from its
    /// start (the fold before its search for a mark eight bytes at a time).
    fn fold_word_by_word(skeleton: &[u8]) -> Option<Vec<u8>> {
        if skeleton.iter().any(|b| b"\"'`".contains(b)) {
            return None;
        }
        let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
        let mut out = skeleton.to_vec();
        let mut folded = false;
        let mut i = 0;
        while i < out.len() {
            let n = out[i..].iter().take_while(|b| word(b)).count();
            let w = &out[i..i + n];
            let hex = w.iter().all(|&b| b == b'0' || (b'a'..=b'f').contains(&b));
            if n >= 4
                && hex
                && w.contains(&b'0')
                && w.iter().any(|&b| b != b'0')
                && (i == 0 || out[i - 1] != b'[')
            {
                let class = |b: u8| if b == b'0' { b'0' } else { b'a' };
                let (first, last) = (class(w[0]), class(w[n - 1]));
                out[i..i + n].fill(b'1');
                out[i] = first;
                out[i + n - 1] = last;
                folded = true;
            }
            i += n.max(1);
        }
        folded.then_some(out)
    }

    proptest! {
        /// The fold is the word-by-word fold, for lines of every length up
        /// to the longest remembered, and its hash is a folded skeleton's.
        #[test]
        fn the_fold_is_the_word_by_word_fold(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" ".to_owned()), Just("[".to_owned()), Just("_".to_owned()),
                    Just("-".to_owned()), Just("\"".to_owned()), Just("g".to_owned()),
                    "[a-f0-9]{1,9}", "[a-z]{1,5}", "[0-9]{1,4}",
                ],
                0..40,
            )
        ) {
            let line = parts.concat();
            let line = &line.as_bytes()[..line.len().min(super::MEMO_LINE)];
            let mut skeleton = super::Skeleton::default();
            let plain = skeleton.make(line);
            let want = fold_word_by_word(&skeleton.bytes());
            let hash = skeleton.fold();
            prop_assert_eq!(hash.is_some(), want.is_some(), "{:?}", String::from_utf8_lossy(line));
            prop_assert_eq!(skeleton.folded, want.is_some());
            if let Some(want) = want {
                prop_assert_eq!(skeleton.bytes(), want);
                prop_assert_eq!(hash, Some(skeleton.hash()));
                prop_assert_ne!(hash, Some(plain));
            } else {
                prop_assert_eq!(skeleton.hash(), plain, "a line not folded is left as it was");
            }
        }
    }

    /// A lookup of a line reads how lines of its skeleton were judged and
    /// the skeleton's bytes from the first few bytes of a slot.
    #[test]
    fn a_lookup_reads_the_start_of_a_slot() {
        use std::mem::offset_of;
        let bytes = offset_of!(super::Slot, skeleton) + offset_of!(super::Skeleton, bytes);
        assert!(offset_of!(super::Slot, judged) < bytes);
        assert!(bytes <= 32, "the skeleton's bytes start at {bytes}");
        assert!(offset_of!(super::Slot, shapes) > bytes);
    }

    /// A slot whose tag is the line's holds the line's skeleton only if
    /// its bytes are the same: the tag is a few bits of a hash, which two
    /// skeletons may share.
    #[test]
    fn a_tag_alone_does_not_find_a_skeleton() {
        let mut memo = super::Memo::default();
        let line = b"error: disk 001 full";
        assert_eq!(memo.rank(line), None);
        let error = super::Judged {
            rank: Some(SalientRank::Error),
            gated: true,
        };
        memo.remember_rank(line, error);
        let (slot, tag) = (memo.last.expect("looked up").slot, memo.tag);
        assert!(memo.holds(slot));
        // Another skeleton given the same slot and tag, as a collision of
        // the hash's bits would.
        memo.skeleton.make(b"error: disk 001 fool");
        memo.tag = tag;
        assert!(!memo.holds(slot));
        memo.skeleton.make(b"error: disk 999 full");
        memo.tag = tag;
        assert!(memo.holds(slot), "the same skeleton, other digits");
    }

    /// A line looked up, judged and shaped leaves its rank and its shape
    /// for the next line of its skeleton: neither is made again.
    #[test]
    fn a_line_judged_and_shaped_is_remembered_for_both() {
        let mut memo = super::Memo::default();
        let r = SalientRank::Error;
        let (a, b) = (
            b"error: disk 1 full".as_slice(),
            b"error: disk 7 full".as_slice(),
        );
        let error = super::Judged {
            rank: Some(r),
            gated: true,
        };
        assert_eq!(memo.rank(a), None);
        memo.remember_rank(a, error);
        let shape = memo.ranked(a, r);
        assert_eq!(memo.rank(b), Some(error), "the rank outlives the shape");
        assert_eq!((memo.ranked(b, r), memo.made), (shape, 1));
    }

    /// A line that comes again stays remembered while lines seen once
    /// each (a word of their own: a skeleton of their own) pass.
    #[test]
    fn lines_seen_once_do_not_push_out_a_line_that_comes_again() {
        let mut memo = super::Memo::default();
        let again = |n: u64| format!("error: disk {:03} full", n % 1000).into_bytes();
        let error = super::Judged {
            rank: Some(SalientRank::Error),
            gated: true,
        };
        let first = again(1);
        assert_eq!(memo.rank(&first), None);
        memo.remember_rank(&first, error);
        // Found once: it has a chance.
        assert_eq!(memo.rank(&again(2)), Some(error));
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..400 {
            for _ in 0..40 {
                x = x.rotate_left(13).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95) ^ 0x1234_5678;
                // Not a hex value (a `g` in the word): a skeleton of its own.
                let once = format!("warning: object g{x:x} moved");
                if memo.rank(once.as_bytes()).is_none() {
                    let unmatched = super::Judged {
                        rank: None,
                        gated: false,
                    };
                    memo.remember_rank(once.as_bytes(), unmatched);
                }
            }
            assert_eq!(memo.rank(&again(round)), Some(error), "round {round}");
        }
    }

    /// Lines of three skeletons whose two slots are the same (found by
    /// trying words until three fall in one set: among more than twice as
    /// many words as there are sets, three do).
    fn three_of_one_set(memo: &mut super::Memo) -> [Vec<u8>; 3] {
        let mut by_set = std::collections::HashMap::<usize, Vec<Vec<u8>>>::new();
        for word in 0..1u32 << 12 {
            // Letters only, so that each is a skeleton of its own.
            let name: String = (0..4)
                .map(|k| char::from(b'g' + ((word >> (3 * k)) & 7) as u8))
                .collect();
            let line = format!("error: disk {name} 001 full").into_bytes();
            let h = memo.skeleton.make(&line);
            let set = memo.find(h).expect_err("an empty memo holds nothing");
            let lines = by_set.entry(set).or_default();
            lines.push(line);
            if lines.len() == 3 {
                let mut it = lines.drain(..);
                return std::array::from_fn(|_| it.next().expect("three"));
            }
        }
        unreachable!("three of 4,096 words share one of 1,024 sets")
    }

    /// Two skeletons that come again and share a set are both remembered;
    /// a third that wants their set takes the slot of the one with fewer
    /// chances once it has none, and the other stays.
    #[test]
    fn two_skeletons_of_one_set_are_both_remembered() {
        let mut memo = super::Memo::default();
        // The slots, made on the first lookup.
        assert_eq!(memo.rank(b"nothing"), None);
        let [a, b, c] = three_of_one_set(&mut memo);
        let error = super::Judged {
            rank: Some(SalientRank::Error),
            gated: true,
        };
        for line in [&a, &b] {
            assert_eq!(memo.rank(line), None);
            memo.remember_rank(line, error);
        }
        // Both found again: both hold their slots, `a` with three chances
        // and `b` with one.
        for _ in 0..3 {
            assert_eq!(memo.rank(&a), Some(error));
        }
        assert_eq!(memo.rank(&b), Some(error));
        // A third wants their set: `b`, with fewer chances, loses its one,
        assert_eq!(memo.rank(&c), None);
        memo.remember_rank(&c, error);
        assert_eq!(memo.rank(&c), None, "taken before its chances ran out");
        // and then its slot.
        memo.remember_rank(&c, error);
        assert_eq!(memo.rank(&c), Some(error));
        assert_eq!(memo.rank(&a), Some(error));
        assert_eq!(memo.rank(&b), None, "the one with fewer chances is taken");
    }

    fn same(a: &str, b: &str) {
        assert_eq!(key(a.as_bytes()), key(b.as_bytes()), "{a:?} vs {b:?}");
    }

    fn differ(a: &str, b: &str) {
        assert_ne!(key(a.as_bytes()), key(b.as_bytes()), "{a:?} vs {b:?}");
    }

    #[test]
    fn lines_that_differ_in_what_varies_are_one_shape() {
        // numbers, timestamps, ids
        same(
            "2015-07-29 17:41:44,747 - WARN  [RecvWorker:188978561024] - Connection broken for id 188978561024, my id = 1, error = ",
            "2015-07-30 09:02:11,003 - WARN  [RecvWorker:3] - Connection broken for id 3, my id = 2, error = ",
        );
        // hex and UUIDs
        same(
            "object 9f86d081884c7d65 missing (req 550e8400-e29b-41d4-a716-446655440000)",
            "object 2c26b46b68ffc68f missing (req 6ba7b810-9dad-11d1-80b4-00c04fd430c8)",
        );
        // IP addresses and ports
        same(
            "ERROR connect to 10.0.3.4:8080 refused",
            "ERROR connect to 192.168.100.254:443 refused",
        );
        // paths
        same(
            "error: could not read /home/a/project/src/lib.rs",
            "error: could not read ./other/dir/main.rs",
        );
        same(
            "  --> src/lib.rs:12:9",
            "  --> crates/core/src/parse.rs:300:17",
        );
        // quoted values
        same(
            "warning: unused variable `x1`",
            "warning: unused variable `buffer_len`",
        );
        same("KeyError: 'name'", "KeyError: 'other'");
        same(
            r#"level=error msg="disk full""#,
            r#"level=error msg="disk  full""#,
        );
        // digits inside words, whitespace runs
        same("worker-3 crashed", "worker-12   crashed");
        // a name of numbered parts is not an error code
        same(
            "R30-M0-N9-C:J16-U01 RAS KERNEL FATAL data storage interrupt",
            "R16-M0-NB-I:J18-U11 RAS KERNEL FATAL data storage interrupt",
        );
        same("test case_7 FAILED", "test case_1234 FAILED");
        // exact repeats
        same("npm ERR! code E404", "npm ERR! code E404");
    }

    #[test]
    fn lines_that_say_different_things_are_different_shapes() {
        differ(
            "ERROR Unexpected exception causing shutdown",
            "ERROR Unexpected exception causing close",
        );
        // error codes name different errors
        differ(
            "error[E0308]: mismatched types",
            "error[E0425]: mismatched types",
        );
        differ(
            "x.ts(3,5): error TS2304: nope",
            "x.ts(3,5): error TS2322: nope",
        );
        differ(
            "foo.cpp(12): error C2065: nope",
            "foo.cpp(12): error C2064: nope",
        );
        // a word that is not quoted is part of the message
        differ("ValueError: bad", "TypeError: bad");
        // an apostrophe inside a word is not a quote
        differ("don't retry host", "don't retry port");
        // a level is not a path
        differ("E/Camera(12): open failed", "E/Audio(12): open failed");
        // a JSON log's messages and keys
        differ(
            r#"{"level":"error","msg":"db down"}"#,
            r#"{"level":"error","msg":"disk full"}"#,
        );
        differ(r#"{"level":"error"}"#, r#"{"severity":"error"}"#);
    }

    #[test]
    fn nothing_panics_on_odd_input() {
        for s in [
            "",
            " ",
            "\"",
            "'",
            "`",
            "/",
            "\\",
            "a/",
            "C:\\",
            "'''",
            "\"a",
            "x\u{1F600}y",
            "\t\r",
        ] {
            let _ = key(s.as_bytes());
        }
        assert_eq!(key(b"  a  "), key(b"a"));
    }
}
