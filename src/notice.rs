//! The notice that replaces omitted content: templates, placeholders, and a
//! size bound computed before the real numbers are known.
//!
//! A template is plain text with `{name}` placeholders; `{{` and `}}` stand
//! for literal braces. Unknown names and unbalanced braces are rejected when
//! the template is parsed, so a policy with a broken template never builds.
//!
//! | placeholder | value |
//! |---|---|
//! | `{total_bytes}`, `{total_lines}` | size of the whole input |
//! | `{omitted_bytes}`, `{omitted_lines}` | what the preview leaves out |
//! | `{first_omitted_line}`, `{last_omitted_line}` | the omitted lines, 1-based, inclusive |
//! | `{read_lines}` | `A:B`, the lines to read to see everything not shown |
//! | `{read_bytes}` | `A:B`, the exact omitted bytes of the stored object, 0-based, half-open |
//! | `{read_unit}`, `{read_range}` | `lines` and `{read_lines}`, or, when the cut falls inside one line (a minified JSON), `bytes` and `{read_bytes}` |
//! | `{id}`, `{path}` | the stored object's content id and file path |
//! | `{short_id}` | the id's first 16 hex digits (`blake3:0123456789abcdef`), which `spillway show` and `spill_read` resolve |
//! | `{stored_bytes}`, `{unstored_bytes}` | how much of the input the object holds, and how much it does not |
//! | `{error}` | why the output could not be stored (at most 160 bytes, one line) |
//! | `{notes}` | extra facts, each starting with `; ` (invalid UTF-8, bytes not stored), or nothing |
//! | `{location}` | the `stored` or `unsaved` template, rendered (not allowed inside those two) |
//! | `{pointer}` | only in the `pointer` template: the JSON Pointer of an elided value, as one shell word |
//! | `{pointer_json}` | only in the `pointer` template: the same JSON Pointer as a JSON string, quoted and escaped (a tool call's argument) |

use std::fmt;
use std::sync::Arc;

/// The length of `{short_id}`: `blake3:` and 16 hex digits.
pub const SHORT_ID_LEN: usize = 7 + 16;

/// The longest `{error}` text a notice carries, in bytes.
pub const MAX_ERROR_BYTES: usize = 160;

/// A placeholder name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Var {
    TotalBytes,
    TotalLines,
    OmittedBytes,
    OmittedLines,
    FirstOmittedLine,
    LastOmittedLine,
    ReadLines,
    ReadBytes,
    ReadUnit,
    ReadRange,
    Id,
    ShortId,
    Path,
    StoredBytes,
    UnstoredBytes,
    Error,
    Notes,
    Location,
    Pointer,
    PointerJson,
}

const VARS: [(&str, Var); 20] = [
    ("total_bytes", Var::TotalBytes),
    ("total_lines", Var::TotalLines),
    ("omitted_bytes", Var::OmittedBytes),
    ("omitted_lines", Var::OmittedLines),
    ("first_omitted_line", Var::FirstOmittedLine),
    ("last_omitted_line", Var::LastOmittedLine),
    ("read_lines", Var::ReadLines),
    ("read_bytes", Var::ReadBytes),
    ("read_unit", Var::ReadUnit),
    ("read_range", Var::ReadRange),
    ("id", Var::Id),
    ("short_id", Var::ShortId),
    ("path", Var::Path),
    ("stored_bytes", Var::StoredBytes),
    ("unstored_bytes", Var::UnstoredBytes),
    ("error", Var::Error),
    ("notes", Var::Notes),
    ("location", Var::Location),
    ("pointer", Var::Pointer),
    ("pointer_json", Var::PointerJson),
];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Lit(String),
    Var(Var),
}

/// A parsed notice template.
///
/// # Examples
///
/// ```
/// use spillway::Template;
/// let t: Template = "[{omitted_lines} lines omitted; see {id}]".parse().unwrap();
/// assert_eq!(t.as_str(), "[{omitted_lines} lines omitted; see {id}]");
/// assert!("[{no_such_field}]".parse::<Template>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    source: Arc<str>,
    parts: Arc<[Part]>,
}

/// Why a template could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// `{name}` where `name` is not a known placeholder.
    UnknownPlaceholder(String),
    /// A `{` without its `}`, or a lone `}`.
    UnbalancedBrace,
    /// The template is empty.
    Empty,
    /// `{location}` inside the `stored` or `unsaved` template.
    NestedLocation,
    /// `{pointer}` or `{pointer_json}` outside the `pointer` template, or
    /// `{location}` inside it.
    MisplacedPointer,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::UnknownPlaceholder(name) => {
                let known: Vec<&str> = VARS.iter().map(|(n, _)| *n).collect();
                write!(
                    f,
                    "unknown placeholder {{{name}}} (known: {})",
                    known.join(", ")
                )
            }
            TemplateError::UnbalancedBrace => {
                f.write_str("unbalanced brace (write {{ and }} for literal braces)")
            }
            TemplateError::Empty => f.write_str("a notice template cannot be empty"),
            TemplateError::NestedLocation => {
                f.write_str("{location} cannot be used inside the stored or unsaved template")
            }
            TemplateError::MisplacedPointer => f.write_str(
                "{pointer} and {pointer_json} belong in the pointer template only, and {location} cannot be used there",
            ),
        }
    }
}

impl std::error::Error for TemplateError {}

impl std::str::FromStr for Template {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, TemplateError> {
        if s.is_empty() {
            return Err(TemplateError::Empty);
        }
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = s;
        while let Some(i) = rest.find(['{', '}']) {
            lit.push_str(&rest[..i]);
            let brace = rest.as_bytes()[i];
            let after = &rest[i + 1..];
            if after.as_bytes().first() == Some(&brace) {
                lit.push(brace as char);
                rest = &after[1..];
                continue;
            }
            if brace == b'}' {
                return Err(TemplateError::UnbalancedBrace);
            }
            let close = after.find('}').ok_or(TemplateError::UnbalancedBrace)?;
            let name = &after[..close];
            let var = VARS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    TemplateError::UnknownPlaceholder(name.chars().take(40).collect())
                })?;
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(Part::Var(var));
            rest = &after[close + 1..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template {
            source: s.into(),
            parts: parts.into(),
        })
    }
}

impl Template {
    /// The template's text as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    pub(crate) fn uses(&self, var: Var) -> bool {
        self.parts.contains(&Part::Var(var))
    }

    fn parse_default(s: &'static str) -> Template {
        match s.parse() {
            Ok(t) => t,
            // The defaults are constants covered by tests; this arm is unreachable.
            Err(e) => panic!("built-in template {s:?} does not parse: {e}"),
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// The five templates a notice is made from.
///
/// One of `omitted`, `binary` or `lossy` is the notice; its `{location}`
/// placeholder is filled with `stored` when the full output was saved, or
/// `unsaved` when it could not be.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NoticeTemplates {
    /// Used when part of the content is left out.
    ///
    /// Default: [`NoticeTemplates::DEFAULT_OMITTED`].
    pub omitted: Template,
    /// Used for binary input (it contains NUL bytes): the notice replaces the
    /// whole content. Default: [`NoticeTemplates::DEFAULT_BINARY`].
    pub binary: Template,
    /// Used for input that is not valid UTF-8 but fits whole once decoded:
    /// nothing is omitted, the exact bytes are stored.
    /// Default: [`NoticeTemplates::DEFAULT_LOSSY`].
    pub lossy: Template,
    /// `{location}` when the output was stored. Default: [`NoticeTemplates::DEFAULT_STORED`].
    pub stored: Template,
    /// `{location}` when storing failed. Default: [`NoticeTemplates::DEFAULT_UNSAVED`].
    pub unsaved: Template,
    /// How a JSON preview's markers say to read an elided value back, with
    /// `{pointer}` for its JSON Pointer. Default:
    /// [`NoticeTemplates::DEFAULT_POINTER`].
    pub pointer: Template,
}

impl NoticeTemplates {
    /// The default `omitted` template.
    pub const DEFAULT_OMITTED: &'static str = "[spillway: omitted lines {first_omitted_line}-{last_omitted_line} ({omitted_lines} lines, {omitted_bytes} bytes) of {total_lines} lines, {total_bytes} bytes{notes}. {location}]";
    /// The longest a notice of the default templates gets for an input of
    /// at most 64 MiB whose output was stored: 256 bytes.
    pub const DEFAULT_STORED_MAX_LEN: usize = 256;
    /// The default `binary` template.
    pub const DEFAULT_BINARY: &'static str =
        "[spillway: binary output ({total_bytes} bytes) not shown{notes}. {location}]";
    /// The default `lossy` template.
    pub const DEFAULT_LOSSY: &'static str = "[spillway: the output above is not valid UTF-8 ({total_bytes} bytes); invalid bytes are shown as U+FFFD{notes}. {location}]";
    /// The default `stored` template: the stored object's id and the
    /// omitted range, and no command (a library cannot know which one the
    /// model has; choose one with [`ReadHint`]).
    pub const DEFAULT_STORED: &'static str =
        "Output stored as {short_id}; the omitted part is {read_unit} {read_range}";
    /// The default `unsaved` template.
    pub const DEFAULT_UNSAVED: &'static str = "The full output could not be saved: {error}";
    /// The default `pointer` template: the id and the pointer, no command.
    pub const DEFAULT_POINTER: &'static str = "{short_id} {pointer}";

    /// These templates with the read hint's `stored` and `pointer`.
    ///
    /// # Errors
    ///
    /// [`TemplateError`] when a name in the hint makes a template invalid.
    pub fn with_read_hint(mut self, hint: &ReadHint) -> Result<Self, TemplateError> {
        self.stored = hint.stored().parse()?;
        self.pointer = hint.pointer().parse()?;
        Ok(self)
    }

    /// Whether any template prints `var`.
    pub(crate) fn uses(&self, var: Var) -> bool {
        [
            &self.omitted,
            &self.binary,
            &self.lossy,
            &self.stored,
            &self.unsaved,
        ]
        .iter()
        .any(|t| t.uses(var))
    }

    pub(crate) fn validate(&self) -> Result<(), TemplateError> {
        if self.stored.uses(Var::Location) || self.unsaved.uses(Var::Location) {
            return Err(TemplateError::NestedLocation);
        }
        let text = [
            &self.omitted,
            &self.binary,
            &self.lossy,
            &self.stored,
            &self.unsaved,
        ];
        let pointer = |t: &&Template| t.uses(Var::Pointer) || t.uses(Var::PointerJson);
        if text.iter().any(pointer) || self.pointer.uses(Var::Location) {
            return Err(TemplateError::MisplacedPointer);
        }
        Ok(())
    }
}

impl Default for NoticeTemplates {
    fn default() -> Self {
        NoticeTemplates {
            omitted: Template::parse_default(Self::DEFAULT_OMITTED),
            binary: Template::parse_default(Self::DEFAULT_BINARY),
            lossy: Template::parse_default(Self::DEFAULT_LOSSY),
            stored: Template::parse_default(Self::DEFAULT_STORED),
            unsaved: Template::parse_default(Self::DEFAULT_UNSAVED),
            pointer: Template::parse_default(Self::DEFAULT_POINTER),
        }
    }
}

/// Which notice is being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Omitted,
    Binary,
    Lossy,
}

/// The numbers that depend on where the preview is cut. While the cut is
/// being chosen they are unknown: `Bound` renders each as the widest value it
/// can take, so the rendered length is an upper bound of the final one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cut {
    Bound,
    Exact {
        omitted_bytes: u64,
        omitted_lines: u64,
        first: u64,
        last: u64,
        /// The omitted bytes of the input, `start..end`.
        bytes: (u64, u64),
    },
}

impl Cut {
    /// Whether a reader should ask for bytes rather than lines: the cut
    /// falls inside one line, so its line holds far more than was omitted.
    fn by_bytes(&self) -> bool {
        matches!(self, Cut::Exact { first, last, .. } if first == last)
    }
}

/// Everything a notice can say.
pub(crate) struct Facts<'a> {
    pub total_bytes: u64,
    pub total_lines: u64,
    pub cut: Cut,
    /// `Ok((id, path))` when stored, `Err(reason)` when not.
    pub location: Result<(&'a str, &'a str), &'a str>,
    pub stored_bytes: u64,
    pub unstored_bytes: u64,
    pub invalid_utf8: bool,
    /// The JSON Pointer, for the `pointer` template.
    pub pointer: &'a str,
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Makes `text` fit on one line in at most `max` bytes, cutting at a
/// character boundary and marking the cut with `…`.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.len() <= max {
        return flat;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !flat.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &flat[..end])
}

impl Facts<'_> {
    fn notes(&self, kind: Kind) -> String {
        let mut notes = String::new();
        if self.invalid_utf8 && kind == Kind::Omitted {
            notes.push_str("; not UTF-8, invalid bytes shown as U+FFFD");
        }
        if self.unstored_bytes > 0 {
            use fmt::Write;
            let _ = write!(
                notes,
                "; only the first {} bytes could be stored, the last {} bytes were not",
                self.stored_bytes, self.unstored_bytes
            );
        }
        notes
    }

    /// Renders `parts`; `{location}` becomes `location`, rendered with the same facts.
    fn render_into(
        &self,
        parts: &[Part],
        kind: Kind,
        location: Option<&Template>,
        out: &mut String,
    ) {
        use fmt::Write;
        let line_w = digits(self.total_lines.max(1));
        let nines = |w: usize| "9".repeat(w);
        for part in parts {
            let var = match part {
                Part::Lit(s) => {
                    out.push_str(s);
                    continue;
                }
                Part::Var(v) => *v,
            };
            let _ = match (var, self.cut) {
                (Var::TotalBytes, _) => write!(out, "{}", self.total_bytes),
                (Var::TotalLines, _) => write!(out, "{}", self.total_lines),
                (Var::OmittedBytes, Cut::Bound) => {
                    out.push_str(&nines(digits(self.total_bytes)));
                    Ok(())
                }
                (Var::OmittedLines | Var::FirstOmittedLine | Var::LastOmittedLine, Cut::Bound) => {
                    out.push_str(&nines(line_w));
                    Ok(())
                }
                (Var::ReadLines, Cut::Bound) => write!(out, "{}:{}", nines(line_w), nines(line_w)),
                (Var::ReadBytes | Var::ReadRange, Cut::Bound) => {
                    let w = line_w.max(digits(self.total_bytes));
                    write!(out, "{}:{}", nines(w), nines(w))
                }
                // "lines" and "bytes" are equally long.
                (Var::ReadUnit, Cut::Bound) => write!(out, "lines"),
                (Var::OmittedBytes, Cut::Exact { omitted_bytes, .. }) => {
                    write!(out, "{omitted_bytes}")
                }
                (Var::OmittedLines, Cut::Exact { omitted_lines, .. }) => {
                    write!(out, "{omitted_lines}")
                }
                (Var::FirstOmittedLine, Cut::Exact { first, .. }) => write!(out, "{first}"),
                (Var::LastOmittedLine, Cut::Exact { last, .. }) => write!(out, "{last}"),
                (Var::ReadLines, Cut::Exact { first, last, .. }) => write!(out, "{first}:{last}"),
                (Var::ReadBytes, Cut::Exact { bytes, .. }) => {
                    write!(out, "{}:{}", bytes.0, bytes.1)
                }
                (Var::ReadUnit, cut) => {
                    out.push_str(if cut.by_bytes() { "bytes" } else { "lines" });
                    Ok(())
                }
                (
                    Var::ReadRange,
                    Cut::Exact {
                        first, last, bytes, ..
                    },
                ) => {
                    if self.cut.by_bytes() {
                        write!(out, "{}:{}", bytes.0, bytes.1)
                    } else {
                        write!(out, "{first}:{last}")
                    }
                }
                (Var::Id, _) => {
                    out.push_str(self.location.map_or("(none)", |(id, _)| id));
                    Ok(())
                }
                (Var::ShortId, _) => {
                    let id = self.location.map_or("(none)", |(id, _)| id);
                    out.push_str(id.get(..SHORT_ID_LEN).unwrap_or(id));
                    Ok(())
                }
                (Var::Path, _) => {
                    out.push_str(self.location.map_or("(none)", |(_, p)| p));
                    Ok(())
                }
                (Var::StoredBytes, _) => write!(out, "{}", self.stored_bytes),
                (Var::UnstoredBytes, _) => write!(out, "{}", self.unstored_bytes),
                (Var::Error, _) => {
                    out.push_str(self.location.err().unwrap_or(""));
                    Ok(())
                }
                (Var::Notes, _) => {
                    out.push_str(&self.notes(kind));
                    Ok(())
                }
                (Var::Pointer, _) => {
                    out.push_str(&shell_quote(self.pointer));
                    Ok(())
                }
                (Var::PointerJson, _) => {
                    out.push('"');
                    crate::json::push_escaped(out, self.pointer);
                    out.push('"');
                    Ok(())
                }
                (Var::Location, _) => {
                    // `validate` keeps `{location}` out of the stored and
                    // unsaved templates, so this recursion is one level deep.
                    if let Some(t) = location {
                        self.render_into(&t.parts, kind, None, out);
                    }
                    Ok(())
                }
            };
        }
    }

    /// Renders the notice of `kind`, its `{location}` filled in.
    pub(crate) fn render(&self, templates: &NoticeTemplates, kind: Kind) -> String {
        let main = match kind {
            Kind::Omitted => &templates.omitted,
            Kind::Binary => &templates.binary,
            Kind::Lossy => &templates.lossy,
        };
        let location = match self.location {
            Ok(_) => &templates.stored,
            Err(_) => &templates.unsaved,
        };
        let mut out = String::with_capacity(256);
        self.render_into(&main.parts, kind, Some(location), &mut out);
        out
    }
}

/// A JSON marker's read hint: the `pointer` template for `pointer`, or why
/// nothing was stored.
pub(crate) fn pointer_hint(
    templates: &NoticeTemplates,
    location: Result<(&str, &str), &str>,
    pointer: &str,
) -> Result<String, String> {
    if let Err(e) = location {
        return Err(e.to_owned());
    }
    let facts = Facts {
        total_bytes: 0,
        total_lines: 0,
        cut: Cut::Bound,
        location,
        stored_bytes: 0,
        unstored_bytes: 0,
        invalid_utf8: false,
        pointer,
    };
    let mut out = String::new();
    facts.render_into(&templates.pointer.parts, Kind::Omitted, None, &mut out);
    Ok(out)
}

/// Every notice the templates can render, with the widest numbers, for an
/// id, a path and an error (stored, and not stored, for each kind).
fn bound_notices(templates: &NoticeTemplates, id: &str, path: &str, error: &str) -> Vec<String> {
    let mut out = Vec::new();
    for kind in [Kind::Omitted, Kind::Binary, Kind::Lossy] {
        for location in [Ok((id, path)), Err(error)] {
            // An output that could not be stored has no stored part, so no
            // note about bytes that were not stored (as the stage renders it).
            let stored = if location.is_ok() { u64::MAX } else { 0 };
            let facts = Facts {
                total_bytes: u64::MAX,
                total_lines: u64::MAX,
                cut: Cut::Bound,
                location,
                stored_bytes: stored,
                unstored_bytes: stored,
                invalid_utf8: true,
                pointer: "",
            };
            out.push(facts.render(templates, kind));
        }
    }
    out
}

/// The longest notice any input could produce with these templates, given the
/// length of an object path. Used to reject budgets too small for a notice.
pub(crate) fn worst_case_len(templates: &NoticeTemplates, path_len: usize) -> (usize, usize) {
    let id = "blake3:".to_string() + &"f".repeat(64);
    let path = "p".repeat(path_len);
    let error = "e".repeat(MAX_ERROR_BYTES);
    bound_notices(templates, &id, &path, &error)
        .iter()
        .fold((0, 0), |(bytes, lines), text| {
            let n = text.bytes().filter(|&b| b == b'\n').count() + 1;
            (bytes.max(text.len()), lines.max(n))
        })
}

/// The most tokens a notice of `templates` can take under `tokenizer`, with
/// fillers as token-dense as real ids, paths and errors (and some slack).
pub(crate) fn worst_case_tokens(
    templates: &NoticeTemplates,
    path_len: usize,
    tokenizer: crate::Tokenizer,
) -> usize {
    let id = "blake3:".to_string() + &"0f9e2d7c4b1a8e3d".repeat(4);
    let path: String = "/a-9".repeat(path_len / 4 + 1)[..path_len].to_string();
    let error: String = "no, 1 ".repeat(MAX_ERROR_BYTES / 6);
    let worst = bound_notices(templates, &id, &path, &error)
        .iter()
        .map(|t| tokenizer.count(t))
        .max()
        .unwrap_or(0);
    worst + 16
}

/// `word` as one word for a POSIX shell: as it is when it holds only safe
/// characters, else in single quotes.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// How a notice says to read back what it left out: the `stored` template
/// (the read hint of the whole output) and the `pointer` template (of a
/// JSON preview's markers). Each front end chooses the one its model can
/// follow; a harness with other tools writes its own templates instead.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadHint {
    /// No command: the stored object's id and the omitted range (the
    /// library's default).
    Id,
    /// A front end's own `stored` and `pointer` templates, as written (the
    /// `spillway` command line's, which its CLI and language packages
    /// share, come from `spillway_process::cli_read_hint`).
    Templates {
        /// The `stored` template.
        stored: String,
        /// The `pointer` template.
        pointer: String,
    },
    /// Tools of the harness that take an id and a range or a pointer:
    /// `read(id="…", lines="A:B")`, and when `grep` is given, `or search
    /// it with grep(id="…", pattern=…)`.
    Tool {
        /// The reading tool's name, such as `spill_read`.
        read: String,
        /// The searching tool's name, such as `spill_grep`.
        grep: Option<String>,
    },
}

/// `text` with its braces doubled, so that a template prints it as it is.
fn literal(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

impl ReadHint {
    /// The `stored` template this hint gives.
    pub fn stored(&self) -> String {
        match self {
            ReadHint::Id => NoticeTemplates::DEFAULT_STORED.to_string(),
            ReadHint::Templates { stored, .. } => stored.clone(),
            ReadHint::Tool { read, grep } => {
                let mut t = format!(
                    "Output stored; read it with {}(id=\"{{short_id}}\", {{read_unit}}=\"{{read_range}}\")",
                    literal(read)
                );
                if let Some(g) = grep {
                    t.push_str(&format!(
                        " or search it with {}(id=\"{{short_id}}\", pattern=…)",
                        literal(g)
                    ));
                }
                t
            }
        }
    }

    /// The `pointer` template this hint gives.
    pub fn pointer(&self) -> String {
        match self {
            ReadHint::Id => NoticeTemplates::DEFAULT_POINTER.to_string(),
            ReadHint::Templates { pointer, .. } => pointer.clone(),
            ReadHint::Tool { read, .. } => format!(
                "{}(id=\"{{short_id}}\", pointer={{pointer_json}})",
                literal(read)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates as long as the command line's (`spillway_process::cli_read_hint`):
    /// a front end's own, which the bound and the placeholders must serve.
    fn cli_like() -> ReadHint {
        ReadHint::Templates {
            stored:
                "Output stored; read it with: spillway show {short_id} --{read_unit} {read_range}"
                    .into(),
            pointer: "spillway show {short_id} --pointer {pointer}".into(),
        }
    }

    #[test]
    fn default_templates_parse_and_validate() {
        let t = NoticeTemplates::default();
        t.validate().unwrap();
        assert!(t.omitted.uses(Var::Location));
    }

    #[test]
    fn braces_escape_and_unknown_names_fail() {
        let t: Template = "{{literal}} {id}".parse().unwrap();
        let facts = Facts {
            total_bytes: 1,
            total_lines: 1,
            cut: Cut::Bound,
            location: Ok(("ID", "P")),
            stored_bytes: 1,
            unstored_bytes: 0,
            invalid_utf8: false,
            pointer: "",
        };
        let mut out = String::new();
        facts.render_into(&t.parts, Kind::Omitted, None, &mut out);
        assert_eq!(out, "{literal} ID");
        assert_eq!(
            "{nope}".parse::<Template>().unwrap_err(),
            TemplateError::UnknownPlaceholder("nope".into())
        );
        assert_eq!(
            "{id".parse::<Template>().unwrap_err(),
            TemplateError::UnbalancedBrace
        );
        assert_eq!(
            "id}".parse::<Template>().unwrap_err(),
            TemplateError::UnbalancedBrace
        );
        assert_eq!("".parse::<Template>().unwrap_err(), TemplateError::Empty);
    }

    #[test]
    fn bound_is_never_shorter_than_exact() {
        let templates = NoticeTemplates::default();
        for (total_bytes, total_lines) in [
            (1u64, 1u64),
            (9, 9),
            (10, 10),
            (123_456, 999),
            (u64::MAX, u64::MAX),
        ] {
            let base = |cut| Facts {
                total_bytes,
                total_lines,
                cut,
                location: Ok(("blake3:x", "/p")),
                stored_bytes: total_bytes,
                unstored_bytes: 0,
                invalid_utf8: true,
                pointer: "",
            };
            let bound = base(Cut::Bound).render(&templates, Kind::Omitted).len();
            for first in [1, total_lines] {
                let exact = base(Cut::Exact {
                    omitted_bytes: total_bytes,
                    omitted_lines: total_lines,
                    first,
                    last: total_lines,
                    bytes: (total_bytes / 2, total_bytes),
                })
                .render(&templates, Kind::Omitted)
                .len();
                assert!(exact <= bound, "{exact} > {bound}");
            }
        }
    }

    /// The notice of a stored output, with the library's default hint and
    /// with the CLI's, fits in 256 bytes for any input up to 64 MiB,
    /// invalid UTF-8 included, and names the object by a short id and the
    /// omitted range; a cut inside one line names the exact bytes.
    #[test]
    fn the_default_notice_is_short_and_reads_the_right_unit() {
        let id = format!("blake3:{}", "ab".repeat(32));
        let max = 64u64 << 20;
        let facts = |cut| Facts {
            total_bytes: max,
            total_lines: max,
            cut,
            location: Ok((
                id.as_str(),
                "/a/very/long/path/that/the/default/notice/never/prints",
            )),
            stored_bytes: max,
            unstored_bytes: 0,
            invalid_utf8: true,
            pointer: "",
        };
        let lines_cut = Cut::Exact {
            omitted_bytes: 500,
            omitted_lines: 10,
            first: 11,
            last: 20,
            bytes: (1000, 1500),
        };
        let bytes_cut = Cut::Exact {
            omitted_bytes: 7_000_000,
            omitted_lines: 1,
            first: 1,
            last: 1,
            bytes: (12_000, 7_012_000),
        };
        let cases = [
            (
                ReadHint::Id,
                "blake3:abababababababab; the omitted part is lines 11:20]",
                "bytes 12000:7012000]",
            ),
            (
                cli_like(),
                "spillway show blake3:abababababababab --lines 11:20]",
                "--bytes 12000:7012000]",
            ),
        ];
        for (hint, lines_end, bytes_end) in cases {
            let templates = NoticeTemplates::default().with_read_hint(&hint).unwrap();
            let bound = facts(Cut::Bound).render(&templates, Kind::Omitted);
            assert!(
                bound.len() <= NoticeTemplates::DEFAULT_STORED_MAX_LEN,
                "{hint:?}: {} bytes: {bound}",
                bound.len()
            );
            let lines = facts(lines_cut).render(&templates, Kind::Omitted);
            assert!(lines.ends_with(lines_end), "{lines}");
            assert!(!lines.contains("/a/very/long"));
            let bytes = facts(bytes_cut).render(&templates, Kind::Omitted);
            assert!(bytes.ends_with(bytes_end), "{bytes}");
        }
        assert_eq!(
            NoticeTemplates::default(),
            NoticeTemplates::default()
                .with_read_hint(&ReadHint::Id)
                .unwrap()
        );
    }

    /// Each hint's templates are valid, and names with braces or quotes in
    /// them print as they are.
    #[test]
    fn every_read_hint_makes_valid_templates() {
        let hints = [
            ReadHint::Id,
            cli_like(),
            ReadHint::Tool {
                read: "spill_read".into(),
                grep: None,
            },
            ReadHint::Tool {
                read: "x{y}".into(),
                grep: Some("g}".into()),
            },
        ];
        for hint in hints {
            let t = NoticeTemplates::default().with_read_hint(&hint).unwrap();
            t.validate().unwrap();
            assert!(
                t.stored.uses(Var::ShortId)
                    && (t.pointer.uses(Var::Pointer) || t.pointer.uses(Var::PointerJson)),
                "{hint:?}"
            );
        }
        let t = NoticeTemplates::default()
            .with_read_hint(&ReadHint::Tool {
                read: "x{y}".into(),
                grep: Some("g}".into()),
            })
            .unwrap();
        assert!(t.stored.as_str().contains("x{{y}}(id=") && t.stored.as_str().contains("g}}(id="));
    }

    /// A pointer whose keys hold a space, a quote, a backslash or `~` is
    /// one shell word in the CLI's hint and a JSON string in a tool's: each
    /// reads back as the pointer (a tool's hint quoted it for a shell, so
    /// `pointer="'/user name'"` named no value).
    #[test]
    fn a_pointer_is_a_shell_word_for_the_cli_and_a_json_string_for_a_tool() {
        let id = "blake3:".to_string() + &"ab".repeat(32);
        for pointer in ["/items/0", "/user name", "/a\"b\\c", "/x~1y/it's", ""] {
            let tool = NoticeTemplates::default()
                .with_read_hint(&ReadHint::Tool {
                    read: "spill_read".into(),
                    grep: None,
                })
                .unwrap();
            let hint = pointer_hint(&tool, Ok((&id, "/p")), pointer).unwrap();
            let arg = hint
                .split_once("pointer=")
                .and_then(|(_, a)| a.strip_suffix(')'))
                .unwrap();
            assert_eq!(
                serde_json::from_str::<String>(arg).unwrap(),
                pointer,
                "{hint}"
            );
            let cli = NoticeTemplates::default()
                .with_read_hint(&cli_like())
                .unwrap();
            let hint = pointer_hint(&cli, Ok((&id, "/p")), pointer).unwrap();
            let word = hint.rsplit_once("--pointer ").unwrap().1;
            assert_eq!(word, shell_quote(pointer), "{hint}");
        }
    }

    #[test]
    fn one_line_flattens_and_bounds() {
        assert_eq!(one_line("a\nb", 10), "a b");
        let long = "é".repeat(200);
        let s = one_line(&long, MAX_ERROR_BYTES);
        assert!(s.len() <= MAX_ERROR_BYTES && s.ends_with('…'));
    }
}
