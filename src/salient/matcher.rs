//! Finding the lines that match, and their ranks: every pattern in one
//! search, gated (with the built-in patterns) by a search for literals one
//! of which every matching line holds.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use regex_automata::meta;
use regex_automata::{HalfMatch, Input, Match};

use super::shape::{Judged, LEVEL_KEYS, LEVEL_PATTERN};
use super::{one_line, SalientPattern, SalientRank};
use crate::word;

/// Literals one of which every line the built-in patterns match holds
/// (`the_gate_passes_every_line_the_built_in_patterns_match` checks it):
/// with the built-in patterns, only the lines they are in are searched,
/// and one vectorized search finds them all. Those of three bytes are for
/// logcat's levels (`… 1234 E tag: `, `E/tag`) and apt's `E: `; a literal
/// that starts with `\n` also holds at the text's start. None holds a digit
/// (`no_gate_literal_holds_a_digit`).
const GATE: &[&str] = &[
    "ERROR",
    "FATAL",
    "SEVERE",
    "CRITICAL",
    "PANIC",
    "error",
    "fatal",
    "Fatal",
    "crit",
    "alert",
    "emerg",
    "panic",
    "level",
    "lvl=",
    "lvl\"",
    "severity",
    "FAIL",
    "Failed",
    "not ok",
    "✕ ",
    "✗ ",
    "Traceback",
    "Error",
    "Exception",
    "Caused by: ",
    "Segmentation fault",
    "core dumped",
    "ERR!",
    ": ***",
    "command not found",
    "undefined reference to",
    "WARN",
    "warn",
    "Warning",
    "No such file or directory",
    "Permission denied",
    " E ",
    " F ",
    " W ",
    "\nE/",
    "\nF/",
    "\nW/",
    "\nE: ",
];

/// The literals of [`GATE`] that only the level patterns need
/// (`level=err`, `"lvl": "crit"`): a line whose first literal is one of
/// these, and which holds no other, can only match the patterns that name
/// a level, and is searched with those alone, a far smaller search than
/// every pattern (a JSON log's every line names its level).
/// `a_line_with_only_a_level_literal_ranks_as_with_every_pattern` checks it.
const WEAK: &[&str] = &["level", "lvl=", "lvl\"", "severity"];

/// Finds the lines that match, and their ranks.
///
/// Each of its searches is compiled when a line first needs it, once for
/// every clone: most outputs hold no line the gate lets through, and a
/// process that previews one small output should not pay for compiling
/// every pattern several times over (about 4 ms).
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    /// Every pattern in one search; a match's pattern id gives its rank.
    all: Search,
    ranks: Arc<[SalientRank]>,
    /// The patterns of each rank above [`SalientRank::Word`], to raise a
    /// line whose first match ranks lower than another it holds.
    errors: Option<Search>,
    warnings: Option<Search>,
    /// With the built-in patterns: what a matching line holds.
    pub(super) gate: Option<Arc<Gate>>,
    /// With the gate: the patterns that name a level, for a line that
    /// holds only [`WEAK`] literals, and their ranks.
    levels: Option<(Search, Arc<[SalientRank]>)>,
    /// Search states given back by searchers that are done, for the next
    /// ones: making one costs far more than a small output's whole scan.
    spare: Arc<Mutex<Vec<Caches>>>,
}

/// Patterns in the order a search numbers them: higher ranks first, so
/// that of two matches that start together, the higher-ranked one is
/// reported.
fn by_rank<'a>(patterns: impl Iterator<Item = &'a SalientPattern>) -> Vec<&'a SalientPattern> {
    let mut sorted: Vec<&SalientPattern> = patterns.collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.rank));
    sorted
}

/// Patterns in one search, compiled when first used. A compile that fails
/// leaves the search without a match; none does: the built-in patterns are
/// checked by a test, and a user's were read and their search of them all
/// compiled when they were given (the searches of a part of them, of one
/// rank or of the levels, are smaller).
#[derive(Clone, Debug)]
struct Search(Arc<SearchInner>);

#[derive(Debug)]
struct SearchInner {
    patterns: Vec<String>,
    scope: Scope,
    regex: OnceLock<Option<meta::Regex>>,
}

/// What a search runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// A whole text, where a prefilter (a search for the patterns'
    /// literals) skips to the places a match may start.
    Text,
    /// One line at a time: a prefilter's start costs more than the
    /// search's automaton takes to read a short line (on a build log's
    /// lines of about sixty bytes, a call of the prefilter cost about
    /// 1,000 instructions, the automaton's whole pass about 850).
    Line,
}

impl Search {
    fn new<'a>(patterns: impl IntoIterator<Item = &'a str>, scope: Scope) -> Search {
        Search(Arc::new(SearchInner {
            patterns: patterns.into_iter().map(str::to_owned).collect(),
            scope,
            regex: OnceLock::new(),
        }))
    }

    /// Compiled now, so that a pattern the regex crate cannot take is
    /// reported when it is given.
    fn compiled<'a>(
        patterns: impl IntoIterator<Item = &'a str>,
        scope: Scope,
    ) -> Result<Search, String> {
        let search = Search::new(patterns, scope);
        let regex = compile(&search.0.patterns, scope)?;
        let _ = search.0.regex.set(Some(regex));
        Ok(search)
    }

    /// The same patterns, searched over `scope`.
    fn over(&self, scope: Scope) -> Search {
        Search::new(self.0.patterns.iter().map(String::as_str), scope)
    }

    fn regex(&self) -> Option<&meta::Regex> {
        self.0
            .regex
            .get_or_init(|| compile(&self.0.patterns, self.0.scope).ok())
            .as_ref()
    }

    /// The first match's end and pattern, with `cache` (made here the
    /// first time).
    fn half(&self, cache: &mut Option<meta::Cache>, input: &Input<'_>) -> Option<HalfMatch> {
        let regex = self.regex()?;
        let cache = cache.get_or_insert_with(|| regex.create_cache());
        regex.search_half_with(cache, input)
    }

    /// The first match, with `cache`.
    fn find(&self, cache: &mut Option<meta::Cache>, input: &Input<'_>) -> Option<Match> {
        let regex = self.regex()?;
        let cache = cache.get_or_insert_with(|| regex.create_cache());
        regex.search_with(cache, input)
    }
}

/// The most search states a matcher keeps for reuse.
const SPARE_CACHES: usize = 8;

/// A search for the lines that may match, far cheaper than the patterns:
/// the literals of [`GATE`] together.
#[derive(Debug)]
pub(super) struct Gate {
    all: aho_corasick::packed::Searcher,
}

/// A candidate the gate found: where, and whether its literal is one of
/// [`WEAK`].
#[derive(Clone, Copy, Debug)]
struct Hit {
    at: usize,
    weak: bool,
}

impl Gate {
    fn new() -> Option<Gate> {
        let all = aho_corasick::packed::Config::new()
            .builder()
            .extend(GATE)
            .build()?;
        Some(Gate { all })
    }

    /// The first candidate at or after `pos`, a line start: where a
    /// literal starts, or, for one that starts with the `\n` before a line,
    /// where that line starts.
    fn next(&self, text: &[u8], pos: usize) -> Option<Hit> {
        if pos == 0
            && [&b"E/"[..], b"F/", b"W/", b"E: "]
                .iter()
                .any(|p| text.starts_with(p))
        {
            return Some(Hit { at: 0, weak: false });
        }
        // From the `\n` before `pos`, which a literal may start with.
        self.after(text, pos.saturating_sub(1))
    }

    /// The first literal that starts at or after `from` (a literal that
    /// starts with `\n` is reported at the line it starts).
    fn after(&self, text: &[u8], from: usize) -> Option<Hit> {
        let m = self
            .all
            .find_in(text, aho_corasick::Span::from(from..text.len()))?;
        Some(Hit {
            at: m.start() + usize::from(text[m.start()] == b'\n'),
            weak: WEAK.contains(&GATE[m.pattern().as_usize()]),
        })
    }
}

/// Where a search of the gate got to: its next candidate, and where it
/// was searched from; and where the last line judged that holds a literal
/// of the gate ends, and how many such lines came one after another up to
/// it.
#[derive(Default)]
struct Cursor {
    next: Option<(usize, Option<Hit>)>,
    judged_end: Option<usize>,
    run: u32,
    /// How many lines that hold no literal were passed since, each found
    /// in the memory right after the run (at most [`MAX_PASSED`]).
    passed: u32,
}

/// The most lines without a literal of the gate a run of lines that hold
/// one goes on through (a build log's `Compiling` between its errors):
/// each is looked up in the memory, and a long stretch of them is passed
/// faster by one search of the gate.
const MAX_PASSED: u32 = 3;

impl Cursor {
    /// Remembers that the first literal at or after `from` is `hit`.
    fn set(&mut self, from: usize, hit: Option<Hit>) {
        self.next = Some((from, hit));
    }

    /// The next candidate at or after `pos`, reusing the last answer while
    /// it still holds.
    fn next(&mut self, pos: usize, search: impl FnOnce() -> Option<Hit>) -> Option<Hit> {
        match self.next {
            Some((from, Some(hit))) if from <= pos && hit.at >= pos => Some(hit),
            Some((from, None)) if from <= pos => None,
            _ => {
                let hit = search();
                self.next = Some((pos, hit));
                hit
            }
        }
    }

    /// `line`, which holds a literal of the gate, was judged.
    fn judged(&mut self, line: &Range<usize>) {
        self.run = if self.right_after(line.start) {
            self.run.saturating_add(1)
        } else {
            1
        };
        self.judged_end = Some(line.end);
        self.passed = 0;
    }

    /// `line`, found in the memory right after a run to hold no literal
    /// of the gate, was passed: the run goes on past it, up to
    /// [`MAX_PASSED`] such lines in a row.
    fn passed(&mut self, line: &Range<usize>) {
        if self.passed < MAX_PASSED && self.right_after(line.start) {
            self.passed += 1;
            self.judged_end = Some(line.end);
        }
    }

    /// `line` was found to match, with its rank.
    fn matched(
        &mut self,
        line: Range<usize>,
        rank: SalientRank,
    ) -> Option<(Range<usize>, SalientRank)> {
        self.judged(&line);
        Some((line, rank))
    }

    /// Whether the line at `pos` comes right after the last line judged.
    fn right_after(&self, pos: usize) -> bool {
        self.judged_end.is_some_and(|end| end + 1 == pos)
    }

    /// Whether the line at `pos` comes right after a run of lines that
    /// hold a literal of the gate (two or more: where one line in two or
    /// three does, the gate's search costs less than a lookup of each
    /// line).
    fn in_a_run(&self, pos: usize) -> bool {
        self.run >= 2 && self.right_after(pos)
    }
}

/// Where the line at `pos` ends: at the first `\n` from `pos` on, or at
/// the text's end. Most lines are short: their first [`SHORT_LINE`] bytes
/// are searched eight at a time here, in line, and only the rest by
/// `memchr`, whose call costs more than a short line's words (a flood's
/// lines, each searched from its start).
#[inline]
fn line_end(text: &[u8], pos: usize) -> usize {
    let mut i = pos;
    while i + 8 <= text.len() && i - pos < SHORT_LINE {
        if let Some(k) = word::first(word::equal(word::le_word(&text[i..i + 8]), b'\n')) {
            return i + k;
        }
        i += 8;
    }
    memchr::memchr(b'\n', &text[i..]).map_or(text.len(), |k| i + k)
}

/// The bytes of a line [`line_end`] searches eight at a time before it
/// calls `memchr`.
const SHORT_LINE: usize = 256;

impl Matcher {
    /// A matcher of a user's `patterns`: the search of them all is
    /// compiled now, to report what the regex crate cannot take when they
    /// are given.
    pub(super) fn checked(patterns: &[SalientPattern]) -> Result<Matcher, String> {
        let sorted = by_rank(patterns.iter());
        let all = Search::compiled(sorted.iter().map(|p| p.pattern.as_str()), Scope::Text)?;
        Ok(Matcher::with(&sorted, all))
    }

    /// A matcher of patterns known to compile (the built-in ones), every
    /// search compiled when first needed.
    pub(super) fn lazy(patterns: &[SalientPattern]) -> Matcher {
        let sorted = by_rank(patterns.iter());
        let all = Search::new(sorted.iter().map(|p| p.pattern.as_str()), Scope::Text);
        Matcher::with(&sorted, all)
    }

    fn with(sorted: &[&SalientPattern], all: Search) -> Matcher {
        let of = |rank| {
            let mut set = sorted
                .iter()
                .filter(|p| p.rank == rank)
                .map(|p| p.pattern.as_str())
                .peekable();
            // Each raises one line.
            set.peek().is_some().then(|| Search::new(set, Scope::Line))
        };
        Matcher {
            all,
            ranks: sorted.iter().map(|p| p.rank).collect(),
            errors: of(SalientRank::Error),
            warnings: of(SalientRank::Warning),
            gate: None,
            levels: None,
            spare: Arc::default(),
        }
    }

    /// Adds the built-in patterns' gate (where the machine can search
    /// for its literals together); `patterns` are the ones it was made of.
    pub(super) fn gated(mut self, patterns: &[SalientPattern]) -> Matcher {
        self.gate = Gate::new().map(Arc::new);
        if self.gate.is_some() {
            // The gate finds the lines; the search of every pattern
            // judges one of them at a time.
            self.all = self.all.over(Scope::Line);
            let levels = by_rank(
                patterns
                    .iter()
                    .filter(|p| p.pattern.contains(LEVEL_PATTERN)),
            );
            self.levels = (!levels.is_empty()).then(|| {
                (
                    Search::new(levels.iter().map(|p| p.pattern.as_str()), Scope::Line),
                    levels.iter().map(|p| p.rank).collect(),
                )
            });
        }
        self
    }

    /// The search state of this matcher's regexes, for one searcher at a
    /// time: searching with it spares each search a trip to the regexes'
    /// shared pool of caches (slow from any thread but the first). One a
    /// searcher gave back is reused; give it back with
    /// [`give_back`](Self::give_back) when done.
    pub(crate) fn caches(&self) -> Caches {
        let reused = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_default()
    }

    /// Its searches.
    #[cfg(test)]
    fn searches(&self) -> impl Iterator<Item = &Search> {
        [
            Some(&self.all),
            self.errors.as_ref(),
            self.warnings.as_ref(),
            self.levels.as_ref().map(|(l, _)| l),
        ]
        .into_iter()
        .flatten()
    }

    /// How many of its searches are compiled, and how many there are.
    #[cfg(test)]
    pub(crate) fn compiled(&self) -> (usize, usize) {
        self.searches().fold((0, 0), |(n, of), s| {
            (n + usize::from(s.0.regex.get().is_some()), of + 1)
        })
    }

    /// Compiles every search; whether each compiled.
    #[cfg(test)]
    pub(crate) fn compile_all(&self) -> bool {
        self.searches().all(|s| s.regex().is_some())
    }

    /// How many search states wait for reuse.
    #[cfg(test)]
    pub(crate) fn spare_len(&self) -> usize {
        self.spare.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Keeps `caches` (from [`caches`](Self::caches)) for the next searcher.
    pub(crate) fn give_back(&self, mut caches: Caches) {
        // The next searcher's text is another: what it remembers of the
        // last line it looked up, by where that line was, no longer holds.
        caches.memo.forget_last();
        let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < SPARE_CACHES {
            spare.push(caches);
        }
    }

    /// The first line at or after `pos` (a line start) that matches, and
    /// its rank.
    fn find(
        &self,
        text: &[u8],
        mut pos: usize,
        cur: &mut Cursor,
        caches: &mut Caches,
    ) -> Option<(Range<usize>, SalientRank)> {
        let Some(gate) = &self.gate else {
            let m = self
                .all
                .find(&mut caches.all, &Input::new(text).range(pos..))?;
            let start = memchr::memrchr(b'\n', &text[..m.start()]).map_or(0, |i| i + 1);
            let end = line_end(text, m.start());
            let first = self.ranks[m.pattern().as_usize()];
            return Some((start..end, self.raise(&text[start..end], first, caches)));
        };
        while pos < text.len() {
            // Where lines that hold a literal of the gate come one after
            // another (a flood, a build log, a JSON log), the line after
            // them is looked up in the memory first, before a search of the
            // gate, which costs more per call than a line's skeleton (and
            // so are the next few after it that the memory finds to hold
            // none, as a build log's `Compiling` between errors). A line
            // of a skeleton judged lately is judged as that line was (one
            // that holds no literal: every line of its skeleton holds none,
            // as no literal holds a digit).
            let mut missed = None;
            if cur.in_a_run(pos) {
                let end = line_end(text, pos);
                match caches.memo.rank(&text[pos..end]) {
                    Some(j) => {
                        if let Some(rank) = j.rank {
                            return cur.matched(pos..end, rank);
                        }
                        if j.gated {
                            cur.judged(&(pos..end));
                        } else {
                            cur.passed(&(pos..end));
                        }
                        pos = end + 1;
                        continue;
                    }
                    None => missed = Some(end),
                }
            }
            let Some(hit) = cur.next(pos, || gate.next(text, pos)) else {
                if let Some(end) = missed {
                    caches
                        .memo
                        .remember_rank(&text[pos..end], Judged::NO_LITERAL);
                }
                return None;
            };
            let g = hit.at;
            if let Some(end) = missed.filter(|&end| g > end) {
                caches
                    .memo
                    .remember_rank(&text[pos..end], Judged::NO_LITERAL);
                pos = end + 1;
                continue;
            }
            let start = memchr::memrchr(b'\n', &text[pos..g]).map_or(pos, |i| pos + i + 1);
            let end = line_end(text, g);
            // A line of a skeleton judged lately ranks as that line did.
            let remembered = if missed.is_some() {
                // Looked up above: the same line.
                None
            } else {
                caches.memo.rank(&text[start..end])
            };
            let rank = match remembered {
                Some(j) => j.rank,
                None => {
                    let rank = self.judge(gate, text, start..end, hit, cur, caches);
                    caches
                        .memo
                        .remember_rank(&text[start..end], Judged { rank, gated: true });
                    rank
                }
            };
            if let Some(rank) = rank {
                return cur.matched(start..end, rank);
            }
            cur.judged(&(start..end));
            pos = end + 1;
        }
        None
    }

    /// The rank of the line `text[line]`, which holds a literal of the
    /// gate (its first is `hit`), if it matches. Which pattern matches
    /// first needs only the match's end. No literal starts before the
    /// gate's first one, so a line whose first is a level's, and which
    /// holds no other, can only match the level patterns. Kept out of
    /// [`find`](Self::find), which a flood enters once a line and mostly
    /// answers from the memory: inlined, its searches' state made that
    /// call's every entry cost as much as a skeleton.
    #[inline(never)]
    fn judge(
        &self,
        gate: &Gate,
        text: &[u8],
        line: Range<usize>,
        hit: Hit,
        cur: &mut Cursor,
        caches: &mut Caches,
    ) -> Option<SalientRank> {
        let (start, end) = (line.start, line.end);
        let weak = match (&self.levels, hit.weak) {
            (Some(_), true) => weak_only(gate, text, hit.at, end, cur),
            _ => None,
        };
        let found = match (&self.levels, weak) {
            (Some((levels, ranks)), Some(at)) => {
                level_rank(levels, ranks, &mut caches.levels, text, start, end, &at)
            }
            _ => self
                .all
                .half(&mut caches.all, &Input::new(text).range(start..end))
                .map(|m| self.ranks[m.pattern().as_usize()]),
        };
        found.map(|first| self.raise(&text[start..end], first, caches))
    }

    /// The rank of a line whose first match ranks `first`: a level or a
    /// compiler's prefix comes first in its line and says what the line
    /// is; a line whose first match is a mere word takes the highest rank
    /// it holds.
    fn raise(&self, line: &[u8], first: SalientRank, caches: &mut Caches) -> SalientRank {
        if first > SalientRank::Word {
            return first;
        }
        let input = Input::new(line).earliest(true);
        let holds = |r: &Option<Search>, c: &mut Option<meta::Cache>| {
            r.as_ref().is_some_and(|r| r.half(c, &input).is_some())
        };
        if holds(&self.errors, &mut caches.errors) {
            SalientRank::Error
        } else if holds(&self.warnings, &mut caches.warnings) {
            SalientRank::Warning
        } else {
            first
        }
    }

    /// The next line of `text` from `at` that matches (without its `\n`),
    /// with its rank.
    pub(crate) fn next_line(
        &self,
        text: &[u8],
        at: &mut LinesAt,
        caches: &mut Caches,
    ) -> Option<(Range<usize>, SalientRank)> {
        if at.pos > text.len() {
            return None;
        }
        let (line, rank) = self.find(text, at.pos, &mut at.cur, caches)?;
        at.pos = line.end + 1;
        Some((line, rank))
    }

    /// The ranges of the lines of `text` that match (without their `\n`),
    /// with their ranks (the tests' way through a text; the scans call
    /// [`next_line`](Self::next_line), so that they can shape each line with
    /// the same search state).
    #[cfg(test)]
    pub(crate) fn lines<'a>(
        &'a self,
        text: &'a [u8],
        caches: &'a mut Caches,
    ) -> impl Iterator<Item = (Range<usize>, SalientRank)> + 'a {
        let mut at = LinesAt::default();
        std::iter::from_fn(move || self.next_line(text, &mut at, caches))
    }

    /// The rank of one line, if it matches.
    pub(crate) fn line_rank(&self, line: &[u8], caches: &mut Caches) -> Option<SalientRank> {
        Some(self.find(line, 0, &mut Cursor::default(), caches)?.1)
    }

    /// The shape key of a line of `rank` (escape sequences removed), from
    /// the shapes of the lines judged lately when it can be.
    pub(crate) fn shape(&self, line: &[u8], rank: SalientRank, caches: &mut Caches) -> u64 {
        caches.memo.ranked(line, rank)
    }
}

/// Where a search for the lines that match got to
/// ([`Matcher::next_line`]).
#[derive(Default)]
pub(crate) struct LinesAt {
    pos: usize,
    cur: Cursor,
}

/// The most [`WEAK`] literals a line may hold to be searched for levels
/// alone.
const MAX_WEAK: usize = 4;

/// Where the literals of the line `text[..end]` start, from its first (a
/// weak one, at `g`), when they are all [`WEAK`] (and at most
/// [`MAX_WEAK`]); else `None`. The search past the line that answers it is
/// the one the next line needs: `cur` keeps it.
fn weak_only(gate: &Gate, text: &[u8], g: usize, end: usize, cur: &mut Cursor) -> Option<Weak> {
    let mut found = Weak {
        at: [g; MAX_WEAK],
        len: 1,
    };
    loop {
        let from = found.at[found.len - 1] + 1;
        let next = gate.after(text, from);
        match next {
            Some(h) if h.at < end => {
                if !h.weak || found.len == MAX_WEAK {
                    return None;
                }
                found.at[found.len] = h.at;
                found.len += 1;
            }
            _ => {
                cur.set(from, next);
                return Some(found);
            }
        }
    }
}

/// Where a line's [`WEAK`] literals start.
#[derive(Clone, Copy)]
struct Weak {
    at: [usize; MAX_WEAK],
    len: usize,
}

/// The rank of the first level pattern a line holding only [`WEAK`]
/// literals matches. A level pattern names its key (`level`, `lvl` or
/// `severity`) as logfmt does, `level=`, or as JSON does, `"level":`: its
/// match starts at the key when `=` follows the key, and at the quote
/// before it when `"` follows it, and nowhere else. So the leftmost match
/// is found by one search at each key, anchored where a match would start,
/// in order, each a few bytes long (the bytes before still count for
/// look-behind).
fn level_rank(
    levels: &Search,
    ranks: &[SalientRank],
    cache: &mut Option<meta::Cache>,
    text: &[u8],
    start: usize,
    end: usize,
    weak: &Weak,
) -> Option<SalientRank> {
    for &at in &weak.at[..weak.len] {
        let key = LEVEL_KEYS
            .into_iter()
            .find(|k| text[at..end].starts_with(k))
            .map_or(0, <[u8]>::len);
        let from = match text[..end].get(at + key) {
            Some(b'=') => Some(at),
            Some(b'"') => at.checked_sub(1).filter(|&f| f >= start && text[f] == b'"'),
            _ => None,
        };
        let Some(from) = from else {
            continue;
        };
        let input = Input::new(text)
            .range(from..end)
            .anchored(regex_automata::Anchored::Yes);
        if let Some(m) = levels.half(cache, &input) {
            return Some(ranks[m.pattern().as_usize()]);
        }
    }
    None
}

/// A [`Matcher`]'s search state ([`Matcher::caches`]): each search's,
/// made when it is first used, and the ranks and shapes of the lines it
/// judged lately.
#[derive(Debug, Default)]
pub(crate) struct Caches {
    all: Option<meta::Cache>,
    errors: Option<meta::Cache>,
    warnings: Option<meta::Cache>,
    levels: Option<meta::Cache>,
    memo: super::shape::Memo,
}

/// How a pattern is read: `^` and `$` at line ends.
fn syntax() -> regex_automata::util::syntax::Config {
    regex_automata::util::syntax::Config::new().multi_line(true)
}

/// Whether `pattern` is a regular expression, as a search reads it: its
/// syntax only, a far smaller cost than compiling it.
pub(super) fn check(pattern: &str) -> Result<(), String> {
    regex_automata::util::syntax::parse_with(pattern, &syntax())
        .map(drop)
        .map_err(|e| one_line(&e.to_string()))
}

/// Compiles `patterns` into one multi-line search over `scope`.
fn compile(patterns: &[String], scope: Scope) -> Result<meta::Regex, String> {
    meta::Regex::builder()
        .syntax(syntax())
        .configure(meta::Config::new().auto_prefilter(scope == Scope::Text))
        .build_many(patterns)
        .map_err(|e| one_line(&e.to_string()))
}

#[cfg(test)]
mod tests {
    /// Lines of one skeleton (their digits changed) hold a gate literal
    /// or none together: the memory of recent lines remembers a line that
    /// holds none as not matching, for every line of its skeleton.
    #[test]
    fn no_gate_literal_holds_a_digit() {
        for literal in super::GATE {
            assert!(!literal.bytes().any(|b| b.is_ascii_digit()), "{literal}");
        }
    }

    /// A run of lines that hold a literal goes on past up to
    /// `MAX_PASSED` lines in a row found in the memory to hold none, and
    /// ends at the next or where a line is skipped.
    #[test]
    fn a_run_goes_on_past_a_few_lines_without_a_literal() {
        let line = |n: usize| n * 10..n * 10 + 9;
        let mut cur = super::Cursor::default();
        cur.judged(&line(0));
        cur.passed(&line(1));
        assert!(!cur.in_a_run(line(2).start), "one line is not a run");
        cur.judged(&line(2));
        cur.judged(&line(3));
        let mut n = 4;
        for _ in 0..super::MAX_PASSED {
            assert!(cur.in_a_run(line(n).start), "line {n}");
            cur.passed(&line(n));
            n += 1;
        }
        assert!(cur.in_a_run(line(n).start));
        cur.passed(&line(n));
        assert!(!cur.in_a_run(line(n + 1).start), "past the most passed");
        cur.judged(&line(n + 1));
        cur.judged(&line(n + 2));
        cur.passed(&line(n + 4));
        assert!(!cur.in_a_run(line(n + 5).start), "a line skipped");
        cur.judged(&line(n + 5));
        cur.judged(&line(n + 6));
        cur.passed(&line(n + 7));
        cur.judged(&line(n + 8));
        assert_eq!(
            cur.run, 3,
            "a line passed is not counted, and does not end the run"
        );
    }

    /// Lines of one folded skeleton (other hex values) hold a gate literal
    /// or none together: no literal has a part inside a hex value, a run
    /// of digits and `a` to `f` that is a word on its own, as each run of
    /// a literal's letters holds a byte that is not one of those.
    #[test]
    fn no_gate_literal_reads_inside_a_hex_value() {
        for literal in super::GATE {
            for run in literal
                .as_bytes()
                .split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                .filter(|r| !r.is_empty())
            {
                assert!(
                    run.iter()
                        .any(|b| !(b.is_ascii_digit() || (b'a'..=b'f').contains(b))),
                    "{literal}"
                );
            }
        }
    }

    /// A line's end is the first `\n` from where it is searched, or the
    /// text's end: for every place in texts whose lines are of every
    /// length from none to past the bytes searched a word at a time, with
    /// and without a last `\n`, and with a `\n` in each place of a word.
    #[test]
    fn a_line_ends_at_its_first_line_end() {
        let naive = |text: &[u8], pos: usize| {
            text[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |i| pos + i)
        };
        let lens = [0, 1, 7, 8, 9, 15, 16, 17, 63, 255, 256, 257, 300, 700];
        for (k, &first) in lens.iter().enumerate() {
            for &second in &lens[k..] {
                for last in [true, false] {
                    // Bytes a word-wide test could take for `\n`: `\x0b`
                    // and `\x09` beside it, and bytes with the high bit.
                    let fill = |n: usize| (0..n).map(|i| b"\x0b\x09\x8a\xff x"[i % 6]);
                    let mut text: Vec<u8> = fill(first).collect();
                    text.push(b'\n');
                    text.extend(fill(second));
                    if last {
                        text.push(b'\n');
                    }
                    for pos in 0..=text.len() {
                        assert_eq!(
                            super::line_end(&text, pos),
                            naive(&text, pos),
                            "{first} and {second} bytes, {last}, from {pos}"
                        );
                    }
                }
            }
        }
    }
}
