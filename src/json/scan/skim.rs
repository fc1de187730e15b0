//! A small container read whole in one pass, for a sink that wants only
//! where it ends and how many children it has ([`Tokens::skim_limit`]).
//!
//! The tokenizer's loop keeps its state between chunks and reports every
//! token; inside a container the sink will only count (a tail-side record
//! of a long array), that is all overhead. [`skim`] reads such a container
//! with no state kept and nothing reported, and gives up (returns `None`)
//! on anything it does not take at once: a value past the bytes it was
//! given, an escape the string's bytes do not hold whole, deep nesting, or
//! an error. The tokenizer then reads the same container token by token
//! from its start, so what it accepts, and where it reports an error, do
//! not depend on the skim: the skim only ever accepts a container the
//! token-by-token path accepts, with the same end and count.
//!
//! [`Tokens::skim_limit`]: super::Tokens::skim_limit

use super::{closer, is_ws, special_marks, whole_string, Num};
use crate::word::le_word;

/// The deepest nesting the skim reads (a bit a level in one word).
const MAX_DEPTH: u32 = 64;

/// The lengths of the strings of the last container skimmed, in order.
///
/// A long array's records most often have the same members with strings
/// of the same lengths. A string whose length is found by a search holds up
/// everything after it until the search ends; one whose length is guessed
/// from the record before it, and checked, does not (the check waits on
/// nothing the rest of the record needs, and is most often right). Only
/// speed depends on the memo: each guess is checked whole.
#[derive(Clone)]
pub(super) struct Memo([u8; MEMO]);

/// How many of a container's strings the memo keeps.
const MEMO: usize = 32;

/// Not known (a length the memo does not keep).
const UNKNOWN: u8 = u8::MAX;

impl Default for Memo {
    fn default() -> Self {
        Memo([UNKNOWN; MEMO])
    }
}

impl Memo {
    /// The length of the string at `at` in `s` (just past its opening
    /// quote), the container's `k`th: as [`whole_string`] finds it, but
    /// guessed first from the last container's `k`th string.
    #[inline(always)]
    fn string(&mut self, s: &[u8], at: usize, k: usize) -> Option<usize> {
        if let Some(&guess) = self.0.get(k) {
            if guess != UNKNOWN && plain_string(s, at, usize::from(guess)) {
                return Some(usize::from(guess));
            }
        }
        let len = whole_string(s.get(at..)?)?.ok()?;
        if let Some(slot) = self.0.get_mut(k) {
            *slot = u8::try_from(len).unwrap_or(UNKNOWN);
        }
        Some(len)
    }
}

/// Whether the `len` bytes of `s` from `at` hold no quote, backslash or
/// control byte, and a quote follows them: a string's content of `len`
/// bytes, escapes none.
#[inline(always)]
fn plain_string(s: &[u8], at: usize, len: usize) -> bool {
    let end = at + len;
    if s.get(end) != Some(&b'"') {
        return false;
    }
    if len < 8 {
        // One word, its bytes past the string's not looked at (a byte is
        // marked only at or above a special byte: see `special_marks`).
        let Some(w) = s.get(at..at + 8) else {
            return false;
        };
        return special_marks(le_word(w)) & ((1u64 << (8 * len)) - 1) == 0;
    }
    let mut k = at;
    while k + 8 < end {
        if special_marks(le_word(&s[k..k + 8])) != 0 {
            return false;
        }
        k += 8;
    }
    special_marks(le_word(&s[end - 8..end])) == 0
}

/// Reads the container that starts `s` (at its `[` or `{`), valid JSON and
/// ending within `s`: the offset just past its end, and how many direct
/// children it has (an array's elements, an object's members). `None` when
/// it is not one the skim reads whole (see the module's docs).
pub(super) fn skim(s: &[u8], memo: &mut Memo) -> Option<(usize, u64)> {
    // One bit a level, the innermost lowest: set for an object.
    let mut objects: u64 = match s.first()? {
        b'{' => 1,
        b'[' => 0,
        _ => return None,
    };
    let mut depth: u32 = 1;
    let mut count: u64 = 0;
    let mut i = 1;
    // Strings so far (keys too).
    let mut strings = 0;
    // Just past an opening bracket: its end, or its first child.
    let mut opened = true;
    loop {
        i = skip_ws(s, i)?;
        let object = objects & 1 == 1;
        if opened {
            opened = false;
            if s[i] == closer(object) {
                i += 1;
                depth -= 1;
                objects >>= 1;
                if depth == 0 {
                    return Some((i, count));
                }
                i = after_value(s, i, &mut objects, &mut depth, &mut opened)?;
                if depth == 0 {
                    return Some((i, count));
                }
                continue;
            }
        }
        // A child: a member's name and colon first, in an object.
        if depth == 1 {
            count += 1;
        }
        if object {
            if s[i] != b'"' {
                return None;
            }
            let j = memo.string(s, i + 1, strings)?;
            strings += 1;
            i = skip_ws(s, i + j + 2)?;
            if s[i] != b':' {
                return None;
            }
            i = skip_ws(s, i + 1)?;
        }
        // Its value.
        match s[i] {
            b'{' | b'[' => {
                if depth == MAX_DEPTH {
                    return None;
                }
                objects = objects << 1 | u64::from(s[i] == b'{');
                depth += 1;
                i += 1;
                opened = true;
                continue;
            }
            b'"' => {
                let j = memo.string(s, i + 1, strings)?;
                strings += 1;
                i += j + 2;
            }
            b'-' | b'0'..=b'9' => {
                let (num, took) = Num::read(&s[i..]);
                i += took;
                // (One that reaches the end of `s`, which may go on past
                // it, has nothing after it: see `after_value`.)
                if !num.complete() {
                    return None;
                }
            }
            // Compared as words of a known length, not by a call.
            b't' if s.get(i..i + 4) == Some(b"true") => i += 4,
            b'f' if s.get(i..i + 5) == Some(b"false") => i += 5,
            b'n' if s.get(i..i + 4) == Some(b"null") => i += 4,
            _ => return None,
        }
        i = after_value(s, i, &mut objects, &mut depth, &mut opened)?;
        if depth == 0 {
            return Some((i, count));
        }
    }
}

/// After a value at `i`: past its comma (the next child comes), or past
/// the container ends that follow it (`depth` 0 when the skimmed one
/// ended).
#[inline(always)]
fn after_value(
    s: &[u8],
    mut i: usize,
    objects: &mut u64,
    depth: &mut u32,
    opened: &mut bool,
) -> Option<usize> {
    loop {
        i = skip_ws(s, i)?;
        if s[i] == b',' {
            *opened = false;
            return Some(i + 1);
        }
        if s[i] != closer(*objects & 1 == 1) {
            return None;
        }
        i += 1;
        *depth -= 1;
        *objects >>= 1;
        if *depth == 0 {
            return Some(i);
        }
    }
}

/// The first byte from `i` on that is not whitespace; `None` at the end of
/// `s`.
#[inline(always)]
fn skip_ws(s: &[u8], mut i: usize) -> Option<usize> {
    while is_ws(*s.get(i)?) {
        i += 1;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Offset, Scanner, Tokens};
    use super::Memo;
    use proptest::prelude::*;

    /// The skim with a fresh memo, checked against the skim with a memo
    /// of itself (every guess right) and of another document.
    fn skim(s: &[u8]) -> Option<(usize, u64)> {
        let fresh = super::skim(s, &mut Memo::default());
        let mut memo = Memo::default();
        let _ = super::skim(s, &mut memo);
        assert_eq!(super::skim(s, &mut memo), fresh, "guessed from itself");
        let mut other = Memo::default();
        let _ = super::skim(
            br#"{"a":"","bb":"0123456789abcdef0","c":["x","yyyyyyyy",""]}"#,
            &mut other,
        );
        assert_eq!(super::skim(s, &mut other), fresh, "guessed from another");
        fresh
    }

    /// The token-by-token path's reading of a whole document: whether it
    /// is one, and its top container's direct children.
    fn children(doc: &[u8]) -> Option<u64> {
        #[derive(Default)]
        struct Count {
            depth: u32,
            object: bool,
            count: u64,
        }
        impl Count {
            fn child(&mut self, key: bool) {
                if self.depth == 1 && (key || !self.object) {
                    self.count += 1;
                }
            }
        }
        impl Tokens for Count {
            fn begin(&mut self, kind: Kind, _: Offset) {
                if self.depth == 0 {
                    self.object = kind == Kind::Object;
                }
                self.child(false);
                self.depth += 1;
            }
            fn end(&mut self, _: Offset) {
                self.depth -= 1;
            }
            fn str_begin(&mut self, key: bool, _: Offset) {
                self.child(key);
            }
            fn str_part(&mut self, _: &[u8]) {}
            fn str_end(&mut self, _: Offset) {}
            fn scalar(&mut self, _: Option<&[u8]>, _: Offset, _: Offset) {
                self.child(false);
            }
        }
        let mut scanner = Scanner::new();
        let mut count = Count::default();
        scanner.feed(doc, &mut count);
        scanner.finish(&mut count).ok()?;
        matches!(doc.first(), Some(b'[' | b'{')).then_some(count.count)
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        value_of(".{0,12}")
    }

    /// Strings with no byte serde_json escapes, structural bytes among
    /// them, some longer than the memo's guesses.
    const PLAIN: &str = "[a-z0-9 ,:{}\\[\\]\u{e9}]{0,300}";

    /// Values whose strings match `text`.
    fn value_of(text: &'static str) -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(text, inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Containers serde_json writes (strings matching `text`) with a few
    /// bytes changed, dropped or added (JSON's own bytes), and near-JSON
    /// made of JSON's bytes.
    fn near_json(text: &'static str) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (
                value_of(text),
                any::<bool>(),
                proptest::collection::vec(
                    (
                        any::<proptest::sample::Index>(),
                        0..3u8,
                        proptest::sample::select(b"{}[],:\"\\ \n\x01a0-.eE+tfnul9".to_vec(),)
                    ),
                    1..4,
                ),
            )
                .prop_map(|(v, pretty, edits)| {
                    let mut doc = if pretty {
                        serde_json::to_vec_pretty(&v).unwrap()
                    } else {
                        serde_json::to_vec(&v).unwrap()
                    };
                    for (at, op, b) in edits {
                        let at = at.index(doc.len() + 1);
                        match op {
                            0 if at < doc.len() => doc[at] = b,
                            1 if at < doc.len() => {
                                doc.remove(at);
                            }
                            _ => doc.insert(at, b),
                        }
                    }
                    doc
                }),
            proptest::collection::vec(
                proptest::sample::select(vec![
                    &b"{"[..],
                    b"}",
                    b"[",
                    b"]",
                    b",",
                    b":",
                    b"\"k\"",
                    b"\"v\\n\"",
                    b"12",
                    b"-0.5e3",
                    b"true",
                    b"null",
                    b" ",
                    b"\"\\u00e9\"",
                ]),
                0..30,
            )
            .prop_map(|parts| parts.concat()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// What the skim takes is a container the token-by-token path
        /// takes, ending where it says, with as many children: containers
        /// serde_json writes with a few bytes changed, dropped or added
        /// (JSON's own bytes), and near-JSON made of JSON's bytes.
        #[test]
        fn a_skim_takes_only_what_the_tokenizer_takes(
            input in prop_oneof![near_json(".{0,12}"), near_json(PLAIN)],
        ) {
            let Some((len, count)) = skim(&input) else {
                return Ok(());
            };
            let doc = &input[..len];
            prop_assert_eq!(children(doc), Some(count), "{:?}", String::from_utf8_lossy(doc));
        }

        /// A container serde_json writes, compact or pretty, is taken
        /// whole, with its children counted; cut anywhere, it is not.
        #[test]
        fn a_skim_takes_every_container_in_reach(
            v in value().prop_filter("a container", |v| v.is_array() || v.is_object()),
            pretty in any::<bool>(),
            cut in any::<proptest::sample::Index>(),
        ) {
            let doc = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let n = v.as_array().map_or_else(|| v.as_object().unwrap().len(), Vec::len);
            prop_assert_eq!(skim(&doc), Some((doc.len(), n as u64)));
            let mut more = doc.clone();
            more.extend_from_slice(b",1]");
            prop_assert_eq!(skim(&more), Some((doc.len(), n as u64)));
            let cut = cut.index(doc.len());
            prop_assert_eq!(skim(&doc[..cut]), None);
        }
    }

    /// The tokenizer skims a container only when its sink allows it, and
    /// only one no longer than the sink's limit; what it skims it reports
    /// once, in place of the container's tokens.
    #[test]
    fn the_tokenizer_skims_within_its_sinks_limit() {
        struct Sink {
            depth: u32,
            limit: usize,
            log: String,
        }
        impl Tokens for Sink {
            fn begin(&mut self, _: Kind, at: Offset) {
                self.depth += 1;
                self.log += &format!("begin@{at} ");
            }
            fn end(&mut self, end: Offset) {
                self.depth -= 1;
                self.log += &format!("end@{end} ");
            }
            fn str_begin(&mut self, _: bool, _: Offset) {}
            fn str_part(&mut self, _: &[u8]) {}
            fn str_end(&mut self, _: Offset) {}
            fn scalar(&mut self, _: Option<&[u8]>, at: Offset, _: Offset) {
                self.log += &format!("scalar@{at} ");
            }
            fn skim_limit(&mut self) -> usize {
                if self.depth == 1 {
                    self.limit
                } else {
                    0
                }
            }
            fn skimmed(&mut self, kind: Kind, at: Offset, end: Offset, count: u64) {
                self.log += &format!("{kind:?}@{at}-{end}x{count} ");
            }
        }
        let doc = br#"[[1,2],{"a":[3]},[1,2,3,4,5],7]"#;
        let run = |limit: usize, part: usize| {
            let mut scanner = Scanner::new();
            let mut sink = Sink {
                depth: 0,
                limit,
                log: String::new(),
            };
            for p in doc.chunks(part) {
                scanner.feed(p, &mut sink);
            }
            scanner.finish(&mut sink).unwrap();
            sink.log
        };
        assert_eq!(
            run(11, doc.len()),
            "begin@0 Array@1-6x2 Object@7-16x1 Array@17-28x5 scalar@29 end@31 "
        );
        assert_eq!(
            run(10, doc.len()),
            "begin@0 Array@1-6x2 Object@7-16x1 begin@17 scalar@18 scalar@20 scalar@22 \
             scalar@24 scalar@26 end@28 scalar@29 end@31 "
        );
        // A container a part's end cuts is read token by token.
        assert!(
            run(11, 12).contains("Array@1-6x2 begin@7 "),
            "{}",
            run(11, 12)
        );
        assert_eq!(run(0, doc.len()).matches("begin@").count(), 5);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// A memo of one container makes the skim of the next no
        /// different, whatever it guesses: strings of lengths one off,
        /// special bytes where a guess ends, strings cut short.
        #[test]
        fn a_guessed_length_never_changes_a_skim(
            a in near_json(PLAIN),
            b in prop_oneof![near_json(PLAIN), near_json(".{0,12}")],
        ) {
            let mut memo = Memo::default();
            let _ = super::skim(&a, &mut memo);
            let fresh = super::skim(&b, &mut Memo::default());
            prop_assert_eq!(super::skim(&b, &mut memo), fresh);
        }
    }

    #[test]
    fn a_guess_is_taken_only_when_the_string_has_that_length() {
        // Guesses from a container of strings of 0 to 40 bytes, then the
        // same places holding one byte more, one less, or one string a
        // quote, a backslash or a control byte at one place: each read as
        // a search reads it.
        let strings = |f: &dyn Fn(usize) -> String| {
            let items: Vec<String> = (0..40).map(|n| format!("\"{}\"", f(n))).collect();
            format!("[{}]", items.join(","))
        };
        let mut memo = Memo::default();
        let base = strings(&|n| "a".repeat(n));
        assert_eq!(
            super::skim(base.as_bytes(), &mut memo),
            Some((base.len(), 40))
        );
        let mut others = vec![
            strings(&|n| "b".repeat(n + 1)),
            strings(&|n| "c".repeat(n.saturating_sub(1))),
        ];
        for bad in ["\\\"", "\"", "\u{1}"] {
            for one in 1..40 {
                for at in 0..one {
                    others.push(strings(&|n| {
                        let mut s = "a".repeat(n);
                        if n == one {
                            s.replace_range(at..at + 1, bad);
                        }
                        s
                    }));
                }
            }
        }
        for doc in &others {
            let mut trained = memo.clone();
            assert_eq!(
                super::skim(doc.as_bytes(), &mut trained),
                super::skim(doc.as_bytes(), &mut Memo::default()),
                "{doc}"
            );
        }
    }

    #[test]
    fn a_skim_gives_up_where_the_tokenizer_must_read_on() {
        // A number that may go on, a string or escape past the end, an
        // error, nesting past its depth.
        for s in [
            &b"[1,12"[..],
            b"[\"ab",
            b"[\"a\\",
            b"[\"\\u00\"]",
            b"[tru]",
            b"[1,]",
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"[\"\x01\"]",
            b"[01]",
            b"[1}",
            b"{\"a\":1]",
            b"",
            b"1",
        ] {
            assert_eq!(skim(s), None, "{:?}", String::from_utf8_lossy(s));
        }
        let deep = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d)).into_bytes();
        assert_eq!(skim(&deep(64)), Some((128, 1)));
        assert_eq!(skim(&deep(65)), None);
        assert_eq!(skim(b"[[], {}, \"\\\"\", -0.5e+3]"), Some((23, 4)));
    }
}
