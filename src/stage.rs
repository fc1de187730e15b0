//! [`Stage`]: the streaming spill stage, and [`Outcome`], what it returns.

use std::fmt;
use std::io;

use crate::json::{Format, Hint, JsonSketch, JsonStage};
use crate::measure::{count_lines, Measure};
use crate::notice::{one_line, pointer_hint, NoticeTemplates, MAX_ERROR_BYTES};
use crate::offload::Offload;
use crate::outcome::{ContentFormat, Outcome, StoreFailure, TokenCount};
use crate::policy::{OnStoreError, Policy, PolicyError};
use crate::preview::{self, TAIL_CONTEXT};
use crate::render::{self, Parts, Render, Renderer};
use crate::ring::ByteRing;
use crate::store::{Store, StoreError, StoredObject};
use crate::storing::Storing;
use crate::threads::Parallelism;

/// A policy bound to a store, checked once; makes [`Stage`]s.
///
/// # Examples
///
/// ```
/// use spillway::{Policy, Spiller, Store};
/// let dir = tempfile::tempdir().unwrap();
/// let spiller = Spiller::new(Policy::default(), Store::open(dir.path()).unwrap()).unwrap();
/// let small = spiller.apply(b"all good\n").unwrap();
/// assert!(!small.spilled);
/// assert_eq!(small.content, "all good\n");
///
/// let steps: String = (0..10_000).map(|i| format!("step {i}\n")).collect();
/// let big = steps + "error: linker failed\n";
/// let out = spiller.apply(big.as_bytes()).unwrap();
/// assert!(out.spilled && out.content.len() <= 32 * 1024);
/// assert!(out.content.ends_with("error: linker failed\n"));
///
/// // Terminal output reads as a terminal shows it: the progress bar is its
/// // last frame, the colours are gone, repeats fold.
/// let noisy = "\x1b[33mwaiting for the lock\x1b[0m\n".repeat(5) + "10%\r55%\r100%\n";
/// let out = spiller.apply(noisy.as_bytes()).unwrap();
/// assert_eq!(
///     out.content,
///     "waiting for the lock\n[spillway: the line above repeats 4 more times]\n100%\n"
/// );
/// assert!(out.rendered && !out.spilled);
/// ```
#[derive(Clone, Debug)]
pub struct Spiller {
    policy: Policy,
    store: Store,
}

impl Spiller {
    /// Binds `policy` to `store`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::BudgetTooSmall`] when the longest notice, with this
    /// store's object paths in it, does not fit `max_inline_bytes`.
    pub fn new(policy: Policy, store: Store) -> Result<Self, PolicyError> {
        policy.check_fits(store.max_path_len())?;
        Ok(Spiller { policy, store })
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// This spiller with another budget (`max_inline_bytes`), every other
    /// setting and the templates kept: a turn's share, a block's share.
    ///
    /// # Errors
    ///
    /// [`PolicyError::BudgetTooSmall`] below [`Spiller::min_budget`], and
    /// the errors of [`PolicyBuilder::build`](crate::PolicyBuilder::build).
    pub fn with_budget(&self, bytes: usize) -> Result<Spiller, PolicyError> {
        let mut b = self.policy.to_config().builder();
        b.max_inline_bytes(bytes as u64)
            .templates(self.policy.templates().clone());
        Spiller::new(b.build()?, self.store.clone())
    }

    /// This spiller reading its input as `format`, every other setting kept.
    ///
    /// # Errors
    ///
    /// Those of [`PolicyBuilder::build`](crate::PolicyBuilder::build) (none
    /// for a policy that built before).
    pub fn with_format(&self, format: Format) -> Result<Spiller, PolicyError> {
        let mut b = self.policy.to_config().builder();
        b.format(format).templates(self.policy.templates().clone());
        Spiller::new(b.build()?, self.store.clone())
    }

    /// The smallest budget [`Spiller::with_budget`] takes: the longest
    /// notice of this policy's templates, with this store's object paths.
    pub fn min_budget(&self) -> usize {
        self.policy.min_budget(self.store.max_path_len())
    }

    /// A new stage. Costs nothing until it is written to.
    pub fn stage(&self) -> Stage {
        Stage {
            spiller: self.clone(),
            head: Vec::new(),
            spill: None,
            store_elsewhere: false,
            json_elsewhere: false,
        }
    }

    /// Applies the policy to a whole buffer. Gives exactly the outcome of
    /// writing `input` to a [`Stage`] in any chunks and finishing it.
    ///
    /// The whole input is at hand, so a large one over the budget is
    /// stored as [`Store::put`] stores it (written while another thread
    /// hashes it; an existing copy found by the hash is compared with it
    /// and the write dropped), on threads of their own while this one makes
    /// the preview (on a thread of its own too while this one makes a
    /// JSON document's sketch), each reading the input where it is.
    ///
    /// # Errors
    ///
    /// [`FinishError`], only when the policy says
    /// [`OnStoreError::Fail`] and the store failed.
    pub fn apply(&self, input: &[u8]) -> Result<Outcome, FinishError> {
        let policy = &self.policy;
        if input.len() <= policy.max_inline_bytes()
            || (input.len() as u64) < crate::offload::THREAD_AFTER
        {
            let mut stage = self.stage();
            stage.feed(input);
            return stage.finish();
        }
        let kept = &input[..input
            .len()
            .min(usize::try_from(policy.max_spill_bytes()).unwrap_or(usize::MAX))];
        let opts = policy.write_options();
        let budget = self.store.parallelism();
        std::thread::scope(|s| {
            let put = crate::threads::scoped(s, budget, "spillway-put", || {
                self.store.put_whole(kept, opts)
            });
            // A JSON document's sketch is made here, and the stage's own
            // work on a thread of its own: the sketch allocates its nodes
            // one by one, which a thread's own fresh heap grows for a page
            // at a time (a system call each), and the caller's heap has
            // room already. What is not JSON from its first bytes on (most
            // of what `Format::Auto` sees) is told so here, and staged here,
            // as everything is without a thread.
            let mut sketch = (policy.format() != Format::Text)
                .then(|| JsonStage::whole(policy.max_inline_bytes(), input));
            let probe = input.len().min(JSON_PROBE);
            if let Some(j) = sketch.as_mut() {
                j.feed(&input[..probe]);
            }
            let (store_elsewhere, json_elsewhere) = (put.is_ok(), sketch.is_some());
            let staged = move || {
                let mut stage = self.stage();
                stage.store_elsewhere = store_elsewhere;
                stage.json_elsewhere = json_elsewhere;
                stage.feed(input);
                stage
            };
            let sketched = move |mut j: JsonStage<_>| {
                j.feed(&input[probe..]);
                j.finish()
            };
            let thread = match &sketch {
                Some(j) if j.alive() => {
                    crate::threads::scoped(s, budget, "spillway-stage", staged).ok()
                }
                _ => None,
            };
            let (stage, json) = match thread {
                Some(h) => {
                    let json = sketch.map(sketched);
                    (h.join(), json)
                }
                None => (staged(), sketch.map(sketched)),
            };
            let stored = put.ok().map(|h| h.join());
            stage.finish_with(stored, json)
        })
    }
}

/// The first bytes of a whole input [`Spiller::apply`] reads as JSON before
/// it decides where the stage's own work runs: a document that is not JSON
/// is most often told so by its first byte.
const JSON_PROBE: usize = 64 << 10;

/// `finish()` failed because the store failed and the policy says
/// [`OnStoreError::Fail`]. The bounded preview is handed back all the same.
#[derive(Debug)]
pub struct FinishError {
    outcome: Box<Outcome>,
    error: StoreError,
}

impl FinishError {
    /// The bounded preview the stage would have returned.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Takes the preview out.
    pub fn into_outcome(self) -> Outcome {
        *self.outcome
    }

    /// The store's error.
    pub fn store_error(&self) -> &StoreError {
        &self.error
    }
}

impl fmt::Display for FinishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not store the full output: {}", self.error)
    }
}

impl std::error::Error for FinishError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Chunks are measured and handed to the store in pieces of this size, so
/// each piece is counted, hashed and written while it is still in cache.
const PIECE: usize = 256 << 10;

/// The state once the input is over budget.
struct Spilling {
    measure: Measure,
    tail: ByteRing,
    /// The object being written, or why the store failed (the stream is
    /// still measured to its end); `None` when the input is stored
    /// elsewhere ([`Spiller::apply`]).
    storing: Option<Storing>,
    stored: u64,
    max_stored: u64,
    /// The JSON preview's state, when the policy reads JSON (on a thread
    /// of its own past the first MiB).
    json: Option<Offload<JsonStage>>,
    /// The terminal renderer, when the policy renders.
    render: Option<Renderer>,
    /// Where the JSON preview's thread comes from.
    budget: Parallelism,
}

impl Spilling {
    /// Feeds a chunk in cache-sized pieces: each piece is measured, hashed
    /// and written while it is still in cache.
    fn feed(&mut self, chunk: &[u8]) {
        self.feed_consumers(chunk, true);
    }

    /// [`feed`](Self::feed) for a chunk in a buffer of its own, which the
    /// salient scan's thread may take as it is; gives back a buffer to
    /// read the next bytes into.
    fn feed_buf(&mut self, buf: Vec<u8>) -> Vec<u8> {
        self.feed_consumers(&buf, false);
        match self.render.as_mut() {
            Some(r) => r.scan_buf(buf),
            None => buf,
        }
    }

    /// Feeds a chunk to every consumer, the salient scan too if `scan`.
    fn feed_consumers(&mut self, chunk: &[u8], scan: bool) {
        self.tail.push(chunk);
        if let Some(j) = self.json.take() {
            self.json = Some(j.feed(chunk, self.measure.bytes(), &self.budget));
        }
        for piece in chunk.chunks(PIECE) {
            self.feed_piece(piece, scan);
        }
    }

    fn feed_piece(&mut self, chunk: &[u8], scan: bool) {
        self.measure.feed(chunk);
        if self.measure.has_nul() && self.render.is_some() {
            // Binary: no preview shows its rendered text, so the rest is
            // neither rendered nor scanned.
            self.render = None;
        }
        if let Some(r) = self.render.as_mut() {
            r.render(chunk);
            if scan {
                r.scan(chunk);
            }
        }
        let room = self.max_stored - self.stored;
        let part = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if part.is_empty() {
            return;
        }
        if let Some(storing) = self.storing.as_mut() {
            storing.write(part);
            self.stored += part.len() as u64;
        }
    }
}

/// The streaming spill stage: write the output into it, then
/// [`finish`](Stage::finish) it.
///
/// Until the input passes the budget it is kept in memory. Past it, the
/// stage streams the input to a temp file in the store (hashing and
/// compressing as it goes), keeping only the first `max_inline_bytes` and a
/// rolling window of the last ones: memory stays bounded by twice the budget
/// plus fixed buffers (about 1 MiB), however long the input; with
/// [`Render::Terminal`] the window holds three budgets and 64 KiB more (the
/// tail is rendered from it at the end), and from the bytes that reach its
/// first MiB the salient scan runs on a thread of its own, with up to 5 MiB
/// queued for it.
///
/// Writes never fail: a store error is remembered and reported by `finish`.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use spillway::{Policy, Spiller, Store};
/// let dir = tempfile::tempdir().unwrap();
/// let policy = Policy::builder().max_inline_bytes(1024).build().unwrap();
/// let spiller = Spiller::new(policy, Store::open(dir.path()).unwrap()).unwrap();
/// let mut stage = spiller.stage();
/// for i in 0..1000 {
///     writeln!(stage, "line {i}").unwrap();
/// }
/// let outcome = stage.finish().unwrap();
/// assert!(outcome.content.len() <= 1024);
/// assert!(outcome.content.ends_with("line 999\n"));
/// let spill = outcome.spill.unwrap();
/// assert_eq!(spill.bytes, outcome.total_bytes);
/// ```
pub struct Stage {
    spiller: Spiller,
    head: Vec<u8>,
    spill: Option<Spilling>,
    /// The input is stored by its caller ([`Spiller::apply`]).
    store_elsewhere: bool,
    /// The input's JSON sketch is made by its caller ([`Spiller::apply`]).
    json_elsewhere: bool,
}

impl fmt::Debug for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stage")
            .field("buffered", &self.head.len())
            .field("spilling", &self.spill.is_some())
            .finish()
    }
}

impl io::Write for Stage {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.feed(buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.feed(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Stage {
    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        match &self.spill {
            Some(s) => s.measure.bytes(),
            None => self.head.len() as u64,
        }
    }

    /// The last byte written so far, if any: a renderer that appends a
    /// status line asks whether it needs a newline first.
    pub fn last_byte(&self) -> Option<u8> {
        match &self.spill {
            Some(s) => s.tail.last(),
            None => self.head.last().copied(),
        }
    }

    /// Feeds the next chunk of the input from a buffer of its own, and
    /// gives back a buffer to read the next chunk into, of any length, its
    /// bytes stale (`buf` itself, or one the stage is done with). The
    /// same as [`feed`](Self::feed), but from a stream's first MiB on its
    /// salient scan's thread takes `buf` as it is instead of a copy of it:
    /// a reader of a long stream (`spillway apply`) saves a copy of every
    /// byte by reading into the buffers this gives back. At most a few
    /// buffers are held at a time.
    pub fn feed_buf(&mut self, buf: Vec<u8>) -> Vec<u8> {
        match self.spill.as_mut() {
            Some(sp) => sp.feed_buf(buf),
            None => {
                self.feed(&buf);
                buf
            }
        }
    }

    /// Feeds the next chunk of the input.
    pub fn feed(&mut self, data: &[u8]) {
        if let Some(sp) = self.spill.as_mut() {
            sp.feed(data);
            return;
        }
        let cap = self.spiller.policy.max_inline_bytes();
        if self.head.len() + data.len() <= cap {
            self.head.extend_from_slice(data);
            return;
        }
        let take = cap - self.head.len();
        self.head.extend_from_slice(&data[..take]);
        let policy = &self.spiller.policy;
        let terminal = policy.render() == Render::Terminal;
        let mut sp = Spilling {
            measure: Measure::new(),
            // The terminal render's tail is rendered from the last raw
            // bytes, at the end.
            tail: ByteRing::new(if terminal {
                render::raw_window(cap)
            } else {
                cap + TAIL_CONTEXT
            }),
            storing: (!self.store_elsewhere)
                .then(|| Storing::start(&self.spiller.store, policy.write_options())),
            stored: 0,
            max_stored: policy.max_spill_bytes(),
            json: (policy.format() != Format::Text && !self.json_elsewhere)
                .then(|| Offload::Here(JsonStage::new(cap))),
            budget: self.spiller.store.parallelism().clone(),
            render: terminal.then(|| {
                Renderer::new(
                    cap,
                    policy.salient().matcher(),
                    self.spiller.store.parallelism().clone(),
                )
            }),
        };
        sp.feed(&self.head);
        sp.feed(&data[take..]);
        self.spill = Some(sp);
    }

    /// Finishes the stage: publishes the stored object (if any) and returns
    /// the outcome. Under budget, valid UTF-8 and without NUL bytes, the
    /// content is the input unchanged and nothing touches the disk.
    ///
    /// # Errors
    ///
    /// [`FinishError`], only when the store failed and the policy says
    /// [`OnStoreError::Fail`]. It carries the bounded preview.
    pub fn finish(self) -> Result<Outcome, FinishError> {
        self.finish_with(None, None)
    }

    /// [`finish`](Self::finish), with what the caller stored when the stage
    /// stores elsewhere, and the sketch it made when it makes it.
    fn finish_with(
        self,
        elsewhere: Option<Result<StoredObject, StoreError>>,
        json_elsewhere: Option<Result<JsonSketch, String>>,
    ) -> Result<Outcome, FinishError> {
        let Stage {
            spiller,
            head,
            spill,
            store_elsewhere: _,
            json_elsewhere: _,
        } = self;
        let policy = &spiller.policy;
        let terminal = policy.render() == Render::Terminal;
        match spill {
            None => {
                let lines = count_lines(&head);
                let binary = memchr::memchr(0, &head).is_some();
                let valid = std::str::from_utf8(&head).is_ok();
                // The document is scanned once: what it says decides the
                // render below, and its sketch makes the JSON preview.
                let json = (policy.format() != Format::Text).then(|| {
                    let mut j = JsonStage::new(policy.max_inline_bytes());
                    j.feed(&head);
                    j.finish()
                });
                // A JSON document is shown as written (it holds no escapes;
                // folding its repeated lines would break it).
                let json_doc = valid && json.as_ref().is_some_and(|j| j.is_ok());
                let mut rendered = None;
                let head = if !binary && terminal && !json_doc {
                    let parts = render::render_all(
                        &head,
                        policy.max_inline_bytes(),
                        policy.salient().matcher(),
                    );
                    let changed = parts.changed() || !valid;
                    if let Some(tokens) = whole_fits(policy, &parts) {
                        let total = head.len() as u64;
                        return Ok(whole(
                            policy,
                            parts.head.text,
                            changed,
                            lines,
                            total,
                            valid,
                            tokens,
                        ));
                    }
                    rendered = Some((parts, changed));
                    head
                } else if binary {
                    head
                } else {
                    // Valid UTF-8 moves into the content without a copy.
                    match String::from_utf8(head) {
                        Ok(content) => match fits(policy, &content) {
                            Some(tokens) => {
                                let len = content.len() as u64;
                                let mut o = inline(content, lines, len);
                                set_tokens(&mut o, policy, tokens);
                                return Ok(o);
                            }
                            None => content.into_bytes(),
                        },
                        Err(e) => e.into_bytes(),
                    }
                };
                let stored = spiller.store.put(&head, policy.write_options());
                let facts = Facts {
                    total_bytes: head.len() as u64,
                    total_newlines: bytecount::count(&head, b'\n') as u64,
                    total_lines: lines,
                    valid_utf8: valid,
                    binary,
                };
                conclude(policy, &facts, &head, &head, stored, json, rendered)
            }
            Some(sp) => {
                let stored = match (sp.storing, elsewhere) {
                    (Some(storing), _) => storing.finish(&spiller.store),
                    (None, Some(stored)) => stored,
                    // `apply` gives what it stored whenever it stores it.
                    (None, None) => {
                        unreachable!("a stage storing elsewhere is told what was stored")
                    }
                };
                let facts = Facts {
                    total_bytes: sp.measure.bytes(),
                    total_newlines: sp.measure.newlines(),
                    total_lines: sp.measure.lines(),
                    valid_utf8: sp.measure.valid_utf8(),
                    binary: sp.measure.has_nul(),
                };
                let tail = sp.tail.into_vec();
                let rendered = sp.render.map(|r| {
                    let parts = r.finish(&tail, facts.total_newlines);
                    let changed = parts.changed() || !facts.valid_utf8;
                    (parts, changed)
                });
                let json = match sp.json {
                    Some(j) => Some(j.into_inner().finish()),
                    None => json_elsewhere,
                };
                conclude(policy, &facts, &head, &tail, stored, json, rendered)
            }
        }
    }
}

/// The token count of the rendered text, when all of it was rendered and
/// it fits the policy's caps whole: then nothing is omitted.
fn whole_fits(policy: &Policy, parts: &Parts) -> Option<Option<u64>> {
    if !parts.whole {
        return None;
    }
    fits(policy, &parts.head.text)
}

/// The outcome whose content is the whole rendered `text`.
fn whole(
    policy: &Policy,
    text: String,
    changed: bool,
    total_lines: u64,
    total_bytes: u64,
    valid_utf8: bool,
    tokens: Option<u64>,
) -> Outcome {
    let mut o = inline(text, total_lines, total_bytes);
    o.rendered = changed;
    o.invalid_utf8 = !valid_utf8;
    set_tokens(&mut o, policy, tokens);
    o
}

/// Whether `content` fits the policy's byte, line and token caps, and its
/// token count when the policy has a token budget.
fn fits(policy: &Policy, content: &str) -> Option<Option<u64>> {
    if content.len() > policy.max_inline_bytes()
        || policy
            .max_inline_lines()
            .is_some_and(|l| count_lines(content.as_bytes()) > l)
    {
        return None;
    }
    match policy.max_inline_tokens() {
        None => Some(None),
        Some(max) => {
            let n = policy.tokenizer().count(content) as u64;
            (n <= max).then_some(Some(n))
        }
    }
}

fn set_tokens(o: &mut Outcome, policy: &Policy, tokens: Option<u64>) {
    o.tokens = tokens.map(|n| TokenCount::new(n, policy.tokenizer()));
}

fn inline(content: String, lines: u64, total_bytes: u64) -> Outcome {
    Outcome {
        spilled: false,
        total_bytes,
        total_lines: lines,
        head_bytes: content.len(),
        tail_bytes: 0,
        omitted_bytes: 0,
        omitted_lines: 0,
        omitted_range: None,
        invalid_utf8: false,
        binary: false,
        spill: None,
        store_error: None,
        format: ContentFormat::TEXT,
        rendered: false,
        salient_lines: Vec::new(),
        tokens: None,
        content,
    }
}

/// A JSON marker's read hint, from the policy's `pointer` template.
struct PointerHint<'a> {
    templates: &'a NoticeTemplates,
    location: Result<(&'a str, &'a str), &'a str>,
    /// How much of the input the object holds.
    stored: u64,
}

impl Hint for PointerHint<'_> {
    fn hint(&self, pointer: &str, end: u64) -> Result<String, String> {
        if end > self.stored && self.location.is_ok() {
            return Err(format!(
                "it lies past the first {} bytes, which are all that was stored",
                self.stored
            ));
        }
        pointer_hint(self.templates, self.location, pointer)
    }
}

struct Facts {
    total_bytes: u64,
    total_newlines: u64,
    total_lines: u64,
    valid_utf8: bool,
    binary: bool,
}

/// What the preview is made from, decided once per output. Each kind fits
/// any byte budget (JSON falls back to the text it stands beside when the
/// budget cannot hold a JSON preview).
enum Source<'a> {
    /// A JSON preview of the document's sketch, else `text`.
    Json {
        sketch: JsonSketch,
        hint: PointerHint<'a>,
        text: Text<'a>,
    },
    /// A text preview.
    Text(Text<'a>),
}

/// A text preview: of the rendered text, or of the raw bytes.
enum Text<'a> {
    Rendered(preview::Rendered<'a>),
    Raw(preview::Input<'a>),
}

/// A preview that fits one budget.
struct Fitted {
    preview: preview::Preview,
    salient_lines: Vec<u64>,
    is_json: bool,
    /// Why a JSON preview did not fit, when it was tried and did not.
    json_error: Option<String>,
}

impl Source<'_> {
    fn fit(&self, bytes: usize, policy: &Policy, place: &preview::Place<'_>) -> Fitted {
        let (text, json_error) = match self {
            Source::Json { sketch, hint, text } => {
                match sketch.fit(bytes, policy.head_percent(), hint) {
                    Ok(j) => {
                        return Fitted {
                            preview: preview::Preview {
                                content: j.content,
                                head_bytes: 0,
                                tail_bytes: 0,
                                omitted_bytes: j.elided_bytes,
                                omitted_lines: 0,
                                omitted_range: None,
                            },
                            salient_lines: Vec::new(),
                            is_json: true,
                            json_error: None,
                        }
                    }
                    Err(e) => (text, Some(e)),
                }
            }
            Source::Text(text) => (text, None),
        };
        let limits = preview::Limits {
            bytes,
            lines: policy.max_inline_lines(),
            head_percent: policy.head_percent(),
            templates: policy.templates(),
        };
        let (preview, salient_lines) = match text {
            Text::Rendered(r) => preview::build_rendered(r, &limits, place),
            Text::Raw(input) => (preview::build(input, &limits, place), Vec::new()),
        };
        Fitted {
            preview,
            salient_lines,
            is_json: false,
            json_error,
        }
    }
}

/// The preview of `source` within the policy's byte budget and, with a
/// token budget, within that too: the byte budget shrinks in proportion
/// until the tokens fit (each step counts only a preview, so the cost
/// follows the budget). Returns the last JSON error any step met, and the
/// token count.
fn fit_tokens(
    source: &Source<'_>,
    policy: &Policy,
    place: &preview::Place<'_>,
) -> (Fitted, Option<String>, Option<u64>) {
    let mut bytes = policy.max_inline_bytes();
    let mut fitted = source.fit(bytes, policy, place);
    let mut json_error = fitted.json_error.take();
    let Some(max) = policy.max_inline_tokens() else {
        return (fitted, json_error, None);
    };
    let tk = policy.tokenizer();
    let mut n = tk.count(&fitted.preview.content) as u64;
    for _ in 0..16 {
        if n <= max || bytes <= 1 {
            break;
        }
        let len = fitted.preview.content.len().min(bytes);
        let scaled = (len as u128 * u128::from(max) / u128::from(n)) as usize;
        bytes = (scaled * 97 / 100).min(bytes - 1);
        fitted = source.fit(bytes, policy, place);
        if let Some(e) = fitted.json_error.take() {
            json_error = Some(e);
        }
        n = tk.count(&fitted.preview.content) as u64;
    }
    (fitted, json_error, Some(n))
}

fn conclude(
    policy: &Policy,
    f: &Facts,
    head: &[u8],
    tail: &[u8],
    stored: Result<StoredObject, StoreError>,
    json: Option<Result<JsonSketch, String>>,
    rendered: Option<(Parts, bool)>,
) -> Result<Outcome, FinishError> {
    let id_text;
    let path_text;
    let error_text;
    let (location, stored_bytes, unstored_bytes) = match &stored {
        Ok(s) => {
            id_text = s.id.to_string();
            path_text = one_line(&s.path.to_string_lossy(), usize::MAX);
            (
                Ok((id_text.as_str(), path_text.as_str())),
                s.bytes,
                f.total_bytes - s.bytes,
            )
        }
        Err(e) => {
            error_text = one_line(&e.to_string(), MAX_ERROR_BYTES);
            (Err(error_text.as_str()), 0, 0)
        }
    };
    let spill = stored.as_ref().ok().map(|s| StoredObject {
        truncated: s.bytes < f.total_bytes,
        ..s.clone()
    });
    let store_error = stored.as_ref().err().map(StoreFailure::of);
    let (sketch, mut json_error) = match json {
        None => (None, None),
        Some(_) if f.binary || !f.valid_utf8 => (
            None,
            Some("not one JSON document (not UTF-8 text)".to_owned()),
        ),
        Some(Ok(s)) => (Some(s), None),
        Some(Err(e)) => (None, Some(e)),
    };
    // A JSON document is shown as written, never rendered (it holds no
    // escapes, and folding its repeated lines would break it).
    let rendered = rendered.filter(|_| !f.binary && sketch.is_none());
    let rendered_changed = rendered.as_ref().is_some_and(|r| r.1);

    // A rendered text that fits whole: nothing is omitted (the raw input,
    // too long to keep in memory, was stored all the same).
    if let Some((parts, changed)) = &rendered {
        if let Some(tokens) = whole_fits(policy, parts) {
            let text = parts.head.text.clone();
            let mut o = whole(
                policy,
                text,
                *changed,
                f.total_lines,
                f.total_bytes,
                f.valid_utf8,
                tokens,
            );
            o.spill = spill;
            o.store_error = store_error;
            return failed_or(o, policy, stored);
        }
    }

    let place = preview::Place {
        location,
        stored_bytes,
        unstored_bytes,
    };
    let matcher = policy.salient().matcher();
    let text = match &rendered {
        Some((parts, _)) => Text::Rendered(preview::Rendered {
            parts,
            total_bytes: f.total_bytes,
            total_lines: f.total_lines,
            valid_utf8: f.valid_utf8,
            matcher: matcher.as_ref(),
            salient_percent: policy.salient_percent(),
        }),
        None => Text::Raw(preview::Input {
            head,
            tail,
            tail_start: f.total_bytes - tail.len() as u64,
            total_bytes: f.total_bytes,
            total_newlines: f.total_newlines,
            total_lines: f.total_lines,
            valid_utf8: f.valid_utf8,
            binary: f.binary,
        }),
    };
    let source = match sketch {
        Some(sketch) => Source::Json {
            sketch,
            hint: PointerHint {
                templates: policy.templates(),
                location,
                stored: stored_bytes,
            },
            text,
        },
        None => Source::Text(text),
    };
    let (fitted, fit_error, content_tokens) = fit_tokens(&source, policy, &place);
    if fit_error.is_some() {
        json_error = fit_error;
    }
    let Fitted {
        preview: p,
        salient_lines,
        is_json,
        ..
    } = fitted;
    // Why the text preview was given is said only when JSON was asked for.
    if is_json || policy.format() != Format::Json {
        json_error = None;
    }
    let outcome = Outcome {
        spilled: true,
        content: p.content,
        total_bytes: f.total_bytes,
        total_lines: f.total_lines,
        head_bytes: p.head_bytes,
        tail_bytes: p.tail_bytes,
        omitted_bytes: p.omitted_bytes,
        omitted_lines: p.omitted_lines,
        omitted_range: p.omitted_range.map(|(a, b)| [a, b]),
        invalid_utf8: !f.valid_utf8,
        binary: f.binary,
        spill,
        store_error,
        format: if is_json {
            ContentFormat::Json
        } else {
            ContentFormat::Text { json_error }
        },
        rendered: rendered_changed && !is_json,
        salient_lines,
        tokens: content_tokens.map(|n| TokenCount::new(n, policy.tokenizer())),
    };
    failed_or(outcome, policy, stored)
}

/// The outcome, or, when the store failed and the policy says fail, the
/// error that hands it back.
fn failed_or(
    outcome: Outcome,
    policy: &Policy,
    stored: Result<StoredObject, StoreError>,
) -> Result<Outcome, FinishError> {
    match stored {
        Err(error) if policy.on_store_error() == OnStoreError::Fail => Err(FinishError {
            outcome: Box::new(outcome),
            error,
        }),
        _ => Ok(outcome),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_budget_is_exactly_what_with_budget_takes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // A template that prints the path: the store's path length counts.
        let templates = crate::NoticeTemplates {
            stored: "see {path}".parse().unwrap(),
            ..Default::default()
        };
        for templates in [crate::NoticeTemplates::default(), templates] {
            let policy = Policy::builder().templates(templates).build().unwrap();
            let sp = Spiller::new(policy, store.clone()).unwrap();
            let least = sp.min_budget();
            assert!(least > 0);
            let narrow = sp.with_budget(least).unwrap();
            assert_eq!(narrow.policy().max_inline_bytes(), least);
            assert_eq!(narrow.policy().templates(), sp.policy().templates());
            assert!(sp.with_budget(least - 1).is_err());
            let json = sp.with_format(Format::Json).unwrap();
            assert_eq!(json.policy().format(), Format::Json);
            assert_eq!(
                json.policy().max_inline_bytes(),
                sp.policy().max_inline_bytes()
            );
        }
    }

    /// Past a NUL byte a stream is binary, and no preview shows its
    /// rendered text: the rest is neither rendered nor scanned, and the
    /// outcome is the one a stage that rendered everything gives.
    #[test]
    fn a_binary_stream_is_not_rendered_past_its_first_nul() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let policy = Policy::builder().max_inline_bytes(4096).build().unwrap();
        let sp = Spiller::new(policy, store).unwrap();
        let mut input = Vec::new();
        for i in 0..40_000 {
            input.extend_from_slice(format!("step {i}: error: failed at {i}\n").as_bytes());
        }
        input.extend_from_slice(b"\0\x01\x07\n");
        input.extend_from_slice(&input.clone()[..200_000]);
        let mut stage = sp.stage();
        let nul = input.iter().position(|&b| b == 0).unwrap();
        stage.feed(&input[..nul]);
        assert!(stage.spill.as_ref().unwrap().render.is_some());
        stage.feed(&input[nul..]);
        assert!(stage.spill.as_ref().unwrap().render.is_none());
        let streamed = stage.finish().unwrap();
        assert!(
            streamed.content.contains("binary output"),
            "{}",
            streamed.content
        );
        assert!(!streamed.rendered);
        assert_eq!(streamed.content, sp.apply(&input).unwrap().content);
        let raw = Spiller::new(
            Policy::builder()
                .max_inline_bytes(4096)
                .render(Render::Raw)
                .build()
                .unwrap(),
            sp.store().clone(),
        )
        .unwrap();
        assert_eq!(streamed.content, raw.apply(&input).unwrap().content);
        // Just over the budget, the common case: the same, streamed in
        // pieces, in buffers and whole.
        for len in [4097, 5000, 8192] {
            let mut input: Vec<u8> = input[..len - 3].to_vec();
            input.extend_from_slice(b"\0x\n");
            let whole = sp.apply(&input).unwrap();
            assert!(whole.content.contains("binary output"), "{len}");
            let mut stage = sp.stage();
            for piece in input.chunks(1000) {
                stage.feed(piece);
            }
            assert_eq!(stage.finish().unwrap().content, whole.content, "{len}");
            let mut stage = sp.stage();
            for piece in input.chunks(3000) {
                stage.feed_buf(piece.to_vec());
            }
            assert_eq!(stage.finish().unwrap().content, whole.content, "{len}");
            assert_eq!(raw.apply(&input).unwrap().content, whole.content, "{len}");
        }
    }

    #[test]
    fn compression_names() {
        use crate::policy::Compression;
        assert_eq!(Compression::None.name(), "none");
        assert_eq!(Compression::Zstd { level: 3 }.name(), "zstd");
    }
}
