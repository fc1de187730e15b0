//! JSON previews: every preview parses, fits the budget, has the input's
//! shape (the same keys in the same order, the same types at each kept
//! path), and every marker's pointer reads back, through the store, exactly
//! the value it stands for.

mod seeds;

use std::fmt::Write as _;

use proptest::prelude::*;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use spillway::{Format, JsonPointer, Outcome, Policy, Spiller, Store};

/// A JSON value that keeps its members in order.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<V>),
    Obj(Vec<(String, V)>),
}

impl<'de> Deserialize<'de> for V {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<V, D::Error> {
        struct Vis;
        impl<'de> Visitor<'de> for Vis {
            type Value = V;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<V, E> {
                Ok(V::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<V, E> {
                Ok(V::Bool(b))
            }
            // Numbers to 12 digits: the parser rounds long ones, not
            // always the same way twice.
            fn visit_i64<E>(self, n: i64) -> Result<V, E> {
                Ok(V::Num(format!("{:.12e}", n as f64)))
            }
            fn visit_u64<E>(self, n: u64) -> Result<V, E> {
                Ok(V::Num(format!("{:.12e}", n as f64)))
            }
            fn visit_f64<E>(self, n: f64) -> Result<V, E> {
                Ok(V::Num(format!("{:.12e}", n)))
            }
            fn visit_str<E>(self, s: &str) -> Result<V, E> {
                Ok(V::Str(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<V, E> {
                Ok(V::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<V, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(V::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<V, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry()? {
                    v.push((k, x));
                }
                Ok(V::Obj(v))
            }
        }
        d.deserialize_any(Vis)
    }
}

fn parse(text: &[u8]) -> V {
    let mut de = serde_json::Deserializer::from_slice(text);
    let v = V::deserialize(&mut de).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&text[..text.len().min(2000)])
        )
    });
    de.end().expect("one document");
    v
}

fn write(v: &V, pretty: bool, depth: usize, out: &mut String) {
    let nl = |out: &mut String, d: usize| {
        if pretty {
            out.push('\n');
            out.push_str(&"  ".repeat(d));
        }
    };
    match v {
        V::Null => out.push_str("null"),
        V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        V::Num(n) => out.push_str(n),
        V::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
        V::Arr(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, depth + 1);
                write(x, pretty, depth + 1, out);
            }
            if !a.is_empty() {
                nl(out, depth);
            }
            out.push(']');
        }
        V::Obj(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, depth + 1);
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(if pretty { ": " } else { ":" });
                write(x, pretty, depth + 1, out);
            }
            if !o.is_empty() {
                nl(out, depth);
            }
            out.push('}');
        }
    }
}

fn at<'a>(v: &'a V, p: &JsonPointer) -> Option<&'a V> {
    let mut cur = v;
    for t in p.tokens() {
        cur = match cur {
            V::Arr(a) => a.get(t.parse::<usize>().ok()?)?,
            V::Obj(o) => &o.iter().find(|(k, _)| k == t)?.1,
            _ => return None,
        };
    }
    Some(cur)
}

fn is_marker(s: &str) -> bool {
    let marker = s.starts_with("[spillway: ") && s.ends_with(']');
    if marker {
        // One of a thing is singular.
        for plural in [" 1 elements", " 1 members", "of 1 elements", "of 1 members"] {
            assert!(!s.contains(plural), "{s}");
        }
    }
    marker
}

/// The pointer a marker's read hint names.
fn hint_pointer(marker: &str) -> JsonPointer {
    let i = marker.rfind("--pointer ").expect("a read hint") + "--pointer ".len();
    let word = marker[i..].trim_end_matches(']').trim_end_matches("]…");
    let word = word
        .strip_prefix('\'')
        .and_then(|w| w.strip_suffix('\''))
        .map(|w| w.replace("'\\''", "'"))
        .unwrap_or_else(|| word.to_owned());
    word.parse().expect("a JSON Pointer")
}

fn number_after(text: &str, prefix: &str) -> u64 {
    let i = text.find(prefix).expect(prefix) + prefix.len();
    text[i..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// A marker's pointer reads back exactly the value at that pointer.
fn reads_back(store: &Store, id: &spillway::ContentId, doc: &V, p: &JsonPointer) {
    let mut out = Vec::new();
    store
        .read_pointer(id, p, &mut out)
        .unwrap_or_else(|e| panic!("{p}: {e}"));
    let want = at(doc, p).unwrap_or_else(|| panic!("{p} names nothing"));
    // Both sides through the same parser (long numbers round the same way).
    let mut text = String::new();
    write(want, false, 0, &mut text);
    let (got, want) = (parse(&out), parse(text.as_bytes()));
    if got != want {
        let (g, w) = (format!("{got:?}"), format!("{want:?}"));
        let i = g
            .chars()
            .zip(w.chars())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let around =
            |s: &str| -> String { s.chars().skip(i.saturating_sub(80)).take(160).collect() };
        panic!(
            "pointer {p} reads back something else:\n got  …{}\n want …{}",
            around(&g),
            around(&w)
        );
    }
}

/// A marker names `want` and reads it back when a pointer names `want`
/// (`named`); when not (a member of an object that has its name twice, or
/// anything below one), it names no pointer and says why.
fn marker_reads(marker: &str, want: &JsonPointer, named: bool, read: bool, cx: &Cx<'_>) {
    if named {
        assert_eq!(&hint_pointer(marker), want, "marker {marker}");
        if read {
            reads_back(cx.0, cx.1, cx.2, want);
        }
    } else {
        assert!(!marker.contains("--pointer"), "{marker}");
        assert!(
            marker.contains("an earlier member of its object is also named"),
            "{marker}"
        );
    }
}

type Cx<'a> = (&'a Store, &'a spillway::ContentId, &'a V);

/// Checks that `preview` has `orig`'s shape and that every marker reads
/// back; returns the markers seen. `named` is whether a pointer names
/// `path` (a pointer names the first member of a name).
fn check_shape(preview: &V, orig: &V, path: JsonPointer, named: bool, cx: &Cx<'_>) -> usize {
    match (preview, orig) {
        (V::Str(s), _) if is_marker(s) && !matches!(orig, V::Str(o) if o == s) => {
            // A whole value elided.
            marker_reads(s, &path, named, true, cx);
            1
        }
        (V::Str(s), V::Str(o)) => {
            if s == o {
                return 0;
            }
            let m = s
                .find("…[spillway: ")
                .unwrap_or_else(|| panic!("cut string without marker: {s:?}"));
            let end = s.rfind("]…").expect("marker end") + "]…".len();
            assert!(o.starts_with(&s[..m]), "string head is a prefix");
            assert!(o.ends_with(&s[end..]), "string tail is a suffix");
            let omitted = number_after(&s[m..], "…[spillway: ");
            let raw_len = serde_json::to_string(o).unwrap().len() as u64 - 2;
            let shown = (serde_json::to_string(&s[..m]).unwrap().len()
                + serde_json::to_string(&s[end..]).unwrap().len()) as u64
                - 4;
            assert_eq!(
                omitted + shown,
                raw_len,
                "string marker counts raw bytes: {s:?}"
            );
            marker_reads(&s[m..end - "…".len()], &path, named, true, cx);
            1
        }
        (V::Arr(a), V::Arr(o)) => {
            let mut markers = 0;
            let range = a.iter().position(
                |x| matches!(x, V::Str(s) if is_marker(s) && s.contains(" elements omitted, ")),
            );
            let (head, tail, omitted) = match range {
                Some(i) => {
                    let V::Str(m) = &a[i] else { unreachable!() };
                    let count = number_after(m, "[spillway: ");
                    let first: u64 = if named {
                        number_after(m, &format!("omitted, {path}/"))
                    } else {
                        i as u64
                    };
                    let p = path.clone().child(&first.to_string());
                    marker_reads(m, &p, named, true, cx);
                    markers += 1;
                    assert_eq!(first as usize, i, "the range starts after the head");
                    (&a[..i], &a[i + 1..], count as usize)
                }
                None => (&a[..], &a[..0], 0),
            };
            assert_eq!(
                head.len() + tail.len() + omitted,
                o.len(),
                "elements add up"
            );
            for (i, x) in head.iter().enumerate() {
                markers += check_shape(x, &o[i], path.clone().child(&i.to_string()), named, cx);
            }
            let base = o.len() - tail.len();
            for (j, x) in tail.iter().enumerate() {
                let i = base + j;
                markers += check_shape(x, &o[i], path.clone().child(&i.to_string()), named, cx);
            }
            markers
        }
        (V::Obj(m), V::Obj(o)) => {
            let mut markers = 0;
            let mut next = 0;
            let mut seen_range = 0;
            for (k, x) in m {
                if let (true, V::Str(s)) = (k.starts_with('…'), x) {
                    if is_marker(s)
                        && (s.contains(" members omitted, ") || s.contains(" 1 member omitted, "))
                        && !o.iter().any(|(ok, _)| ok == k)
                    {
                        let count = number_after(s, "[spillway: ") as usize;
                        marker_reads(s, &path, named, false, cx);
                        next += count;
                        seen_range += count;
                        markers += 1;
                        continue;
                    }
                }
                let j = o[next..]
                    .iter()
                    .position(|(ok, _)| ok == k)
                    .unwrap_or_else(|| panic!("key {k:?} out of order or unknown at {path}"));
                assert_eq!(
                    j, 0,
                    "no member of {path} skipped without a marker before {k:?}"
                );
                let first = !o[..next].iter().any(|(ok, _)| ok == k);
                markers += check_shape(x, &o[next].1, path.clone().child(k), named && first, cx);
                next += 1;
            }
            assert_eq!(
                next,
                o.len(),
                "members add up at {path} ({seen_range} in a range)"
            );
            markers
        }
        (p, o) => {
            assert_eq!(p, o, "kept value at {path}");
            0
        }
    }
}

fn leaf() -> impl Strategy<Value = V> {
    prop_oneof![
        Just(V::Null),
        any::<bool>().prop_map(V::Bool),
        any::<i64>().prop_map(|n| V::Num(n.to_string())),
        (-1e6f64..1e6).prop_map(|f| V::Num(format!("{f:e}"))),
        "[a-z ]{0,20}".prop_map(V::Str),
        "[a-zé中😀\"\\\\/\n\t\u{1}~]{0,40}".prop_map(V::Str),
        (1usize..3000, any::<u8>()).prop_map(|(n, c)| V::Str(
            (0..n)
                .map(|i| char::from(b'a' + ((c as usize + i) % 26) as u8))
                .collect()
        )),
        (1usize..400).prop_map(|n| V::Str("é😀\\\"\n".repeat(n))),
        (1usize..200).prop_map(|n| V::Num("9".repeat(n))),
    ]
}

fn doc() -> impl Strategy<Value = V> {
    leaf().prop_recursive(6, 400, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..40).prop_map(V::Arr),
            (1usize..60, inner.clone()).prop_map(|(n, x)| V::Arr(vec![x; n])),
            // Now and then a name twice: JSON allows it, and a pointer
            // names the first.
            prop::collection::vec(("[ab]", inner.clone()), 0..6).prop_map(V::Obj),
            prop::collection::vec(("[a-z/~é\"]{0,8}", inner), 0..30).prop_map(|kv| {
                let mut seen = std::collections::HashSet::new();
                V::Obj(
                    kv.into_iter()
                        .filter(|(k, _)| seen.insert(k.clone()))
                        .collect(),
                )
            }),
        ]
    })
}

fn spiller(budget: u64, format: Format, dir: &std::path::Path) -> Spiller {
    // The command line's read hint (spillway_process::cli_read_hint): the
    // markers name `--pointer P`, which the checks below read back.
    let policy = Policy::builder()
        .max_inline_bytes(budget)
        .format(format)
        .read_hint(&spillway::ReadHint::Templates {
            stored: "read it with: spillway show {short_id} --{read_unit} {read_range}".into(),
            pointer: "spillway show {short_id} --pointer {pointer}".into(),
        })
        .build()
        .unwrap();
    Spiller::new(policy, Store::open(dir).unwrap()).unwrap()
}

fn check(doc: &V, pretty: bool, budget: u64, chunk: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let sp = spiller(budget, Format::Json, dir.path());
    let mut text = String::new();
    write(doc, pretty, 0, &mut text);
    // Compare with the document as parsed (long numbers rounded alike).
    let doc = &parse(text.as_bytes());
    let mut stage = sp.stage();
    for c in text.as_bytes().chunks(chunk) {
        stage.feed(c);
    }
    let out = stage.finish().unwrap();
    assert!(
        out.content.len() as u64 <= budget,
        "{} > {budget}",
        out.content.len()
    );
    if !out.spilled {
        assert_eq!(out.content, text);
        return out;
    }
    assert!(out.format.is_json(), "{:?}", out.format.json_error());
    let preview = parse(out.content.as_bytes());
    let spill = out.spill.as_ref().unwrap();
    let markers = check_shape(
        &preview,
        doc,
        JsonPointer::default(),
        true,
        &(sp.store(), &spill.id, doc),
    );
    if markers == 0 {
        assert_eq!(&preview, doc, "no marker: the whole document, compacted");
    }
    // One write gives the same outcome as any chunking.
    let whole = spiller(budget, Format::Json, dir.path())
        .apply(text.as_bytes())
        .unwrap();
    assert_eq!(whole.content, out.content);
    out
}

proptest! {
    #![proptest_config(seeds::config(192))]

    #[test]
    fn every_preview_is_json_of_the_same_shape_and_its_markers_read_back(
        doc in doc(),
        pretty in any::<bool>(),
        budget in 460u64..6000,
        chunk in 1usize..5000,
    ) {
        check(&doc, pretty, budget, chunk);
    }
}

#[test]
fn a_large_array_of_records_keeps_its_first_and_last_records() {
    // About 2.3 MB: past the first MiB the JSON preview reads on a thread
    // of its own, whether the document is streamed or written at once.
    let records: Vec<V> = (0..40_000)
        .map(|i| {
            V::Obj(vec![
                ("id".into(), V::Num(i.to_string())),
                ("name".into(), V::Str(format!("record {i}"))),
                (
                    "tags".into(),
                    V::Arr(vec![V::Str("a".into()), V::Str("b".into())]),
                ),
            ])
        })
        .collect();
    let doc = V::Obj(vec![
        ("items".into(), V::Arr(records)),
        ("total".into(), V::Num("40000".into())),
    ]);
    let out = check(&doc, false, 8192, 65536);
    let V::Obj(m) = parse(out.content.as_bytes()) else {
        panic!()
    };
    assert_eq!(m[0].0, "items");
    assert_eq!(m[1].0, "total");
    let V::Arr(items) = &m[0].1 else { panic!() };
    assert!(items.len() > 20, "{} items", items.len());
    let id = |r: &V| match r {
        V::Obj(r) => r[0].1.clone(),
        _ => V::Null,
    };
    assert_eq!(id(&items[0]), V::Num(format!("{:.12e}", 0.0)));
    assert_eq!(
        id(items.last().unwrap()),
        V::Num(format!("{:.12e}", 39999.0))
    );
    assert!(
        out.content.contains("elements omitted, /items/"),
        "{}",
        out.content
    );
}

#[test]
fn a_long_string_keeps_its_head_and_tail() {
    let s = format!("BEGIN{}END", "x".repeat(1 << 20));
    let doc = V::Obj(vec![
        ("log".into(), V::Str(s)),
        ("ok".into(), V::Bool(false)),
    ]);
    let out = check(&doc, true, 4096, 1 << 16);
    assert!(out.content.starts_with("{\"log\":\"BEGIN"));
    assert!(out.content.ends_with("END\",\"ok\":false}"));
}

/// A long string whose tail is only escapes and what they may hold (a
/// command's output as JSON: `\n` and digits; a log with every character
/// escaped as `\uXXXX`) keeps its head and its tail.
#[test]
fn a_string_of_escapes_keeps_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=100_000).map(|i| format!("{i}\\n")).collect();
    let cjk: String = "\\u4e2d\\u6587\\u65e5\\u5fd7 ".repeat(20_000) + "\\u7ed3\\u675f";
    let pairs = "\\\\".repeat(50_000);
    for (text, end) in [
        (format!("{{\"stdout\": \"{lines}\"}}"), "100000\\n\"}"),
        (format!("{{\"log\": \"{cjk}\"}}"), "\\u7ed3\\u675f\"}"),
        (format!("{{\"path\": \"{pairs}\"}}"), "\\\\\"}"),
    ] {
        for budget in [1024, 2048, 8192] {
            for chunk in [text.len(), 4093] {
                let sp = spiller(budget, Format::Json, dir.path());
                let mut stage = sp.stage();
                for c in text.as_bytes().chunks(chunk) {
                    stage.feed(c);
                }
                let out = stage.finish().unwrap();
                assert!(out.content.len() as u64 <= budget);
                assert!(out.format.is_json(), "{:?}", out.format.json_error());
                let V::Obj(m) = parse(out.content.as_bytes()) else {
                    panic!("{}", out.content)
                };
                let V::Str(kept) = &m[0].1 else { panic!() };
                assert!(out.content.ends_with(end), "{budget}: {}", out.content);
                // The tail takes its share of the string: most of what the
                // marker leaves.
                let tail = kept.rsplit("]…").next().unwrap();
                assert!(
                    tail.len() as u64 >= budget / 5,
                    "{budget}: a tail of {} bytes: {}",
                    tail.len(),
                    out.content
                );
            }
        }
    }
}

#[test]
fn a_pretty_document_that_fits_once_compact_is_compacted_whole() {
    let items: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    let pretty = format!("[\n  {}\n]\n", items.join(",\n  "));
    let compact = format!("[{}]", items.join(","));
    assert!(pretty.len() > 4096 && compact.len() <= 4096);
    let dir = tempfile::tempdir().unwrap();
    let out = spiller(4096, Format::Json, dir.path())
        .apply(pretty.as_bytes())
        .unwrap();
    assert!(out.spilled);
    assert_eq!(out.content, compact);
    assert_eq!(out.omitted_bytes, 0);
    assert_eq!(out.format, spillway::ContentFormat::Json);
}

#[test]
fn deep_nesting_is_summarized_in_bounded_memory() {
    let depth = 200_000;
    let text = "[".repeat(depth) + "1" + &"]".repeat(depth);
    let dir = tempfile::tempdir().unwrap();
    let sp = spiller(1024, Format::Json, dir.path());
    let out = sp.apply(text.as_bytes()).unwrap();
    assert!(out.format.is_json(), "{:?}", out.format.json_error());
    assert!(out.content.len() <= 1024);
    assert!(
        out.content.starts_with("[[[[") && out.content.contains("[spillway: "),
        "{}",
        out.content
    );
    let mut de = serde_json::Deserializer::from_str(&out.content);
    serde::de::IgnoredAny::deserialize(&mut de).unwrap();
}

#[test]
fn what_is_not_json_gets_the_text_preview_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[");
    for i in 0..5000 {
        let _ = write!(text, "{i},");
    }
    text.push_str("oops]");
    for format in [Format::Json, Format::Auto] {
        let out = spiller(1024, format, dir.path())
            .apply(text.as_bytes())
            .unwrap();
        assert!(!out.format.is_json());
        assert!(out.content.contains("omitted lines") || out.content.contains("[spillway:"));
        assert_eq!(
            out.format.json_error().is_some(),
            format == Format::Json,
            "{:?}",
            out.format.json_error()
        );
        if let Some(e) = &out.format.json_error() {
            assert!(e.contains("not one JSON document (at byte"), "{e}");
        }
    }
    // Text stays text: the same outcome as with the text format.
    let text_out = spiller(1024, Format::Text, dir.path())
        .apply(text.as_bytes())
        .unwrap();
    let auto_out = spiller(1024, Format::Auto, dir.path())
        .apply(text.as_bytes())
        .unwrap();
    assert_eq!(text_out, auto_out);
}

#[test]
fn pointer_errors_say_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let obj = store
        .put(br#"{"a": {"b": [1, 2]}}"#, spillway::WriteOptions::raw())
        .unwrap();
    let mut out = Vec::new();
    let e = store
        .read_pointer(&obj.id, &"/a/b/5".parse().unwrap(), &mut out)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the deepest part that exists is /a/b"),
        "{e}"
    );
    assert_eq!(e.kind(), spillway::StoreErrorKind::OutOfRange);
    let text = store
        .put(b"not json", spillway::WriteOptions::raw())
        .unwrap();
    let e = store
        .read_pointer(&text.id, &JsonPointer::default(), &mut out)
        .unwrap_err();
    assert!(e.to_string().contains("is not one JSON document"), "{e}");
    assert!(out.is_empty());
    for bad in ["a", "/~2", "/x~"] {
        assert!(bad.parse::<JsonPointer>().is_err(), "{bad}");
    }
}

/// Documents past the sketch's head side (over 1 MiB), so that the tail
/// side is what the preview shows: containers skimmed while small, woken
/// when they grow, a tail-side container holding one huge string, deep
/// tail-side nesting. Each preview keeps the shape and reads back.
#[test]
fn tail_side_values_keep_the_shape_and_read_back() {
    let record = |i: usize| {
        V::Obj(vec![
            ("id".into(), V::Num(i.to_string())),
            (
                "tags".into(),
                V::Arr(vec![V::Str("a".into()), V::Num("1".into())]),
            ),
            ("note".into(), V::Str(format!("note {i}"))),
        ])
    };
    let pad = V::Arr((0..30_000).map(record).collect());
    let docs = [
        V::Obj(vec![
            ("pad".into(), pad.clone()),
            ("tail".into(), V::Arr(vec![V::Str("y".repeat(3 << 20))])),
            ("end".into(), V::Bool(true)),
        ]),
        V::Obj(vec![
            ("pad".into(), pad.clone()),
            (
                "grows".into(),
                V::Arr((0..60_000).map(|i| V::Num(i.to_string())).collect()),
            ),
        ]),
        V::Arr(vec![
            pad.clone(),
            V::Arr(vec![V::Arr(vec![V::Obj(vec![(
                "deep".into(),
                V::Arr((0..5000).map(record).collect()),
            )])])]),
        ]),
    ];
    for (k, doc) in docs.iter().enumerate() {
        for budget in [2048, 8192] {
            let out = check(doc, k == 1, budget, 1 << 16);
            assert!(out.spilled && out.format.is_json(), "doc {k}");
        }
    }
}

/// In `{"a":[…],"a":[…]}` a pointer `/a/…` reads the first array: the
/// second array's markers name no pointer, and say why.
#[test]
fn a_repeated_name_gets_no_pointer_that_reads_another_value() {
    let first: Vec<String> = (0..500).map(|i| i.to_string()).collect();
    let second: Vec<String> = (0..500).map(|i| format!("\"second-{i}\"")).collect();
    let text = format!(
        "{{\"a\":[{}],\"a\":[{}]}}",
        first.join(","),
        second.join(",")
    );
    let doc = parse(text.as_bytes());
    for budget in [1024, 2048, 4096] {
        let dir = tempfile::tempdir().unwrap();
        let out = spiller(budget, Format::Json, dir.path())
            .apply(text.as_bytes())
            .unwrap();
        assert!(out.format.is_json(), "{:?}", out.format.json_error());
        let V::Obj(members) = parse(out.content.as_bytes()) else {
            panic!("{}", out.content)
        };
        let seconds: Vec<&V> = members
            .iter()
            .filter(|(k, _)| k == "a")
            .map(|(_, v)| v)
            .skip(1)
            .collect();
        assert_eq!(seconds.len(), 1, "{}", out.content);
        let V::Arr(kept) = seconds[0] else {
            panic!("{}", out.content)
        };
        let marker = kept
            .iter()
            .find_map(|v| match v {
                V::Str(s) if is_marker(s) => Some(s),
                _ => None,
            })
            .expect("the second array is cut");
        assert!(!marker.contains("--pointer"), "{marker}");
        assert!(
            marker.contains("also named \\\"a\\\"") || marker.contains("also named \"a\""),
            "{marker}"
        );
        // And the whole preview passes the shape check.
        let spill = out.spill.as_ref().unwrap();
        let store = Store::open(dir.path()).unwrap();
        check_shape(
            &parse(out.content.as_bytes()),
            &doc,
            JsonPointer::default(),
            true,
            &(&store, &spill.id, &doc),
        );
    }
}

/// A UTF-8 byte order mark before the document (RFC 8259 lets a parser
/// ignore one) still gets the JSON preview, and its pointers read back.
#[test]
fn a_byte_order_mark_before_the_document_is_skipped() {
    let body: Vec<String> = (0..2000).map(|i| format!("{{\"n\":{i}}}")).collect();
    let text = format!("\u{feff}[{}]", body.join(","));
    let doc = parse(&text.as_bytes()[3..]);
    for (format, chunk) in [(Format::Json, 1), (Format::Json, 2), (Format::Auto, 4096)] {
        let dir = tempfile::tempdir().unwrap();
        let sp = spiller(2048, format, dir.path());
        let mut stage = sp.stage();
        for c in text.as_bytes().chunks(chunk) {
            stage.feed(c);
        }
        let out = stage.finish().unwrap();
        assert!(out.format.is_json(), "{:?}", out.format.json_error());
        assert!(out.content.len() <= 2048);
        let spill = out.spill.as_ref().unwrap();
        let markers = check_shape(
            &parse(out.content.as_bytes()),
            &doc,
            JsonPointer::default(),
            true,
            &(sp.store(), &spill.id, &doc),
        );
        assert!(markers > 0);
    }
    // Half a mark is not JSON.
    let dir = tempfile::tempdir().unwrap();
    let mut bad = vec![0xEF, 0xBB];
    bad.extend_from_slice(&text.as_bytes()[3..]);
    let out = spiller(2048, Format::Json, dir.path()).apply(&bad).unwrap();
    assert!(!out.format.is_json());
    assert!(out.format.json_error().is_some());
}

/// A string's tail window that opens just after a backslash, with no
/// backslash of its own (`n` of a `\n`), starts after the escape's rest.
/// Documents from just over the budget to twice it (230 repeats was the
/// failing one), so the window opens at every byte of the repeat.
#[test]
fn a_tail_window_opening_inside_an_escape_does_not_split_it() {
    for n in 215..=430 {
        let s = "é😀\\\"\n".repeat(n);
        let doc = V::Obj(vec![("".into(), V::Str(s))]);
        check(&doc, false, 2759, 1);
    }
}
