//! JSON Pointers (RFC 6901), and finding the value one names in a document
//! as it streams past.

use std::fmt;

use super::scan::{Kind, Offset, Tokens};

/// A parsed JSON Pointer: `""` names the whole document, `/a/0/b~1c` the
/// member `b/c` of the first element of member `a`.
///
/// # Examples
///
/// ```
/// use spillway::JsonPointer;
/// let p: JsonPointer = "/a~1b/0/~0x".parse().unwrap();
/// assert_eq!(p.tokens(), ["a/b", "0", "~x"]);
/// assert_eq!(p.to_string(), "/a~1b/0/~0x");
/// assert!("a/b".parse::<JsonPointer>().is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct JsonPointer {
    tokens: Vec<String>,
}

/// Why a JSON Pointer does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PointerError {
    /// A non-empty pointer must start with `/`.
    NoLeadingSlash,
    /// `~` must be followed by `0` or `1`.
    BadEscape {
        /// The byte offset of the `~`.
        at: usize,
    },
}

impl fmt::Display for PointerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointerError::NoLeadingSlash => f.write_str(
                "a JSON Pointer is empty (the whole document) or starts with '/', as in /items/0",
            ),
            PointerError::BadEscape { at } => write!(
                f,
                "'~' at byte {at} of the JSON Pointer must be followed by 0 (for '~') or 1 (for '/')"
            ),
        }
    }
}

impl std::error::Error for PointerError {}

impl std::str::FromStr for JsonPointer {
    type Err = PointerError;

    fn from_str(s: &str) -> Result<Self, PointerError> {
        if s.is_empty() {
            return Ok(JsonPointer::default());
        }
        let Some(rest) = s.strip_prefix('/') else {
            return Err(PointerError::NoLeadingSlash);
        };
        let mut tokens = Vec::new();
        let mut at = 1;
        for raw in rest.split('/') {
            let mut token = String::with_capacity(raw.len());
            let mut chars = raw.char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                if c != '~' {
                    token.push(c);
                    continue;
                }
                match chars.next() {
                    Some((_, '0')) => token.push('~'),
                    Some((_, '1')) => token.push('/'),
                    _ => return Err(PointerError::BadEscape { at: at + i }),
                }
            }
            at += raw.len() + 1;
            tokens.push(token);
        }
        Ok(JsonPointer { tokens })
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        for t in &self.tokens {
            s.push('/');
            push_token(&mut s, t);
        }
        f.write_str(&s)
    }
}

impl JsonPointer {
    /// The reference tokens, unescaped.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// This pointer with one more token.
    pub fn child(mut self, token: &str) -> Self {
        self.tokens.push(token.to_owned());
        self
    }

    /// Whether this names the whole document.
    pub fn is_root(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Appends `token` escaped for a pointer (`~` as `~0`, `/` as `~1`).
pub(crate) fn push_token(out: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// The text of raw JSON string content (escapes as written). A lone
/// surrogate becomes U+FFFD.
pub(crate) fn unescape(raw: &[u8]) -> String {
    let s = std::str::from_utf8(raw).unwrap_or("");
    if !s.contains('\\') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    let hex = |i: usize| {
        s.get(i..i + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    while i < b.len() {
        if b[i] != b'\\' {
            let n = crate::measure::utf8_width(b[i]).max(1);
            out.push_str(s.get(i..i + n).unwrap_or("\u{FFFD}"));
            i += n;
            continue;
        }
        let Some(&k) = b.get(i + 1) else { break };
        i += 2;
        let c = match k {
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'u' => {
                let Some(hi) = hex(i) else { break };
                i += 4;
                if (0xD800..0xDC00).contains(&hi) && b.get(i..i + 2) == Some(b"\\u") {
                    match hex(i + 2) {
                        Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                            i += 6;
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                                .unwrap_or('\u{FFFD}')
                        }
                        _ => '\u{FFFD}',
                    }
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            other => char::from(other),
        };
        out.push(c);
    }
    out
}

/// Finds the raw byte range of the value a pointer names, as the document
/// streams through a [`Scanner`](super::scan::Scanner).
pub(crate) struct Find<'a> {
    tokens: &'a [String],
    /// Open containers: whether each is on the pointer's path, and the
    /// next child's index and key.
    stack: Vec<Level>,
    /// The key being read, raw, when its container is on the path.
    key: Option<Vec<u8>>,
    start: Option<Offset>,
    /// The stack depth at which the target started.
    target_depth: usize,
    /// The target's range, once it ended.
    pub(crate) found: Option<(Offset, Offset)>,
    /// How many tokens matched before the path left the document: an
    /// index past the end, a missing key, or a scalar where a container
    /// should be.
    pub(crate) deepest: usize,
}

struct Level {
    kind: Kind,
    on_path: bool,
    index: u64,
    key: Option<Vec<u8>>,
}

impl<'a> Find<'a> {
    pub(crate) fn new(pointer: &'a JsonPointer) -> Self {
        Find {
            tokens: &pointer.tokens,
            stack: Vec::new(),
            key: None,
            start: None,
            target_depth: 0,
            found: None,
            deepest: 0,
        }
    }

    /// Whether the search is over.
    pub(crate) fn done(&self) -> bool {
        self.found.is_some()
    }

    /// A value starts: whether it is on the path (and the target).
    fn value_start(&mut self, at: Offset) -> (bool, bool) {
        if self.start.is_some() || self.found.is_some() {
            return (false, false);
        }
        let depth = self.stack.len();
        let on_path = match self.stack.last_mut() {
            None => true,
            Some(l) => {
                let i = l.index;
                l.index += 1;
                let key = l.key.take();
                l.on_path
                    && match l.kind {
                        Kind::Array => self.tokens[depth - 1] == i.to_string(),
                        Kind::Object => key.is_some_and(|k| unescape(&k) == self.tokens[depth - 1]),
                    }
            }
        };
        if on_path {
            self.deepest = self.deepest.max(depth);
        }
        let target = on_path && depth == self.tokens.len();
        if target {
            self.start = Some(at);
            self.target_depth = depth;
        }
        (on_path, target)
    }

    fn value_end(&mut self, end: Offset) {
        if self.found.is_none() && self.stack.len() == self.target_depth {
            if let Some(start) = self.start.take() {
                self.found = Some((start, end));
            }
        }
    }
}

impl Tokens for Find<'_> {
    fn begin(&mut self, kind: Kind, at: Offset) {
        let (on_path, target) = self.value_start(at);
        self.stack.push(Level {
            kind,
            // Below the target nothing is on the path.
            on_path: on_path && !target,
            index: 0,
            key: None,
        });
    }

    fn end(&mut self, end: Offset) {
        self.stack.pop();
        self.value_end(end);
    }

    fn str_begin(&mut self, key: bool, at: Offset) {
        if key {
            let on_path = self.stack.last().is_some_and(|l| l.on_path);
            self.key = on_path.then(Vec::new);
        } else {
            self.value_start(at);
        }
    }

    fn str_part(&mut self, raw: &[u8]) {
        if let Some(k) = self.key.as_mut() {
            // A key longer than any escaping of the token cannot match.
            let limit = self
                .tokens
                .get(self.stack.len() - 1)
                .map_or(0, |t| t.len() * 6);
            if k.len() + raw.len() <= limit {
                k.extend_from_slice(raw);
            } else {
                k.clear();
                k.push(0);
            }
        }
    }

    fn str_end(&mut self, end: Offset) {
        if let Some(k) = self.key.take() {
            if let Some(l) = self.stack.last_mut() {
                l.key = Some(k);
            }
            return;
        }
        self.value_end(end);
    }

    fn scalar(&mut self, _: Option<&[u8]>, at: Offset, end: Offset) {
        self.value_start(at);
        self.value_end(end);
    }
}
