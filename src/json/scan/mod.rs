//! A push tokenizer for one JSON document (RFC 8259), fed in chunks of any
//! size: the stage hands it the stream as it arrives and never holds the
//! document.
//!
//! It checks the grammar (not UTF-8: the stage's measure does that) and
//! reports each token to a [`Tokens`] with its byte offsets. A string's raw
//! content (escapes as written) comes in parts, so a string of any length
//! costs nothing to scan. Nesting of any depth costs one bit a level. A
//! small container whose tokens the sink would only count is read whole
//! in one pass when the sink allows it ([`Tokens::skim_limit`], `skim.rs`).

use crate::word;

mod skim;

/// Where a token sits: the raw offset of its first byte.
pub(crate) type Offset = u64;

/// A container's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Array,
    Object,
}

/// What the tokenizer reports, in document order.
pub(crate) trait Tokens {
    /// `[` or `{` at `at`.
    fn begin(&mut self, kind: Kind, at: Offset);
    /// The matching `]` or `}`; `end` is the offset just past it.
    fn end(&mut self, end: Offset);
    /// A string starts at `at` (its opening quote); `key` for a member name.
    fn str_begin(&mut self, key: bool, at: Offset);
    /// Raw content of the current string (escapes as written, no quotes).
    fn str_part(&mut self, raw: &[u8]);
    /// The current string ended; `end` is just past its closing quote.
    fn str_end(&mut self, end: Offset);
    /// A whole string found in one chunk, its escapes as written in `raw`:
    /// `str_begin`, `str_part` and `str_end` in one call.
    fn string(&mut self, key: bool, at: Offset, raw: &[u8], end: Offset) {
        self.str_begin(key, at);
        if !raw.is_empty() {
            self.str_part(raw);
        }
        self.str_end(end);
    }
    /// A number or literal, whole, at `at`; `raw` is `None` when it is longer
    /// than [`MAX_SCALAR`].
    fn scalar(&mut self, raw: Option<&[u8]>, at: Offset, end: Offset);
    /// How long a container that starts now may be for this sink to take
    /// it whole, by [`skimmed`](Tokens::skimmed), instead of token by
    /// token; 0 (the default) for its tokens.
    #[inline(always)]
    fn skim_limit(&mut self) -> usize {
        0
    }
    /// A container of `kind` from `at` to `end` (just past its closing
    /// bracket) read whole, valid, with `count` direct children (an array's
    /// elements, an object's members): in place of its `begin`, its
    /// tokens and its `end`, only when [`skim_limit`](Tokens::skim_limit)
    /// allowed its length.
    fn skimmed(&mut self, kind: Kind, at: Offset, end: Offset, count: u64) {
        let _ = (kind, at, end, count);
        unreachable!("a sink that allows a skim takes it");
    }
}

/// Numbers longer than this are scanned but not handed over.
pub(crate) const MAX_SCALAR: usize = 64;

/// Why the input is not one JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotJson {
    /// The offset of the first byte that cannot be there (or the length of
    /// the input, when it ends too soon).
    pub at: Offset,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The document's start, where a UTF-8 byte order mark (`EF BB BF`) is
    /// skipped (RFC 8259 allows a parser to ignore one); this many of its
    /// bytes have been seen.
    Bom(u8),
    /// A value must come (document start, after `[`, `,` in an array, `:`).
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value: `,` or the container's end (or the end of input).
    After,
    /// Inside a string.
    Str,
    /// After a backslash in a string.
    Escape,
    /// In `\uXXXX`, with this many hex digits still to come.
    Unicode(u8),
    /// Inside a number.
    Num(Num),
    /// Inside `true`, `false` or `null`: the literal and how much of it
    /// has been matched.
    Lit(&'static [u8], u8),
    /// A grammar error was found.
    Failed,
}

/// Where a number is in its grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    /// After `-`.
    Minus,
    /// After a leading `0`.
    Zero,
    /// In the integer digits.
    Int,
    /// After `.`.
    Dot,
    /// In the fraction digits.
    Frac,
    /// After `e` or `E`.
    Exp,
    /// After the exponent's sign.
    ExpSign,
    /// In the exponent digits.
    ExpDigits,
}

impl Num {
    /// Whether a number may end here.
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }

    fn step(self, b: u8) -> Option<Num> {
        Some(match (self, b) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, b'1'..=b'9') => Num::Int,
            (Num::Int, b'0'..=b'9') => Num::Int,
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
            (Num::Exp, b'+' | b'-') => Num::ExpSign,
            (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => Num::ExpDigits,
            _ => return None,
        })
    }

    /// Reads the number that starts `s` (at its `-` or first digit) as far
    /// as `s` goes: the state reached and how many bytes it took. Its
    /// integer digits are read by a loop of their own (the common number
    /// has nothing else).
    #[inline(always)]
    fn read(s: &[u8]) -> (Num, usize) {
        let num = match s[0] {
            b'-' => Num::Minus,
            b'0' => Num::Zero,
            _ => Num::Int,
        };
        let mut i = 1;
        if num == Num::Int {
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
        let (num, took) = num.run(&s[i..]);
        (num, i + took)
    }

    /// Steps through as much of `bytes` as the number takes: the state
    /// reached and how many bytes it took.
    #[inline(always)]
    fn run(mut self, bytes: &[u8]) -> (Num, usize) {
        for (k, &b) in bytes.iter().enumerate() {
            match self.step(b) {
                Some(next) => self = next,
                None => return (self, k),
            }
        }
        (self, bytes.len())
    }
}

/// The tokenizer.
pub(crate) struct Scanner {
    state: State,
    /// One bit a level: set for an object.
    stack: Vec<u64>,
    depth: u64,
    /// Whether the innermost open container is an object (its bit in
    /// `stack`, read at every comma).
    top_object: bool,
    /// Whether the current string is a key.
    key: bool,
    /// The offset of the next byte.
    pos: Offset,
    /// The current number or literal so far.
    scalar: Vec<u8>,
    scalar_at: Offset,
    scalar_long: bool,
    /// Whether a whole value has been read at depth 0.
    done: bool,
    /// The lengths of the last skimmed container's strings.
    memo: skim::Memo,
    error: Option<NotJson>,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    pub(crate) fn new() -> Self {
        Scanner {
            state: State::Bom(0),
            stack: Vec::new(),
            depth: 0,
            top_object: false,
            key: false,
            pos: 0,
            scalar: Vec::with_capacity(MAX_SCALAR),
            scalar_at: 0,
            scalar_long: false,
            done: false,
            memo: skim::Memo::default(),
            error: None,
        }
    }

    /// The first grammar error, once one is found.
    pub(crate) fn error(&self) -> Option<NotJson> {
        self.error
    }

    /// Whether the innermost open container is an object.
    #[inline]
    fn top_is_object(&self) -> bool {
        self.top_object
    }

    #[inline]
    fn push(&mut self, kind: Kind) {
        let d = self.depth;
        let word = (d / 64) as usize;
        if word == self.stack.len() {
            self.stack.push(0);
        }
        let bit = 1u64 << (d % 64);
        match kind {
            Kind::Object => self.stack[word] |= bit,
            Kind::Array => self.stack[word] &= !bit,
        }
        self.depth += 1;
        self.top_object = kind == Kind::Object;
    }

    /// The innermost open container ended.
    #[inline]
    fn pop(&mut self) {
        self.depth -= 1;
        self.top_object = match self.depth.checked_sub(1) {
            Some(d) => self.stack[(d / 64) as usize] >> (d % 64) & 1 == 1,
            None => false,
        };
    }

    fn fail(&mut self, at: Offset) {
        self.state = State::Failed;
        self.error = Some(NotJson { at });
    }

    /// Feeds the next chunk. After an error, further input is ignored.
    pub(crate) fn feed<S: Tokens>(&mut self, chunk: &[u8], sink: &mut S) {
        let base = self.pos;
        self.pos = base + chunk.len() as u64;
        let n = chunk.len();
        let mut i = 0;
        let mut state = self.state;
        macro_rules! fail {
            ($at:expr) => {{
                self.state = State::Failed;
                self.error = Some(NotJson {
                    at: base + $at as u64,
                });
                return;
            }};
        }
        // A member's key, its opening quote at `i`: the state after it,
        // which is past its colon already when the colon follows at once.
        macro_rules! key {
            () => {{
                let at = base + i as u64;
                match whole_string(&chunk[i + 1..]) {
                    Some(Ok(j)) => {
                        let end = i + j + 2;
                        sink.string(true, at, &chunk[i + 1..i + 1 + j], base + end as u64);
                        i = end;
                        if i < n && chunk[i] == b':' {
                            i += 1;
                            State::Value
                        } else {
                            State::Colon
                        }
                    }
                    Some(Err(k)) => fail!(i + 1 + k),
                    None => {
                        // The string's state, kept past this chunk.
                        self.key = true;
                        sink.str_begin(true, at);
                        i += 1;
                        State::Str
                    }
                }
            }};
        }
        // The state after a value ends.
        macro_rules! after_value {
            () => {{
                if self.depth == 0 {
                    self.done = true;
                }
                State::After
            }};
        }
        // The state after a value that ends just before `i`: past the
        // comma (and the next member's key) when the comma follows at once.
        macro_rules! next {
            () => {{
                if self.depth == 0 || i == n || chunk[i] != b',' {
                    after_value!()
                } else {
                    i += 1;
                    if !self.top_is_object() {
                        State::Value
                    } else if i < n && chunk[i] == b'"' {
                        key!()
                    } else {
                        State::Key
                    }
                }
            }};
        }
        while i < n {
            // Between tokens (the common case) straight to the structural
            // states; inside a token, or after an error, its own state.
            let between = matches!(
                state,
                State::Value
                    | State::ValueOrEnd
                    | State::KeyOrEnd
                    | State::Key
                    | State::Colon
                    | State::After
            );
            if !between {
                match state {
                    State::Failed => return,
                    State::Str => {
                        let rest = &chunk[i..];
                        match content(rest) {
                            Content::Closed(j) => {
                                if j > 0 {
                                    sink.str_part(&rest[..j]);
                                }
                                i += j + 1;
                                sink.str_end(base + i as u64);
                                state = if self.key {
                                    State::Colon
                                } else {
                                    after_value!()
                                };
                            }
                            Content::Control(j) => fail!(i + j),
                            Content::Escape(j) => {
                                // An escape this chunk does not hold whole
                                // (or a wrong one): a byte at a time.
                                sink.str_part(&rest[..=j]);
                                i += j + 1;
                                state = State::Escape;
                            }
                            Content::Open => {
                                sink.str_part(rest);
                                i = n;
                            }
                        }
                        continue;
                    }
                    State::Escape => {
                        let b = chunk[i];
                        match b {
                            b'u' => state = State::Unicode(4),
                            b if short_escape(b) => state = State::Str,
                            _ => fail!(i),
                        }
                        sink.str_part(&chunk[i..=i]);
                        i += 1;
                        continue;
                    }
                    State::Unicode(left) => {
                        if !chunk[i].is_ascii_hexdigit() {
                            fail!(i);
                        }
                        sink.str_part(&chunk[i..=i]);
                        i += 1;
                        state = if left == 1 {
                            State::Str
                        } else {
                            State::Unicode(left - 1)
                        };
                        continue;
                    }
                    State::Num(num) => {
                        let start = i;
                        let (num, took) = num.run(&chunk[i..]);
                        i += took;
                        self.take_scalar(&chunk[start..i]);
                        if i == n {
                            state = State::Num(num);
                            break;
                        }
                        if !num.complete() {
                            fail!(i);
                        }
                        self.emit_scalar(base + i as u64, sink);
                        state = after_value!();
                        continue;
                    }
                    State::Bom(seen) => {
                        const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
                        if chunk[i] == BOM[usize::from(seen)] {
                            i += 1;
                            state = if seen == 2 {
                                State::Value
                            } else {
                                State::Bom(seen + 1)
                            };
                        } else if seen == 0 {
                            state = State::Value;
                        } else {
                            fail!(i);
                        }
                        continue;
                    }
                    State::Lit(word, matched) => {
                        if word[usize::from(matched)] != chunk[i] {
                            fail!(i);
                        }
                        i += 1;
                        let matched = matched + 1;
                        if usize::from(matched) == word.len() {
                            self.scalar.clear();
                            self.scalar.extend_from_slice(word);
                            self.scalar_long = false;
                            self.emit_scalar(base + i as u64, sink);
                            state = after_value!();
                        } else {
                            state = State::Lit(word, matched);
                        }
                        continue;
                    }
                    _ => unreachable!("structural states are handled below"),
                }
            }
            // Structural states: skip whitespace first.
            let mut b = chunk[i];
            if b <= b' ' {
                while is_ws(b) {
                    i += 1;
                    if i == n {
                        self.state = state;
                        return;
                    }
                    b = chunk[i];
                }
            }
            let at = base + i as u64;
            match state {
                State::Value | State::ValueOrEnd => {
                    if b == b']' && state == State::ValueOrEnd {
                        self.pop();
                        sink.end(at + 1);
                        state = after_value!();
                        i += 1;
                        continue;
                    }
                    // A value, and the values that follow it at once: a
                    // member's after its key, an array's after its comma.
                    // Read here one after another, not a turn each.
                    let (mut b, mut at) = (b, at);
                    loop {
                        // A container the sink takes whole: read at once
                        // when it is small, valid and in this chunk.
                        let whole = match b {
                            b'{' | b'[' => match sink.skim_limit() {
                                0 => None,
                                limit => skim::skim(
                                    &chunk[i..n.min(i.saturating_add(limit))],
                                    &mut self.memo,
                                ),
                            },
                            _ => None,
                        };
                        if let Some((len, count)) = whole {
                            let kind = if b == b'{' { Kind::Object } else { Kind::Array };
                            i += len;
                            sink.skimmed(kind, at, base + i as u64, count);
                            state = next!();
                        } else {
                            match b {
                                b'{' => {
                                    self.push(Kind::Object);
                                    sink.begin(Kind::Object, at);
                                    i += 1;
                                    // Its first key, when it follows at once.
                                    state = if i < n && chunk[i] == b'"' {
                                        key!()
                                    } else {
                                        State::KeyOrEnd
                                    };
                                }
                                b'[' => {
                                    self.push(Kind::Array);
                                    sink.begin(Kind::Array, at);
                                    state = State::ValueOrEnd;
                                    i += 1;
                                }
                                b'"' => match whole_string(&chunk[i + 1..]) {
                                    Some(Ok(j)) => {
                                        let end = i + j + 2;
                                        sink.string(
                                            false,
                                            at,
                                            &chunk[i + 1..i + 1 + j],
                                            base + end as u64,
                                        );
                                        i = end;
                                        state = next!();
                                    }
                                    Some(Err(k)) => fail!(i + 1 + k),
                                    None => {
                                        self.key = false;
                                        sink.str_begin(false, at);
                                        state = State::Str;
                                        i += 1;
                                    }
                                },
                                b'-' | b'0'..=b'9' => {
                                    // A whole number inside the chunk: no state.
                                    let start = i;
                                    let (num, took) = Num::read(&chunk[i..]);
                                    i += took;
                                    if i == n {
                                        // It goes on past this chunk.
                                        self.scalar.clear();
                                        self.scalar_long = false;
                                        self.scalar_at = at;
                                        self.take_scalar(&chunk[start..i]);
                                        state = State::Num(num);
                                        break;
                                    }
                                    if !num.complete() {
                                        fail!(i);
                                    }
                                    let raw = &chunk[start..i];
                                    sink.scalar(
                                        (raw.len() <= MAX_SCALAR).then_some(raw),
                                        at,
                                        base + i as u64,
                                    );
                                    state = next!();
                                }
                                b't' | b'f' | b'n' => {
                                    let word: &'static [u8] = match b {
                                        b't' => b"true",
                                        b'f' => b"false",
                                        _ => b"null",
                                    };
                                    let rest = &chunk[i..];
                                    if rest.len() >= word.len() {
                                        if &rest[..word.len()] != word {
                                            let k = rest.iter().zip(word).position(|(a, b)| a != b);
                                            fail!(i + k.unwrap_or(0));
                                        }
                                        i += word.len();
                                        sink.scalar(Some(word), at, base + i as u64);
                                        state = next!();
                                    } else {
                                        self.scalar_at = at;
                                        state = State::Lit(word, 1);
                                        i += 1;
                                    }
                                }
                                _ => fail!(i),
                            }
                        }
                        if !matches!(state, State::Value) || i == n {
                            break;
                        }
                        b = chunk[i];
                        if !matches!(
                            b,
                            b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'{' | b'['
                        ) {
                            break;
                        }
                        at = base + i as u64;
                    }
                }
                State::KeyOrEnd | State::Key => {
                    if b == b'}' && state == State::KeyOrEnd {
                        self.pop();
                        sink.end(at + 1);
                        state = after_value!();
                        i += 1;
                        continue;
                    }
                    if b != b'"' {
                        fail!(i);
                    }
                    state = key!();
                }
                State::Colon => {
                    if b != b':' {
                        fail!(i);
                    }
                    i += 1;
                    state = State::Value;
                }
                State::After => {
                    if self.depth == 0 {
                        fail!(i);
                    }
                    let object = self.top_is_object();
                    match (b, object) {
                        (b',', true) => {
                            // A member's key most often follows its comma
                            // at once: read here, not on another turn.
                            i += 1;
                            state = if i < n && chunk[i] == b'"' {
                                key!()
                            } else {
                                State::Key
                            };
                            continue;
                        }
                        (b',', false) => state = State::Value,
                        (b'}', true) | (b']', false) => {
                            // This container's end, and the ends that
                            // follow it at once, one after another.
                            let mut at = at;
                            loop {
                                self.pop();
                                sink.end(at + 1);
                                i += 1;
                                state = next!();
                                if !matches!(state, State::After) || i == n || self.depth == 0 {
                                    break;
                                }
                                if chunk[i] != closer(self.top_is_object()) {
                                    break;
                                }
                                at = base + i as u64;
                            }
                            continue;
                        }
                        _ => fail!(i),
                    }
                    i += 1;
                }
                _ => unreachable!("handled above"),
            }
        }
        self.state = state;
    }

    fn take_scalar(&mut self, part: &[u8]) {
        if self.scalar_long {
            return;
        }
        if self.scalar.len() + part.len() > MAX_SCALAR {
            self.scalar_long = true;
            self.scalar.clear();
        } else {
            self.scalar.extend_from_slice(part);
        }
    }

    fn emit_scalar<S: Tokens>(&mut self, end: Offset, sink: &mut S) {
        let raw = (!self.scalar_long).then_some(self.scalar.as_slice());
        sink.scalar(raw, self.scalar_at, end);
    }

    /// Ends the input: whether it was exactly one JSON document.
    pub(crate) fn finish<S: Tokens>(&mut self, sink: &mut S) -> Result<(), NotJson> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let State::Num(num) = self.state {
            if num.complete() && self.depth == 0 {
                self.emit_scalar(self.pos, sink);
                self.done = true;
                self.state = State::After;
            }
        }
        if self.state == State::After && self.depth == 0 && self.done {
            Ok(())
        } else {
            let e = NotJson { at: self.pos };
            self.fail(e.at);
            Err(e)
        }
    }
}

/// The first quote, backslash or control byte in `s`. Most strings in a
/// document are short (names, ids): their first 32 bytes are searched eight
/// at a time in a word ([`special_in_word`]), which ends them before a
/// vectorized search would have started; a longer string's rest goes to
/// `memchr`.
#[inline(always)]
fn find_special(s: &[u8]) -> Option<usize> {
    let head = s.len().min(32);
    let mut i = 0;
    while i + 8 <= head {
        if let Some(k) = special_in_word(word::le_word(&s[i..i + 8])) {
            return Some(i + k);
        }
        i += 8;
    }
    if let Some(k) = s[i..head].iter().position(|&b| is_special(b)) {
        return Some(i + k);
    }
    if head == s.len() {
        return None;
    }
    let rest = &s[head..];
    let j = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    // A control byte before it ends the search there.
    let k = if has_control(&rest[..j]) {
        rest.iter().position(|&b| b < 0x20).unwrap_or(j)
    } else {
        j
    };
    (k < rest.len()).then_some(k + head)
}

/// Whether a string's content cannot hold `b` as it is: a quote, a
/// backslash, a control byte.
#[inline(always)]
fn is_special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The index of the first special byte ([`is_special`]) among the eight of
/// `word` (read little-endian: byte 0 is the first), if any.
///
/// Each test marks a byte's high bit, and only the lowest mark of each is
/// sure ([`word::below`]): the lowest of the three is the first special
/// byte.
#[inline(always)]
fn special_in_word(w: u64) -> Option<usize> {
    word::first(special_marks(w))
}

/// The special bytes of `word` marked by their high bits, as
/// [`word::below`] marks them: the lowest mark is sure, and a byte below
/// the lowest special byte is never marked.
#[inline(always)]
fn special_marks(w: u64) -> u64 {
    word::below(w, 0x20) | word::equal(w, b'"') | word::equal(w, b'\\')
}

/// A string's content that ends in this chunk: `Ok(len)` (the closing quote
/// at `len`, every escape before it read), `Err(at)` for a control byte,
/// `None` when it runs past the chunk or holds an escape the chunk does not
/// hold whole, or a wrong one (the byte-wise path takes it).
#[inline(always)]
fn whole_string(s: &[u8]) -> Option<Result<usize, usize>> {
    match content(s) {
        Content::Closed(j) => Some(Ok(j)),
        Content::Control(j) => Some(Err(j)),
        Content::Escape(_) | Content::Open => None,
    }
}

/// How a string's content goes on in `s` (from just past its opening quote,
/// or where its last part ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    /// Its closing quote is at this offset.
    Closed(usize),
    /// A control byte is at this offset: not JSON.
    Control(usize),
    /// A backslash at this offset starts an escape that `s` does not hold
    /// whole, or one that is wrong.
    Escape(usize),
    /// It runs past `s`, every escape in `s` whole and right.
    Open,
}

/// Reads a string's content through its escapes: each one `s` holds whole
/// and right is passed over where it is (a string with a line end every
/// few bytes, as a program's output quoted in JSON, costs a search per
/// line, not a state per byte).
#[inline(always)]
fn content(s: &[u8]) -> Content {
    let Some(j) = find_special(s) else {
        return Content::Open;
    };
    match s[j] {
        b'"' => Content::Closed(j),
        b'\\' => past_escapes(s, j),
        _ => Content::Control(j),
    }
}

/// [`content`] from a backslash at `j` on; out of line, so that the common
/// string, which has none, is read by the few instructions above.
#[inline(never)]
fn past_escapes(s: &[u8], mut j: usize) -> Content {
    loop {
        match escape_len(&s[j..]) {
            Some(len) => j += len,
            None => return Content::Escape(j),
        }
        let Some(k) = find_special(&s[j..]) else {
            return Content::Open;
        };
        j += k;
        match s[j] {
            b'"' => return Content::Closed(j),
            b'\\' => {}
            _ => return Content::Control(j),
        }
    }
}

/// The length of the escape that starts `s` (at its backslash): 2, or 6 for
/// `\uXXXX`; `None` when `s` does not hold it whole, or it is wrong.
#[inline(always)]
fn escape_len(s: &[u8]) -> Option<usize> {
    match *s.get(1)? {
        b if short_escape(b) => Some(2),
        b'u' => s
            .get(2..6)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .map(|_| 6),
        _ => None,
    }
}

/// Whether `\b` (the byte after a backslash) makes a whole escape of two
/// bytes; `\u` takes four hex digits more, and any other is not JSON.
#[inline(always)]
fn short_escape(b: u8) -> bool {
    matches!(b, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')
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

/// Whether `s` holds a byte below 0x20 (which a JSON string cannot).
fn has_control(s: &[u8]) -> bool {
    // A fold, not `any`: it has no early exit, so it vectorizes.
    s.iter().fold(false, |acc, &b| acc | (b < 0x20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(String);

    impl Tokens for Log {
        fn begin(&mut self, kind: Kind, at: Offset) {
            self.0 += &format!("{}@{at} ", if kind == Kind::Array { "[" } else { "{" });
        }
        fn end(&mut self, end: Offset) {
            self.0 += &format!("end@{end} ");
        }
        fn str_begin(&mut self, key: bool, at: Offset) {
            self.0 += &format!("{}@{at}:", if key { "key" } else { "str" });
        }
        fn str_part(&mut self, raw: &[u8]) {
            self.0 += std::str::from_utf8(raw).unwrap();
        }
        fn str_end(&mut self, end: Offset) {
            self.0 += &format!("@{end} ");
        }
        fn scalar(&mut self, raw: Option<&[u8]>, at: Offset, end: Offset) {
            let raw = raw.map_or("(long)".into(), |r| String::from_utf8_lossy(r).into_owned());
            self.0 += &format!("{raw}@{at}-{end} ");
        }
    }

    fn scan(input: &[u8], chunk: usize) -> (String, Result<(), NotJson>) {
        let mut s = Scanner::new();
        let mut log = Log::default();
        for c in input.chunks(chunk.max(1)) {
            s.feed(c, &mut log);
        }
        let r = s.finish(&mut log);
        (log.0, r)
    }

    #[test]
    fn the_word_search_finds_the_first_special_byte_as_a_byte_loop_does() {
        // Every byte alone among others, and the pairs whose borrows could
        // flag a byte above a match: a match must never be reported early
        // or missed.
        let fillers = [
            b'a', 0x00, 0x1f, 0x20, 0x21, b'"', 0x23, b'\\', 0x5d, 0x7f, 0x80, 0xff,
        ];
        let naive = |s: &[u8]| s.iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\');
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for b in 0..=255u8 {
            for at in 0..40 {
                let mut v = vec![b'x'; 48];
                v[at] = b;
                inputs.push(v);
            }
        }
        for &f in &fillers {
            for &g in &fillers {
                for at in 0..16 {
                    let mut v = vec![b'y'; 40];
                    v[at] = f;
                    v[at + 1] = g;
                    inputs.push(v.clone());
                    inputs.push(v[..at + 2].to_vec());
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..80 {
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly plain bytes, a special one now and then.
                    let b = (x >> 32) as u8;
                    if b.is_multiple_of(5) {
                        b % 0x24
                    } else {
                        b | 0x24
                    }
                })
                .collect();
            inputs.push(v);
        }
        for v in &inputs {
            for from in 0..v.len().min(9) {
                assert_eq!(
                    find_special(&v[from..]),
                    naive(&v[from..]),
                    "{:?}",
                    &v[from..]
                );
            }
        }
    }

    #[test]
    fn tokens_and_offsets_are_the_same_for_every_chunking() {
        let doc = br#" {"a": [1, -2.5e+3, true, null], "b\"c": "x\u00e9y", "d": {}} "#;
        let (want, r) = scan(doc, doc.len());
        assert_eq!(r, Ok(()));
        assert!(want.starts_with("{@1 key@2:a@5 [@7 1@8-9 -2.5e+3@11-18 true@20-24"));
        for chunk in 1..doc.len() {
            assert_eq!(scan(doc, chunk), (want.clone(), Ok(())), "chunk {chunk}");
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Near-JSON from JSON's own bytes (and well-formed documents
        /// among them): accepted exactly when serde_json accepts it, with
        /// the same error offset in every chunking, and the same tokens and
        /// offsets when accepted.
        #[test]
        fn accepts_what_serde_json_accepts_in_every_chunking(
            input in proptest::prop_oneof![
                proptest::collection::vec(
                    proptest::sample::select(b"{}[],:\"ab1-.eE+0 \ntfrulsn\\".to_vec()),
                    0..40,
                ),
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        &b"{"[..], b"}", b"[", b"]", b",", b":", b"\"k\"", b"\"v\\n\"",
                        b"12", b"-0.5e3", b"true", b"null", b" ",
                    ]),
                    0..30,
                ).prop_map(|parts| parts.concat()),
            ]
        ) {
            let (want, r) = scan(&input, input.len().max(1));
            let serde = serde_json::from_slice::<serde::de::IgnoredAny>(&input).is_ok();
            prop_assert_eq!(r.is_ok(), serde, "{:?}", String::from_utf8_lossy(&input));
            for chunk in [1, 2, 3, 7] {
                let (got, e) = scan(&input, chunk);
                prop_assert_eq!(e, r, "chunk {}", chunk);
                // The tokens before an error are not used (the document is
                // not JSON); a whole string is reported at once or in parts.
                if r.is_ok() {
                    prop_assert_eq!(&got, &want, "chunk {}", chunk);
                }
            }
        }
    }

    #[test]
    fn every_kind_of_error_is_found() {
        let bad: &[&[u8]] = &[
            b"",
            b"   ",
            b"{",
            b"[1,]",
            b"[1 2]",
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"{1:2}",
            b"01",
            b"1.",
            b"-",
            b"1e",
            b"tru",
            b"nul",
            b"\"abc",
            b"\"a\tb\"",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"[1]]",
            b"{}{}",
            b"1 2",
            b"[}",
            b"{]",
        ];
        for input in bad {
            for chunk in [1, 2, 100] {
                assert!(
                    scan(input, chunk).1.is_err(),
                    "{:?} chunk {chunk}",
                    String::from_utf8_lossy(input)
                );
            }
        }
        let good: &[&[u8]] = &[
            b"0",
            b"-0.5E-7",
            b"\"\"",
            b" [ ] ",
            b"{}",
            b"[[[[]]]]",
            b"\"\\u00e9\\\\\\/\"",
            b"123",
        ];
        for input in good {
            for chunk in [1, 2, 100] {
                assert_eq!(
                    scan(input, chunk).1,
                    Ok(()),
                    "{:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    /// [`content`] by a byte at a time: the oracle for the search that
    /// passes over escapes.
    fn content_a_byte_at_a_time(s: &[u8]) -> Content {
        let mut j = 0;
        while j < s.len() {
            match s[j] {
                b'"' => return Content::Closed(j),
                b'\\' => {
                    let len = match s.get(j + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'u')
                            if s.len() >= j + 6
                                && s[j + 2..j + 6].iter().all(|h| h.is_ascii_hexdigit()) =>
                        {
                            6
                        }
                        _ => return Content::Escape(j),
                    };
                    j += len;
                }
                b if b < 0x20 => return Content::Control(j),
                _ => j += 1,
            }
        }
        Content::Open
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// A string's content is read through its escapes as a byte loop
        /// reads it, cut anywhere (an escape split by a chunk's end, a
        /// wrong one, a control byte, its closing quote, none).
        #[test]
        fn a_string_is_read_through_its_escapes_as_a_byte_at_a_time(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    &b"a"[..], b"plain text ", b"\\n", b"\\\"", b"\\\\", b"\\/",
                    b"\\u00e9", b"\\uD83D", b"\\u12g4", b"\\ug234", b"\\x", b"\\", b"\x01",
                    b"\"", "\u{e9}".as_bytes(), b"0123456789abcdef0123456789abcdef",
                ]),
                0..24,
            ),
            cut in 0usize..400,
        ) {
            let s = parts.concat();
            let s = &s[..cut.min(s.len())];
            prop_assert_eq!(content(s), content_a_byte_at_a_time(s), "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn deep_nesting_costs_a_bit_a_level() {
        let depth = 1_000_000;
        let doc = "[".repeat(depth) + &"]".repeat(depth);
        let mut s = Scanner::new();
        struct Quiet;
        impl Tokens for Quiet {
            fn begin(&mut self, _: Kind, _: Offset) {}
            fn end(&mut self, _: Offset) {}
            fn str_begin(&mut self, _: bool, _: Offset) {}
            fn str_part(&mut self, _: &[u8]) {}
            fn str_end(&mut self, _: Offset) {}
            fn scalar(&mut self, _: Option<&[u8]>, _: Offset, _: Offset) {}
        }
        s.feed(doc.as_bytes(), &mut Quiet);
        assert_eq!(s.finish(&mut Quiet), Ok(()));
        assert!(s.stack.capacity() * 8 <= depth / 4);
    }

    #[test]
    fn long_numbers_are_scanned_but_not_handed_over() {
        let doc = format!("[{}]", "9".repeat(1000));
        let (log, r) = scan(doc.as_bytes(), 7);
        assert_eq!(r, Ok(()));
        assert!(log.contains("(long)@1-1001"), "{log}");
    }
}
