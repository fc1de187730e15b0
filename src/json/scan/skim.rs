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

use super::{is_ws, whole_string, Num};

/// The deepest nesting the skim reads (a bit a level in one word).
const MAX_DEPTH: u32 = 64;

/// Reads the container that starts `s` (at its `[` or `{`), valid JSON and
/// ending within `s`: the offset just past its end, and how many direct
/// children it has (an array's elements, an object's members). `None` when
/// it is not one the skim reads whole (see the module's docs).
pub(super) fn skim(s: &[u8]) -> Option<(usize, u64)> {
    // One bit a level, the innermost lowest: set for an object.
    let mut objects: u64 = match s.first()? {
        b'{' => 1,
        b'[' => 0,
        _ => return None,
    };
    let mut depth: u32 = 1;
    let mut count: u64 = 0;
    let mut i = 1;
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
            let j = whole_string(s.get(i + 1..)?)?.ok()?;
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
                let j = whole_string(s.get(i + 1..)?)?.ok()?;
                i += j + 2;
            }
            b'-' | b'0'..=b'9' => {
                let num = match s[i] {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                };
                i += 1;
                if num == Num::Int {
                    while i < s.len() && s[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                let (num, took) = num.run(&s[i..]);
                i += took;
                // (One that reaches the end of `s`, which may go on past
                // it, has nothing after it: see `after_value`.)
                if !num.complete() {
                    return None;
                }
            }
            b't' | b'f' | b'n' => {
                let word: &[u8] = match s[i] {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !s[i..].starts_with(word) {
                    return None;
                }
                i += word.len();
            }
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

/// The byte that ends an object, or an array.
#[inline(always)]
fn closer(object: bool) -> u8 {
    if object {
        b'}'
    } else {
        b']'
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
    use super::skim;
    use proptest::prelude::*;

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
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// What the skim takes is a container the token-by-token path
        /// takes, ending where it says, with as many children: containers
        /// serde_json writes with a few bytes changed, dropped or added
        /// (JSON's own bytes), and near-JSON made of JSON's bytes.
        #[test]
        fn a_skim_takes_only_what_the_tokenizer_takes(
            input in proptest::prop_oneof![
                (
                    value(),
                    any::<bool>(),
                    proptest::collection::vec(
                        (any::<proptest::sample::Index>(), 0..3u8, proptest::sample::select(
                            b"{}[],:\"\\ \n\x01a0-.eE+tfnul9".to_vec(),
                        )),
                        1..4,
                    ),
                ).prop_map(|(v, pretty, edits)| {
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
                        &b"{"[..], b"}", b"[", b"]", b",", b":", b"\"k\"", b"\"v\\n\"",
                        b"12", b"-0.5e3", b"true", b"null", b" ", b"\"\\u00e9\"",
                    ]),
                    0..30,
                ).prop_map(|parts| parts.concat()),
            ]
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
