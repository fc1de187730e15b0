//! [`Policy`]: the budget and the rules a stage applies, built and validated
//! once.
//!
//! A policy is made with [`Policy::builder`] or deserialized from a
//! [`PolicyConfig`] (TOML, JSON, anything serde reads). Either way
//! [`PolicyBuilder::build`] checks every value and returns a
//! [`PolicyError`] that names the bad one; a `Policy` that exists is valid.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::json::Format;
use crate::notice::{self, NoticeTemplates, ReadHint, Template, TemplateError};
use crate::render::Render;
use crate::salient::{SalientError, SalientPattern, SalientPatterns, DEFAULT_SALIENT_PERCENT};
pub use crate::store::Durability;
use crate::store::{Encoding, WriteOptions};
use crate::tokens::Tokenizer;
use crate::units::ByteSize;

/// The largest `max_inline_bytes` a policy accepts: 64 MiB.
pub const MAX_INLINE_BYTES_LIMIT: usize = 64 << 20;
/// The default `max_inline_bytes`: 32 KiB, about 8,000 tokens of English.
pub const DEFAULT_MAX_INLINE_BYTES: usize = 32 << 10;
/// The default share of the preview given to the head, in percent. The tail
/// gets the rest, and whatever the head leaves unused: errors are usually at
/// the end.
pub const DEFAULT_HEAD_PERCENT: u8 = 30;
/// The largest `max_spill_bytes` a policy accepts: 16 GiB, the most any
/// object may hold (see [`MAX_OBJECT_BYTES`](crate::store::MAX_OBJECT_BYTES)).
pub const MAX_SPILL_BYTES_LIMIT: u64 = crate::store::MAX_OBJECT_BYTES;
/// The default `max_spill_bytes`: 64 MiB.
pub const DEFAULT_MAX_SPILL_BYTES: u64 = 64 << 20;
/// The default zstd level.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// How stored objects are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Objects hold the exact bytes.
    None,
    /// Objects are one zstd frame (plus a size trailer), at this level.
    Zstd {
        /// The zstd level, 1 to 22.
        level: i32,
    },
}

impl Compression {
    /// `"none"` or `"zstd"`, as used in JSON output and file names.
    pub fn name(self) -> &'static str {
        self.encoding().name()
    }

    /// The store encoding of objects written with this setting.
    pub fn encoding(self) -> Encoding {
        match self {
            Compression::None => Encoding::Raw,
            Compression::Zstd { .. } => Encoding::Zstd,
        }
    }

    /// The store's write settings for this compression and `durability`.
    pub fn write_options(self, durability: Durability) -> WriteOptions {
        match self {
            Compression::None => WriteOptions::raw(),
            Compression::Zstd { level } => WriteOptions::zstd(level),
        }
        .durability(durability)
    }
}

impl Serialize for Compression {
    /// As its [`name`](Compression::name): an object's compression, not the
    /// level it was written at.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a stage does when the store cannot save an over-budget output (disk
/// full, no permission, read-only store).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OnStoreError {
    /// Still return a bounded preview whose notice says the full output could
    /// not be saved, and why. The tool call does not fail. The default.
    #[default]
    Preview,
    /// Fail `finish()` with [`FinishError`](crate::FinishError), which still
    /// hands back that bounded preview.
    Fail,
}

/// Why a policy could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_inline_bytes` is smaller than the longest notice it must hold.
    BudgetTooSmall {
        /// The budget asked for.
        got: u64,
        /// The smallest budget that fits every notice.
        needed: u64,
        /// Whether the notice also prints the store's object paths, which
        /// `needed` does not count yet: the policy was checked without a
        /// store ([`Spiller::new`](crate::Spiller::new) checks with one and
        /// counts them).
        plus_path: bool,
    },
    /// `max_inline_bytes` is above [`MAX_INLINE_BYTES_LIMIT`].
    BudgetTooLarge {
        /// The budget asked for.
        got: u64,
    },
    /// `max_inline_lines` is smaller than the notice's own line count.
    LinesTooSmall {
        /// The cap asked for.
        got: u64,
        /// The notice's line count.
        needed: u64,
    },
    /// `head_percent` is above 100.
    HeadPercent(u64),
    /// `max_spill_bytes` is 0.
    SpillCeilingZero,
    /// `max_spill_bytes` is above [`MAX_SPILL_BYTES_LIMIT`].
    SpillCeilingTooLarge {
        /// The ceiling asked for.
        got: u64,
    },
    /// The zstd level is outside the range the linked zstd accepts.
    ZstdLevel {
        /// The level asked for.
        got: i32,
        /// The smallest level accepted.
        min: i32,
        /// The largest level accepted.
        max: i32,
    },
    /// A zstd level was given while compression is `none`.
    LevelWithoutZstd,
    /// `max_inline_tokens` is smaller than the longest notice, in tokens.
    TokensTooSmall {
        /// The budget asked for.
        got: u64,
        /// The smallest token budget that fits every notice.
        needed: u64,
    },
    /// A token budget names a vocabulary this build does not carry (the
    /// `tokenizers` feature is off); `approx` needs none.
    TokenizerUnavailable(Tokenizer),
    /// `salient_percent` is above 100.
    SalientPercent(u64),
    /// A salient pattern does not compile.
    Salient(SalientError),
    /// A notice template is malformed.
    Template {
        /// Which template: `stored` or `pointer` when one of them is wrong, or
        /// `stored/unsaved/pointer` when they are wrong together (a location
        /// placeholder inside another, a pointer outside the pointer template).
        which: &'static str,
        /// What is wrong with it.
        error: TemplateError,
    },
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::BudgetTooSmall {
                got,
                needed,
                plus_path: false,
            } => write!(
                f,
                "max_inline_bytes is {got}, but the notice alone can take {needed} bytes: use at least {needed}"
            ),
            PolicyError::BudgetTooSmall { got, needed, .. } => write!(
                f,
                "max_inline_bytes is {got}, but the notice alone can take {needed} bytes plus the length of an object path, which its templates print: use at least {needed} plus that length"
            ),
            PolicyError::BudgetTooLarge { got } => write!(
                f,
                "max_inline_bytes is {got}, above the limit of {MAX_INLINE_BYTES_LIMIT} (64 MiB)"
            ),
            PolicyError::LinesTooSmall { got, needed } => write!(
                f,
                "max_inline_lines is {got}, but the notice alone takes {needed} line(s)"
            ),
            PolicyError::HeadPercent(p) => {
                write!(f, "head_percent is {p}, but it must be between 0 and 100")
            }
            PolicyError::SpillCeilingZero => {
                f.write_str("max_spill_bytes is 0: it must be at least 1 byte")
            }
            PolicyError::SpillCeilingTooLarge { got } => write!(
                f,
                "max_spill_bytes is {got}, above the limit of {MAX_SPILL_BYTES_LIMIT} (16 GiB)"
            ),
            PolicyError::ZstdLevel { got, min, max } => {
                write!(f, "zstd level {got} is outside {min}..={max}")
            }
            PolicyError::LevelWithoutZstd => {
                f.write_str("a zstd level was given but compression is none")
            }
            PolicyError::Template { which, error } => {
                write!(f, "notice template `{which}`: {error}")
            }
            PolicyError::TokenizerUnavailable(t) => write!(
                f,
                "tokenizer {t} is not built in (spillway was built without its `tokenizers` feature): use approx"
            ),
            PolicyError::TokensTooSmall { got, needed } => write!(
                f,
                "max_inline_tokens is {got}, but the notice alone can take {needed} tokens: use at least {needed}"
            ),
            PolicyError::SalientPercent(p) => {
                write!(f, "salient_percent is {p}, but it must be between 0 and 100")
            }
            PolicyError::Salient(e) => e.fmt(f),
        }
    }
}

impl PolicyError {
    /// Whether this is a budget too small for the notice
    /// ([`BudgetTooSmall`](Self::BudgetTooSmall),
    /// [`LinesTooSmall`](Self::LinesTooSmall) or
    /// [`TokensTooSmall`](Self::TokensTooSmall)): the smallest budget that
    /// works depends on the store, whose name and paths the notice may
    /// print, so [`PolicyBuilder::build_for_store`] gives the number to use.
    pub fn is_budget_too_small(&self) -> bool {
        matches!(
            self,
            PolicyError::BudgetTooSmall { .. }
                | PolicyError::LinesTooSmall { .. }
                | PolicyError::TokensTooSmall { .. }
        )
    }
}

impl std::error::Error for PolicyError {}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Config {
    max_inline_bytes: usize,
    max_inline_lines: Option<u64>,
    head_percent: u8,
    max_spill_bytes: u64,
    compression: Compression,
    on_store_error: OnStoreError,
    durability: Durability,
    format: Format,
    render: Render,
    salient: SalientPatterns,
    salient_percent: u8,
    max_inline_tokens: Option<u64>,
    tokenizer: Tokenizer,
    templates: NoticeTemplates,
}

/// A validated spill policy. Cheap to clone.
///
/// # Examples
///
/// ```
/// use spillway::{Compression, Policy};
/// let policy = Policy::builder()
///     .max_inline_bytes(16 * 1024)
///     .max_inline_lines(Some(400))
///     .head_percent(20)
///     .compression(Compression::Zstd { level: 3 })
///     .build()
///     .unwrap();
/// assert_eq!(policy.max_inline_bytes(), 16 * 1024);
///
/// let err = Policy::builder().max_inline_bytes(10).build().unwrap_err();
/// assert!(err.to_string().contains("use at least"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy(Arc<Config>);

impl Default for Policy {
    /// The default policy (see each [`PolicyBuilder`] setter for its default).
    fn default() -> Self {
        match PolicyBuilder::new().build() {
            Ok(p) => p,
            // The defaults are constants covered by tests.
            Err(e) => panic!("the default policy is invalid: {e}"),
        }
    }
}

impl Policy {
    /// A builder that starts from the defaults.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::new()
    }

    /// The cap on the model-facing text, in UTF-8 bytes.
    pub fn max_inline_bytes(&self) -> usize {
        self.0.max_inline_bytes
    }

    /// The optional cap on the model-facing text, in lines.
    pub fn max_inline_lines(&self) -> Option<u64> {
        self.0.max_inline_lines
    }

    /// The head's share of the preview, in percent.
    pub fn head_percent(&self) -> u8 {
        self.0.head_percent
    }

    /// The most bytes one stored object keeps.
    pub fn max_spill_bytes(&self) -> u64 {
        self.0.max_spill_bytes
    }

    /// How stored objects are compressed.
    pub fn compression(&self) -> Compression {
        self.0.compression
    }

    /// What happens when the store fails.
    pub fn on_store_error(&self) -> OnStoreError {
        self.0.on_store_error
    }

    /// When stored objects are durable.
    pub fn durability(&self) -> Durability {
        self.0.durability
    }

    /// The store's settings for the objects this policy writes.
    pub fn write_options(&self) -> WriteOptions {
        self.compression().write_options(self.durability())
    }

    /// How the input is read when a preview is built.
    pub fn format(&self) -> Format {
        self.0.format
    }

    /// The notice templates.
    pub fn templates(&self) -> &NoticeTemplates {
        &self.0.templates
    }

    /// What the model-facing text is made of.
    pub fn render(&self) -> Render {
        self.0.render
    }

    /// The patterns of salient lines (empty: off).
    pub fn salient(&self) -> &SalientPatterns {
        &self.0.salient
    }

    /// The share of the budget salient lines may take, in percent.
    pub fn salient_percent(&self) -> u8 {
        self.0.salient_percent
    }

    /// The optional cap on the model-facing text, in tokens.
    pub fn max_inline_tokens(&self) -> Option<u64> {
        self.0.max_inline_tokens
    }

    /// How tokens are counted.
    pub fn tokenizer(&self) -> Tokenizer {
        self.0.tokenizer
    }

    /// The longest notice this policy can write when object paths are
    /// `path_len` bytes long, and its line count.
    pub(crate) fn notice_bound(&self, path_len: usize) -> (usize, usize) {
        notice::worst_case_len(&self.0.templates, path_len)
    }

    /// The smallest byte budget this policy's notices fit when object paths
    /// are `path_len` bytes long: the longest notice, and the newline before
    /// it and the one after it.
    pub(crate) fn min_budget(&self, path_len: usize) -> usize {
        self.notice_bound(path_len).0 + 2
    }

    /// Checks that the longest notice fits the budget when object paths are
    /// `path_len` bytes long. [`Spiller::new`](crate::Spiller::new) calls this
    /// with the store's real path length.
    ///
    /// # Errors
    ///
    /// [`PolicyError::BudgetTooSmall`] or [`PolicyError::LinesTooSmall`].
    pub(crate) fn check_fits(&self, path_len: usize) -> Result<(), PolicyError> {
        let (_, lines) = self.notice_bound(path_len);
        let needed = self.min_budget(path_len) as u64;
        if (self.0.max_inline_bytes as u64) < needed {
            return Err(PolicyError::BudgetTooSmall {
                got: self.0.max_inline_bytes as u64,
                needed,
                plus_path: path_len == 0 && self.0.templates.uses(notice::Var::Path),
            });
        }
        if let Some(max) = self.0.max_inline_lines {
            if max < lines as u64 {
                return Err(PolicyError::LinesTooSmall {
                    got: max,
                    needed: lines as u64,
                });
            }
        }
        if let Some(max) = self.0.max_inline_tokens {
            let needed =
                notice::worst_case_tokens(&self.0.templates, path_len, self.0.tokenizer) as u64;
            if max < needed {
                return Err(PolicyError::TokensTooSmall { got: max, needed });
            }
        }
        Ok(())
    }

    /// This policy with `hint`'s templates in place of the library's
    /// default `stored` and `pointer` templates; a template of the caller's
    /// own is kept as written. The CLI and the language packages all give
    /// the command line's hint (`spillway_process::cli_read_hint`), so that
    /// one input gives one content everywhere.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Template`] when the hint's template is not valid, or
    /// [`PolicyError::BudgetTooSmall`] when the longer notice no longer fits
    /// the budget.
    pub(crate) fn with_hint(&self, hint: &ReadHint) -> Result<Policy, PolicyError> {
        let default_stored = self.0.templates.stored.as_str() == NoticeTemplates::DEFAULT_STORED;
        let default_pointer = self.0.templates.pointer.as_str() == NoticeTemplates::DEFAULT_POINTER;
        if !default_stored && !default_pointer {
            return Ok(self.clone());
        }
        let mut templates = self.0.templates.clone();
        if default_stored {
            templates.stored = hint
                .stored()
                .parse()
                .map_err(|error| PolicyError::Template {
                    which: "stored",
                    error,
                })?;
        }
        if default_pointer {
            templates.pointer = hint
                .pointer()
                .parse()
                .map_err(|error| PolicyError::Template {
                    which: "pointer",
                    error,
                })?;
        }
        let mut config = (*self.0).clone();
        config.templates = templates;
        config
            .templates
            .validate()
            .map_err(|error| PolicyError::Template {
                which: "stored",
                error,
            })?;
        let policy = Policy(Arc::new(config));
        policy.check_fits(0)?;
        Ok(policy)
    }

    /// This policy as a config, for printing or saving.
    pub fn to_config(&self) -> PolicyConfig {
        let c = &self.0;
        let t = &c.templates;
        let defaults = NoticeTemplates::default();
        let pick = |a: &Template, b: &Template| (a != b).then(|| a.as_str().to_string());
        let notice = NoticeConfig {
            omitted: pick(&t.omitted, &defaults.omitted),
            binary: pick(&t.binary, &defaults.binary),
            lossy: pick(&t.lossy, &defaults.lossy),
            stored: pick(&t.stored, &defaults.stored),
            unsaved: pick(&t.unsaved, &defaults.unsaved),
            pointer: pick(&t.pointer, &defaults.pointer),
        };
        let (compression, zstd_level) = match c.compression {
            Compression::None => (CompressionKind::None, None),
            Compression::Zstd { level } => (CompressionKind::Zstd, Some(level)),
        };
        PolicyConfig {
            max_inline_bytes: Some(ByteSize::new(c.max_inline_bytes as u64)),
            max_inline_lines: c.max_inline_lines,
            head_percent: Some(u64::from(c.head_percent)),
            max_spill_bytes: Some(ByteSize::new(c.max_spill_bytes)),
            compression: Some(compression),
            zstd_level,
            on_store_error: Some(c.on_store_error),
            durability: Some(c.durability),
            format: Some(c.format),
            render: Some(c.render),
            salient: (!c.salient.is_default()).then(|| c.salient.patterns().to_vec()),
            salient_percent: Some(u64::from(c.salient_percent)),
            max_inline_tokens: c.max_inline_tokens,
            tokenizer: Some(c.tokenizer),
            notice: (notice != NoticeConfig::default()).then_some(notice),
        }
    }
}

/// Builds a [`Policy`]. Every setter documents its default.
///
/// The builder holds a [`PolicyConfig`], the one list of the settings: a
/// setter writes its field, and [`build`](Self::build) checks them all,
/// once, whichever way they were given (in code, from a config file, from
/// flags).
#[derive(Clone, Debug, Default)]
pub struct PolicyBuilder {
    config: PolicyConfig,
}

impl From<PolicyConfig> for PolicyBuilder {
    fn from(config: PolicyConfig) -> Self {
        PolicyBuilder { config }
    }
}

impl PolicyBuilder {
    /// A builder holding the defaults.
    pub fn new() -> Self {
        PolicyBuilder::default()
    }

    /// The settings given so far, as a config.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The cap on the model-facing text in UTF-8 bytes, notice included.
    /// From the longest notice (about 400 bytes with the default templates)
    /// up to 64 MiB. Default: 32 KiB ([`DEFAULT_MAX_INLINE_BYTES`]).
    pub fn max_inline_bytes(&mut self, bytes: u64) -> &mut Self {
        self.config.max_inline_bytes = Some(ByteSize::new(bytes));
        self
    }

    /// An optional cap on the model-facing text in lines, notice included.
    /// Default: `None` (no line cap).
    pub fn max_inline_lines(&mut self, lines: Option<u64>) -> &mut Self {
        self.config.max_inline_lines = lines;
        self
    }

    /// The head's share of the preview in percent (0 to 100); the tail gets
    /// the rest and whatever the head leaves unused. Default: 30
    /// ([`DEFAULT_HEAD_PERCENT`]).
    pub fn head_percent(&mut self, percent: u64) -> &mut Self {
        self.config.head_percent = Some(percent);
        self
    }

    /// The most bytes one stored object keeps. Past it the stream is still
    /// read and counted to its end, the preview's tail is still the true end,
    /// and the notice says how many bytes were not stored. Default: 64 MiB
    /// ([`DEFAULT_MAX_SPILL_BYTES`]).
    pub fn max_spill_bytes(&mut self, bytes: u64) -> &mut Self {
        self.config.max_spill_bytes = Some(ByteSize::new(bytes));
        self
    }

    /// How stored objects are compressed. Default: zstd level 1, which cuts
    /// the disk use of logs about fivefold.
    pub fn compression(&mut self, compression: Compression) -> &mut Self {
        (self.config.compression, self.config.zstd_level) = match compression {
            Compression::None => (Some(CompressionKind::None), None),
            Compression::Zstd { level } => (Some(CompressionKind::Zstd), Some(level)),
        };
        self
    }

    /// What happens when the store fails. Default: [`OnStoreError::Preview`].
    pub fn on_store_error(&mut self, mode: OnStoreError) -> &mut Self {
        self.config.on_store_error = Some(mode);
        self
    }

    /// When stored objects are durable. Default: [`Durability::Durable`].
    pub fn durability(&mut self, durability: Durability) -> &mut Self {
        self.config.durability = Some(durability);
        self
    }

    /// How the input is read when a preview is built: lines of text, or a
    /// JSON document whose preview stays JSON. Default: [`Format::Text`].
    pub fn format(&mut self, format: Format) -> &mut Self {
        self.config.format = Some(format);
        self
    }

    /// The notice templates. Default: [`NoticeTemplates::default`].
    pub fn templates(&mut self, templates: NoticeTemplates) -> &mut Self {
        self.config.notice = Some(NoticeConfig::differing(&templates));
        self
    }

    /// What the model-facing text is made of: the raw bytes, or what a
    /// terminal would show. Default: [`Render::Terminal`].
    pub fn render(&mut self, render: Render) -> &mut Self {
        self.config.render = Some(render);
        self
    }

    /// The regular expressions (Rust regex syntax, one line at a time) of
    /// the lines an omitted middle shows between the head and the tail;
    /// none turns salient lines off. They are found in the rendered text,
    /// so they apply with [`Render::Terminal`]. A string is a pattern of
    /// rank [`SalientRank::Error`](crate::SalientRank::Error); give a
    /// [`SalientPattern`] for another rank. Default:
    /// [`DEFAULT_SALIENT`](crate::DEFAULT_SALIENT).
    pub fn salient<I, P>(&mut self, patterns: I) -> &mut Self
    where
        I: IntoIterator<Item = P>,
        P: Into<SalientPattern>,
    {
        self.config.salient = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// The most of the budget, in percent, that salient lines take (0 to
    /// 100). Default: 20.
    pub fn salient_percent(&mut self, percent: u64) -> &mut Self {
        self.config.salient_percent = Some(percent);
        self
    }

    /// An optional cap on the model-facing text in tokens, notice included,
    /// counted with [`tokenizer`](PolicyBuilder::tokenizer). Default: `None`.
    pub fn max_inline_tokens(&mut self, tokens: Option<u64>) -> &mut Self {
        self.config.max_inline_tokens = tokens;
        self
    }

    /// How tokens are counted. Default: [`Tokenizer::O200k`].
    pub fn tokenizer(&mut self, tokenizer: Tokenizer) -> &mut Self {
        self.config.tokenizer = Some(tokenizer);
        self
    }

    /// How notices say to read back what they left out: sets the `stored`
    /// and `pointer` templates to the hint's (the last of this and
    /// [`templates`](Self::templates) wins). Default: [`ReadHint::Id`], the
    /// id and the range with no command.
    pub fn read_hint(&mut self, hint: &ReadHint) -> &mut Self {
        let notice = self.config.notice.get_or_insert_with(NoticeConfig::default);
        notice.stored = Some(hint.stored());
        notice.pointer = Some(hint.pointer());
        self
    }

    /// Checks every value and builds the policy: the one place a setting is
    /// checked.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the first bad value.
    pub fn build(&self) -> Result<Policy, PolicyError> {
        let c = &self.config;
        let max_inline_bytes = c
            .max_inline_bytes
            .map_or(DEFAULT_MAX_INLINE_BYTES as u64, ByteSize::get);
        if max_inline_bytes > MAX_INLINE_BYTES_LIMIT as u64 {
            return Err(PolicyError::BudgetTooLarge {
                got: max_inline_bytes,
            });
        }
        let head_percent = c.head_percent.unwrap_or(u64::from(DEFAULT_HEAD_PERCENT));
        if head_percent > 100 {
            return Err(PolicyError::HeadPercent(head_percent));
        }
        let max_spill_bytes = c
            .max_spill_bytes
            .map_or(DEFAULT_MAX_SPILL_BYTES, ByteSize::get);
        if max_spill_bytes > MAX_SPILL_BYTES_LIMIT {
            return Err(PolicyError::SpillCeilingTooLarge {
                got: max_spill_bytes,
            });
        }
        if max_spill_bytes == 0 {
            return Err(PolicyError::SpillCeilingZero);
        }
        let compression = match (c.compression, c.zstd_level) {
            (Some(CompressionKind::None), Some(_)) => return Err(PolicyError::LevelWithoutZstd),
            (Some(CompressionKind::None), None) => Compression::None,
            (_, level) => Compression::Zstd {
                level: level.unwrap_or(DEFAULT_ZSTD_LEVEL),
            },
        };
        if let Compression::Zstd { level } = compression {
            // The documented levels, 1 to 22. zstd also takes 0 (its
            // default, 3 in disguise) and negative "fast" levels, which
            // compress worse than level 1 for no gain here.
            let range = 1..=*zstd::compression_level_range().end();
            if !range.contains(&level) {
                return Err(PolicyError::ZstdLevel {
                    got: level,
                    min: *range.start(),
                    max: *range.end(),
                });
            }
        }
        let templates = match &c.notice {
            None => NoticeTemplates::default(),
            Some(n) => n.templates()?,
        };
        templates
            .validate()
            .map_err(|error| PolicyError::Template {
                which: "stored/unsaved/pointer",
                error,
            })?;
        let salient_percent = c
            .salient_percent
            .unwrap_or(u64::from(DEFAULT_SALIENT_PERCENT));
        if salient_percent > 100 {
            return Err(PolicyError::SalientPercent(salient_percent));
        }
        let tokenizer = c.tokenizer.unwrap_or_default();
        if c.max_inline_tokens.is_some() && !tokenizer.is_available() {
            return Err(PolicyError::TokenizerUnavailable(tokenizer));
        }
        let salient = match &c.salient {
            None => SalientPatterns::default(),
            Some(p) => SalientPatterns::new(p).map_err(PolicyError::Salient)?,
        };
        let policy = Policy(Arc::new(Config {
            max_inline_bytes: max_inline_bytes as usize,
            max_inline_lines: c.max_inline_lines,
            head_percent: head_percent as u8,
            max_spill_bytes,
            compression,
            on_store_error: c.on_store_error.unwrap_or(OnStoreError::Preview),
            durability: c.durability.unwrap_or(Durability::Durable),
            format: c.format.unwrap_or(Format::Text),
            render: c.render.unwrap_or(Render::Terminal),
            salient,
            salient_percent: salient_percent as u8,
            max_inline_tokens: c.max_inline_tokens,
            tokenizer,
            templates,
        }));
        policy.check_fits(0)?;
        Ok(policy)
    }

    /// Builds the policy for `store` with `hint`'s templates wherever the
    /// templates are the library's defaults (a template of the caller's own
    /// is kept as written), and checks the budgets against the notice this
    /// store's paths and the hint make. So a budget that is too small is
    /// refused once, with the smallest budget that works for this store and
    /// hint, not one that would then be refused again for the store's name
    /// in the hint or its paths. The CLI and the language packages give the
    /// command line's hint (`spillway_process::cli_read_hint`).
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the first bad value.
    pub fn build_for_store(
        &self,
        store: &crate::Store,
        hint: &ReadHint,
    ) -> Result<Policy, PolicyError> {
        // Everything but the budgets is checked as `build` checks it; the
        // budgets are checked last, against the notice as it will be.
        let mut lifted = self.clone();
        let bytes = self
            .config
            .max_inline_bytes
            .map_or(DEFAULT_MAX_INLINE_BYTES as u64, ByteSize::get);
        if bytes <= MAX_INLINE_BYTES_LIMIT as u64 {
            lifted.max_inline_bytes(MAX_INLINE_BYTES_LIMIT as u64);
        }
        lifted.max_inline_lines(None).max_inline_tokens(None);
        let policy = lifted.build()?.with_hint(hint)?;
        let mut config = (*policy.0).clone();
        config.max_inline_bytes = bytes as usize;
        config.max_inline_lines = self.config.max_inline_lines;
        config.max_inline_tokens = self.config.max_inline_tokens;
        let policy = Policy(Arc::new(config));
        policy.check_fits(store.max_path_len())?;
        Ok(policy)
    }
}

/// The compression names a config accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionKind {
    /// No compression.
    None,
    /// zstd, at `zstd_level` (default 1).
    Zstd,
}

/// Notice templates in a config; absent ones keep their defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct NoticeConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lossy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsaved: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

impl NoticeConfig {
    /// The templates that differ from the defaults, as text.
    fn differing(t: &NoticeTemplates) -> NoticeConfig {
        let defaults = NoticeTemplates::default();
        let pick = |a: &Template, b: &Template| (a != b).then(|| a.as_str().to_string());
        NoticeConfig {
            omitted: pick(&t.omitted, &defaults.omitted),
            binary: pick(&t.binary, &defaults.binary),
            lossy: pick(&t.lossy, &defaults.lossy),
            stored: pick(&t.stored, &defaults.stored),
            unsaved: pick(&t.unsaved, &defaults.unsaved),
            pointer: pick(&t.pointer, &defaults.pointer),
        }
    }

    /// The templates: the defaults with these laid over them.
    fn templates(&self) -> Result<NoticeTemplates, PolicyError> {
        let mut t = NoticeTemplates::default();
        let slots: [(&'static str, &Option<String>, &mut Template); 6] = [
            ("omitted", &self.omitted, &mut t.omitted),
            ("binary", &self.binary, &mut t.binary),
            ("lossy", &self.lossy, &mut t.lossy),
            ("stored", &self.stored, &mut t.stored),
            ("unsaved", &self.unsaved, &mut t.unsaved),
            ("pointer", &self.pointer, &mut t.pointer),
        ];
        for (which, text, slot) in slots {
            if let Some(text) = text {
                *slot = text
                    .parse()
                    .map_err(|error| PolicyError::Template { which, error })?;
            }
        }
        Ok(t)
    }
}

/// A policy as written in a config file. Absent fields keep their defaults;
/// unknown fields are an error. Sizes take numbers or strings (`"64KiB"`).
///
/// # Examples
///
/// ```
/// use spillway::PolicyConfig;
/// let config: PolicyConfig = serde_json::from_str(
///     r#"{ "max_inline_bytes": "16KiB", "head_percent": 20, "compression": "none" }"#,
/// ).unwrap();
/// let policy = config.build().unwrap();
/// assert_eq!(policy.max_inline_bytes(), 16384);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct PolicyConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_inline_bytes: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_inline_lines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_percent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_spill_bytes: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zstd_level: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_store_error: Option<OnStoreError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durability: Option<Durability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<Render>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub salient: Option<Vec<SalientPattern>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub salient_percent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_inline_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<NoticeConfig>,
}

impl PolicyConfig {
    /// Lays the fields that are set in `over` on top of `self`.
    pub fn merge(&mut self, over: PolicyConfig) {
        // A later layer overrides, never conflicts: `compression = none`
        // drops an earlier level, and a level alone (`--level 3` over a file
        // that says `none`) asks for zstd. Within one layer both together
        // still conflict, and `build` says so.
        if over.compression == Some(CompressionKind::None) && over.zstd_level.is_none() {
            self.zstd_level = None;
        }
        if over.zstd_level.is_some()
            && over.compression.is_none()
            && self.compression == Some(CompressionKind::None)
        {
            self.compression = Some(CompressionKind::Zstd);
        }
        macro_rules! take {
            ($($f:ident),*) => { $( if over.$f.is_some() { self.$f = over.$f; } )* };
        }
        take!(
            max_inline_bytes,
            max_inline_lines,
            head_percent,
            max_spill_bytes,
            compression,
            zstd_level,
            on_store_error,
            durability,
            format,
            render,
            salient,
            salient_percent,
            max_inline_tokens,
            tokenizer
        );
        if let Some(n) = over.notice {
            let mine = self.notice.get_or_insert_with(NoticeConfig::default);
            macro_rules! take_n {
                ($($f:ident),*) => { $( if n.$f.is_some() { mine.$f = n.$f; } )* };
            }
            take_n!(omitted, binary, lossy, stored, unsaved, pointer);
        }
    }

    /// The builder these values describe: the same settings, checked when
    /// it builds.
    pub fn builder(&self) -> PolicyBuilder {
        PolicyBuilder::from(self.clone())
    }

    /// Validates and builds the policy.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the first bad value.
    pub fn build(&self) -> Result<Policy, PolicyError> {
        self.builder().build()
    }

    /// Validates and builds the policy for `store`: see
    /// [`PolicyBuilder::build_for_store`].
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the first bad value.
    pub fn build_for_store(
        &self,
        store: &crate::Store,
        hint: &ReadHint,
    ) -> Result<Policy, PolicyError> {
        self.builder().build_for_store(store, hint)
    }
}

impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        PolicyConfig::deserialize(d)?
            .build()
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Policy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_config().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_replaces_only_the_default_templates_and_must_fit_the_budget() {
        let hint = |store: &str| ReadHint::Templates {
            stored: format!("read it with: tool --store {store} show {{short_id}} {{read_range}}"),
            pointer: "tool show {short_id} --pointer {pointer}".into(),
        };
        let p = Policy::default();
        let named = p.with_hint(&hint("/srv")).unwrap();
        assert_eq!(
            named.templates().stored.as_str(),
            "read it with: tool --store /srv show {short_id} {read_range}"
        );
        assert!(named.templates().pointer.as_str().starts_with("tool show"));
        // Everything else is kept.
        assert_eq!(named.max_inline_bytes(), p.max_inline_bytes());
        let custom = NoticeTemplates {
            stored: "read {short_id}".parse().unwrap(),
            ..Default::default()
        };
        let p = Policy::builder().templates(custom).build().unwrap();
        let kept = p.with_hint(&hint("/srv")).unwrap();
        assert_eq!(kept.templates().stored.as_str(), "read {short_id}");
        // A hint that makes the notice outgrow the budget is an error that
        // says so, not a panic and not a notice past the budget.
        let long = "/x".repeat(400);
        let small = Policy::builder().max_inline_bytes(1024).build().unwrap();
        let err = small.with_hint(&hint(&long)).unwrap_err();
        assert!(matches!(err, PolicyError::BudgetTooSmall { .. }), "{err}");
        assert!(Policy::default().with_hint(&hint(&long)).is_ok());
        // A hint that is not a template is refused, naming the template.
        let bad = ReadHint::Templates {
            stored: "{nope}".into(),
            pointer: "{pointer}".into(),
        };
        let err = Policy::default().with_hint(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                PolicyError::Template {
                    which: "stored",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn defaults_build_and_favour_the_tail() {
        let p = Policy::default();
        assert_eq!(p.max_inline_bytes(), DEFAULT_MAX_INLINE_BYTES);
        assert!(p.head_percent() < 50);
        assert_eq!(p.compression(), Compression::Zstd { level: 1 });
        assert_eq!(p.on_store_error(), OnStoreError::Preview);
        assert_eq!(p.durability(), Durability::Durable);
    }

    #[test]
    fn every_bad_value_has_its_own_error() {
        type Check = fn(&PolicyError) -> bool;
        let cases: Vec<(PolicyBuilder, Check)> = vec![
            (Policy::builder().max_inline_bytes(0).clone(), |e| {
                matches!(e, PolicyError::BudgetTooSmall { got: 0, .. })
            }),
            (
                Policy::builder().max_inline_bytes((64 << 20) + 1).clone(),
                |e| matches!(e, PolicyError::BudgetTooLarge { .. }),
            ),
            (Policy::builder().max_inline_lines(Some(0)).clone(), |e| {
                matches!(e, PolicyError::LinesTooSmall { got: 0, needed: 1 })
            }),
            (Policy::builder().head_percent(101).clone(), |e| {
                matches!(e, PolicyError::HeadPercent(101))
            }),
            (Policy::builder().max_spill_bytes(0).clone(), |e| {
                matches!(e, PolicyError::SpillCeilingZero)
            }),
            (
                Policy::builder()
                    .compression(Compression::Zstd { level: 0 })
                    .clone(),
                |e| matches!(e, PolicyError::ZstdLevel { got: 0, min: 1, .. }),
            ),
            (
                Policy::builder()
                    .compression(Compression::Zstd { level: -5 })
                    .clone(),
                |e| matches!(e, PolicyError::ZstdLevel { got: -5, .. }),
            ),
            (
                Policy::builder()
                    .compression(Compression::Zstd { level: 99 })
                    .clone(),
                |e| matches!(e, PolicyError::ZstdLevel { got: 99, .. }),
            ),
        ];
        for (b, check) in cases {
            let err = b.build().unwrap_err();
            assert!(check(&err), "unexpected {err:?}");
            assert!(!err.to_string().is_empty());
        }
    }

    #[test]
    fn smallest_budget_is_exactly_the_notice_bound() {
        let needed = match Policy::builder().max_inline_bytes(1).build() {
            Err(PolicyError::BudgetTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        assert!(Policy::builder().max_inline_bytes(needed).build().is_ok());
        assert!(Policy::builder()
            .max_inline_bytes(needed - 1)
            .build()
            .is_err());
        assert_eq!(
            Policy::builder()
                .max_inline_bytes(64 << 20)
                .build()
                .unwrap()
                .max_inline_bytes(),
            64 << 20
        );
    }

    #[test]
    fn config_round_trips_and_rejects_unknown_fields() {
        let json = r#"{"max_inline_bytes":"16KiB","max_inline_lines":100,"head_percent":10,
            "compression":"zstd","zstd_level":3,"on_store_error":"fail","durability":"relaxed",
            "notice":{"stored":"see {id}"}}"#;
        let p: Policy = serde_json::from_str(json).unwrap();
        assert_eq!(p.max_inline_bytes(), 16384);
        assert_eq!(p.max_inline_lines(), Some(100));
        assert_eq!(p.compression(), Compression::Zstd { level: 3 });
        assert_eq!(p.on_store_error(), OnStoreError::Fail);
        assert_eq!(p.templates().stored.as_str(), "see {id}");
        let again: Policy = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(again, p);

        let err = serde_json::from_str::<Policy>(r#"{"max_inline_byte": 5}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let err =
            serde_json::from_str::<Policy>(r#"{"compression":"none","zstd_level":3}"#).unwrap_err();
        assert!(err.to_string().contains("compression is none"), "{err}");
        let err =
            serde_json::from_str::<Policy>(r#"{"notice":{"omitted":"{bogus}"}}"#).unwrap_err();
        assert!(err.to_string().contains("omitted"), "{err}");
        let err =
            serde_json::from_str::<Policy>(r#"{"notice":{"stored":"{location}"}}"#).unwrap_err();
        assert!(err.to_string().contains("location"), "{err}");
    }

    #[test]
    fn merge_overrides_only_set_fields() {
        let mut base: PolicyConfig =
            serde_json::from_str(r#"{"max_inline_bytes":5000,"head_percent":10}"#).unwrap();
        base.merge(serde_json::from_str(r#"{"head_percent":40}"#).unwrap());
        assert_eq!(base.max_inline_bytes, Some(ByteSize::new(5000)));
        assert_eq!(base.head_percent, Some(40));
    }

    /// Every setting a config can hold is laid over by `merge` and survives
    /// `to_config`: the struct literal below names every field (a new one
    /// will not compile until it is added here), so a setting missing from
    /// `merge`'s list or from `to_config` fails this test.
    #[test]
    fn merge_and_to_config_know_every_setting() {
        let full = PolicyConfig {
            max_inline_bytes: Some(ByteSize::new(9000)),
            max_inline_lines: Some(77),
            head_percent: Some(12),
            max_spill_bytes: Some(ByteSize::new(1 << 20)),
            compression: Some(CompressionKind::Zstd),
            zstd_level: Some(5),
            on_store_error: Some(OnStoreError::Fail),
            durability: Some(Durability::Relaxed),
            format: Some(Format::Auto),
            render: Some(Render::Raw),
            salient: Some(vec![SalientPattern::from("FATAL")]),
            salient_percent: Some(33),
            max_inline_tokens: Some(5000),
            tokenizer: Some(Tokenizer::Approx),
            notice: Some(NoticeConfig {
                omitted: Some("[cut {omitted_lines} lines. {location}]".into()),
                binary: Some("[binary. {location}]".into()),
                lossy: Some("[lossy. {location}]".into()),
                stored: Some("at {short_id} {read_range}".into()),
                unsaved: Some("lost: {error}".into()),
                pointer: Some("{short_id} {pointer_json}".into()),
            }),
        };
        let mut merged = PolicyConfig::default();
        merged.merge(full.clone());
        assert_eq!(merged, full);
        assert_eq!(full.build().unwrap().to_config(), full);
    }
}
