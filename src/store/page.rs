//! One page of a stored object: what of a selection fits a budget, and the
//! exact selection that continues it.
//!
//! Every reader that pages an object (the registry's `spill_read`, MCP
//! resources) reads through [`Store::page`], so their continuations agree:
//! what a page shows plus what its `next` selects is the selection asked
//! for, no byte skipped or repeated. Each front end words the continuation
//! in its own terms (a tool's arguments, a URI).

use std::borrow::Cow;

use super::read::Hold;
use super::{ByteRange, ContentId, LineRange, Selection, Store, StoreError};

/// One page of an object (see [`Store::page`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The bytes shown, as stored. Never a character cut in two; for a
    /// selection of lines, whole lines unless one line alone is longer
    /// than the budget.
    pub data: Vec<u8>,
    /// What `data` is, as a selection of the object: the selection asked
    /// for when the page holds all of it, else the exact lines
    /// ([`Selection::Lines`]) or bytes ([`Selection::Bytes`]) shown.
    pub shown: Selection,
    /// The selection that continues this page; `None` when the page ends
    /// the selection asked for.
    pub next: Option<Selection>,
    /// Where `data` begins in the object, in bytes.
    pub start: u64,
    /// The object's size in bytes.
    pub object_bytes: u64,
    /// The object's lines (a last line without `\n` counts).
    pub object_lines: u64,
}

impl Page {
    /// The page as text, each invalid UTF-8 sequence shown as U+FFFD; at
    /// most the budget the page was read with.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.data)
    }

    /// A page cut short because a single line is longer than the budget:
    /// `shown` and `next` are then bytes, though lines were asked for.
    pub fn is_long_line(&self, asked: &Selection) -> bool {
        !matches!(asked, Selection::Bytes(_)) && matches!(self.shown, Selection::Bytes(_))
    }
}

impl Store {
    /// The first page of `sel` in the object `id` whose text
    /// ([`Page::text`]) is at most `budget` bytes (a budget too small for
    /// the first character shows that character), and the exact selection
    /// that continues it. A selection of bytes is cut at a character
    /// boundary; a selection of lines (or [`Selection::All`]) after its
    /// last whole line, or, when a single line is longer than the budget,
    /// at a character boundary inside it, continued as bytes. The object
    /// is checked against its id before anything is returned, as every
    /// read is; memory stays within the budget (plus the read buffer)
    /// however long the selection.
    ///
    /// # Errors
    ///
    /// Those of [`Store::read`]: [`StoreError::OutOfRange`] when the
    /// selection starts past the object's end.
    pub fn page(&self, id: &ContentId, sel: &Selection, budget: usize) -> Result<Page, StoreError> {
        // A character that crosses the budget is held whole, so that it is
        // judged whole: four more bytes than any page shows.
        let first = self.first_pass(id, sel, Hold::First(budget.saturating_add(4)))?;
        let data = first.held.unwrap_or_default();
        let report = first.report;
        let start = report.start;
        let end = start + first.selected;
        let fit = match fit_lossy(&data, budget) {
            // A budget too small for one character shows one anyway, so
            // that every page moves on.
            0 => data.utf8_chunks().next().map_or(0, |c| {
                c.valid()
                    .chars()
                    .next()
                    .map_or(c.invalid().len(), char::len_utf8)
            }),
            fit => fit,
        };
        let mut page = Page {
            data,
            shown: *sel,
            next: None,
            start,
            object_bytes: report.bytes,
            object_lines: report.lines,
        };
        if fit as u64 == first.selected {
            return Ok(page);
        }
        let whole_lines = match sel {
            Selection::Bytes(_) => None,
            _ => memchr::memrchr(b'\n', &page.data[..fit]).map(|i| i + 1),
        };
        let (shown, next) = match (*sel, whole_lines) {
            (Selection::Bytes(r), _) => {
                let next = r.start() + fit as u64;
                (
                    Selection::Bytes(ByteRange::with_len(r.start(), fit as u64)),
                    Selection::Bytes(range(next, r.end())),
                )
            }
            (_, Some(cut)) => {
                let (first, last) = match *sel {
                    Selection::Lines(r) => (r.first(), r.last()),
                    _ => (1, None),
                };
                let next = first + memchr::memchr_iter(b'\n', &page.data[..cut]).count() as u64;
                page.data.truncate(cut);
                (
                    Selection::Lines(lines(first, Some(next - 1))),
                    Selection::Lines(lines(next, last)),
                )
            }
            (_, None) => {
                let next = start + fit as u64;
                (
                    Selection::Bytes(ByteRange::with_len(start, fit as u64)),
                    Selection::Bytes(range(next, Some(end))),
                )
            }
        };
        page.data.truncate(fit.min(page.data.len()));
        page.shown = shown;
        page.next = Some(next);
        Ok(page)
    }
}

fn range(start: u64, end: Option<u64>) -> ByteRange {
    ByteRange::new(start, end).unwrap_or_else(|_| ByteRange::from(start))
}

fn lines(first: u64, last: Option<u64>) -> LineRange {
    LineRange::new(first, last).unwrap_or_else(|_| LineRange::new(first, None).expect("first >= 1"))
}

/// How many bytes of `data` show as at most `budget` bytes of text, each
/// invalid sequence shown as U+FFFD (three bytes), never a character cut.
fn fit_lossy(data: &[u8], budget: usize) -> usize {
    let (mut shown, mut raw) = (0, 0);
    for chunk in data.utf8_chunks() {
        let valid = chunk.valid();
        if shown + valid.len() > budget {
            let mut cut = budget - shown;
            while !valid.is_char_boundary(cut) {
                cut -= 1;
            }
            return raw + cut;
        }
        shown += valid.len();
        raw += valid.len();
        let bad = chunk.invalid();
        if !bad.is_empty() {
            if shown + '\u{FFFD}'.len_utf8() > budget {
                return raw;
            }
            shown += '\u{FFFD}'.len_utf8();
            raw += bad.len();
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriteOptions;

    #[test]
    fn fit_lossy_counts_replacements_and_never_splits_a_character() {
        assert_eq!(fit_lossy(b"abc", 10), 3);
        assert_eq!(fit_lossy(b"abc", 2), 2);
        // Each invalid byte shows as 3 bytes.
        assert_eq!(fit_lossy(&[0xFF; 10], 9), 3);
        assert_eq!(fit_lossy(&[0xFF; 10], 10), 3);
        // A 4-byte character is never split.
        assert_eq!(fit_lossy("a😀b".as_bytes(), 4), 1);
        assert_eq!(fit_lossy("a😀b".as_bytes(), 5), 5);
        for budget in 0..40 {
            let data = [b"ok \xFF\xFE ".as_slice(), "é😀".as_bytes(), b"\xF0\x9F"].concat();
            let n = fit_lossy(&data, budget);
            assert!(String::from_utf8_lossy(&data[..n]).len() <= budget);
        }
    }

    fn store_with(data: &[u8]) -> (Store, ContentId) {
        let store = Store::in_memory();
        let id = store.put(data, WriteOptions::raw()).unwrap().id;
        (store, id)
    }

    /// Pages through `sel` to its end, checking that the pages join into
    /// exactly the selection and that each fits its budget.
    fn pages(store: &Store, id: &ContentId, sel: Selection, budget: usize) -> Vec<Page> {
        let mut out = Vec::new();
        let mut next = Some(sel);
        while let Some(sel) = next {
            let page = store.page(id, &sel, budget).unwrap();
            assert!(page.text().len() <= budget.max(4), "{:?}", page.shown);
            assert!(
                page.next.is_none() || !page.data.is_empty(),
                "a page that shows nothing must end the selection"
            );
            next = page.next;
            out.push(page);
            assert!(out.len() < 100_000, "paging does not end");
        }
        out
    }

    #[test]
    fn pages_join_into_the_selection_exactly() {
        let mut data = Vec::new();
        for i in 0..400 {
            data.extend_from_slice(format!("line {i} é😀 \u{2603}").as_bytes());
            if i % 7 == 0 {
                data.extend_from_slice(b"\xFF\xFE");
            }
            if i % 50 == 3 {
                data.extend_from_slice(&[b'x'; 300]);
            }
            data.push(b'\n');
        }
        data.extend_from_slice(b"no newline at the end");
        let (store, id) = store_with(&data);
        let all = store.read(&id, &Selection::All).unwrap();
        // Pages of a few bytes, a whole object just over one page (the
        // common case: an output just past its budget), and one page.
        let n = data.len();
        for budget in [0, 1, 3, 16, 61, 100, 257, 1000, n / 2, n - 1, n, 1 << 20] {
            for sel in [
                Selection::All,
                Selection::Lines(LineRange::new(5, Some(300)).unwrap()),
                Selection::Lines(LineRange::new(390, None).unwrap()),
                Selection::Bytes(ByteRange::new(7, Some(9000)).unwrap()),
                Selection::Bytes(ByteRange::from(3)),
            ] {
                let want = store.read(&id, &sel).unwrap();
                let joined: Vec<u8> = pages(&store, &id, sel, budget)
                    .iter()
                    .flat_map(|p| p.data.clone())
                    .collect();
                assert_eq!(joined, want, "budget {budget}, {sel:?}");
                // Each page says where it is.
                for p in pages(&store, &id, sel, budget) {
                    assert_eq!(&all[p.start as usize..][..p.data.len()], &p.data[..]);
                    assert_eq!(p.object_bytes, data.len() as u64);
                }
            }
        }
    }

    #[test]
    fn a_line_selection_is_cut_at_whole_lines_and_a_long_line_as_bytes() {
        let (store, id) = store_with(b"aaaa\nbbbb\ncccccccccccccccccccc\ndd\n");
        let sel = Selection::Lines(LineRange::new(1, None).unwrap());
        let p = store.page(&id, &sel, 12).unwrap();
        assert_eq!(p.data, b"aaaa\nbbbb\n");
        assert_eq!(
            p.shown,
            Selection::Lines(LineRange::new(1, Some(2)).unwrap())
        );
        assert_eq!(
            p.next,
            Some(Selection::Lines(LineRange::new(3, None).unwrap()))
        );
        let long = Selection::Lines(LineRange::new(3, Some(4)).unwrap());
        let p = store.page(&id, &long, 12).unwrap();
        assert!(p.is_long_line(&long));
        assert_eq!(p.data, b"cccccccccccc");
        assert_eq!(p.shown, Selection::Bytes(ByteRange::with_len(10, 12)));
        // The rest of the two lines, as bytes: to the end of line 4.
        assert_eq!(
            p.next,
            Some(Selection::Bytes(ByteRange::new(22, Some(34)).unwrap()))
        );
        let whole = store.page(&id, &long, 100).unwrap();
        assert_eq!((whole.next, whole.shown), (None, long));
        assert!(store
            .page(&id, &Selection::Lines(LineRange::new(9, None).unwrap()), 10)
            .is_err());
    }
}
