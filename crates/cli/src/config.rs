//! Configuration layers: defaults, then a TOML file, then `SPILLWAY_*`
//! environment variables, then flags; each overrides the last, and each
//! value remembers where it came from.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::Deserialize;
use serde_json::{Map, Value};
use spillway::{Policy, PolicyConfig, Store};

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(String),
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag => f.write_str("flag"),
        }
    }
}

/// The config file's shape. The policy table is read only by commands that
/// apply a policy, so that maintenance works while it is wrong.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    store: Option<PathBuf>,
    policy: Option<toml::Table>,
}

/// The policy fields and the environment variable for each.
const ENV_FIELDS: [(&str, &str); 14] = [
    ("SPILLWAY_MAX_INLINE_BYTES", "max_inline_bytes"),
    ("SPILLWAY_MAX_INLINE_LINES", "max_inline_lines"),
    ("SPILLWAY_HEAD_PERCENT", "head_percent"),
    ("SPILLWAY_MAX_SPILL_BYTES", "max_spill_bytes"),
    ("SPILLWAY_COMPRESSION", "compression"),
    ("SPILLWAY_ZSTD_LEVEL", "zstd_level"),
    ("SPILLWAY_ON_STORE_ERROR", "on_store_error"),
    ("SPILLWAY_DURABILITY", "durability"),
    ("SPILLWAY_FORMAT", "format"),
    ("SPILLWAY_RENDER", "render"),
    ("SPILLWAY_SALIENT", "salient"),
    ("SPILLWAY_SALIENT_PERCENT", "salient_percent"),
    ("SPILLWAY_MAX_INLINE_TOKENS", "max_inline_tokens"),
    ("SPILLWAY_TOKENIZER", "tokenizer"),
];

/// The effective configuration.
pub struct Effective {
    pub store: PathBuf,
    pub store_source: Source,
    pub config_file: Option<PathBuf>,
    /// The policy's layers merged, for the commands that apply one (`None`
    /// for the rest). It is built with the store (see [`Effective::policy`]):
    /// the smallest budget that works depends on the store's name and paths.
    pub policy_config: Option<PolicyConfig>,
    /// Field name to source, for the policy fields that were set.
    pub sources: BTreeMap<String, Source>,
}

impl Effective {
    /// The merged policy settings; only commands that asked for a policy
    /// call this.
    pub fn policy_config(&self) -> Result<&PolicyConfig> {
        self.policy_config
            .as_ref()
            .ok_or_else(|| anyhow!("internal: this command was loaded without a policy"))
    }

    /// Whether read hints name the store: they must work pasted as they
    /// are, and a store that is not the default one must then be given.
    pub fn names_store(&self) -> bool {
        self.store_source != Source::Default
    }

    /// The policy for `store`, its read hint naming the store when
    /// `name_store` is set.
    pub fn policy(&self, store: &Store, name_store: bool) -> Result<Policy> {
        self.policy_config()?
            .build_for_store(store, &read_hint(store, name_store))
            .context("policy")
    }
}

/// The command line's read hint for `store`, naming it when `name_store`.
pub fn read_hint(store: &Store, name_store: bool) -> spillway::ReadHint {
    let location = name_store.then(|| store.location().to_string());
    spillway_process::cli_read_hint(location.as_deref())
}

fn default_config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPILLWAY_CONFIG").filter(|v| !v.is_empty()) {
        return Some(p.into());
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("spillway").join("config.toml"))
}

/// The built-in store (`SPILLWAY_STORE` was read above, as a layer of its
/// own): the rule every front end shares.
fn default_store() -> Result<PathBuf> {
    spillway_process::default_store()
        .map(|d| PathBuf::from(d.location))
        .ok_or_else(|| anyhow!("no store directory: pass --store DIR or set SPILLWAY_STORE"))
}

fn read_file(path: &Path, explicit: bool) -> Result<Option<FileConfig>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("config {}", path.display())),
    };
    let file: FileConfig =
        toml::from_str(&text).with_context(|| format!("config {}", path.display()))?;
    Ok(Some(file))
}

/// The keys a config layer sets.
fn keys(c: &PolicyConfig) -> Vec<String> {
    match serde_json::to_value(c) {
        Ok(Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

fn env_layer() -> Result<(PolicyConfig, Vec<(String, String)>)> {
    let mut merged = PolicyConfig::default();
    let mut set = Vec::new();
    for (var, field) in ENV_FIELDS {
        let Some(raw) = std::env::var_os(var) else {
            continue;
        };
        let raw = raw
            .into_string()
            .map_err(|_| anyhow!("{var}: not valid UTF-8"))?;
        let value = if field == "salient" {
            // One pattern a line; empty for none.
            Value::from(
                raw.lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>(),
            )
        } else {
            match raw.trim().parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => Value::from(raw.trim()),
            }
        };
        let mut obj = Map::new();
        obj.insert(field.to_string(), value);
        let layer: PolicyConfig =
            serde_json::from_value(Value::Object(obj)).with_context(|| var.to_string())?;
        merged.merge(layer);
        set.push((field.to_string(), var.to_string()));
    }
    Ok((merged, set))
}

/// Loads every layer; builds the policy when `flags` is given (commands
/// that apply a policy), and reads no policy setting otherwise.
pub fn load(
    store_flag: Option<PathBuf>,
    config_flag: Option<PathBuf>,
    flags: Option<&PolicyConfig>,
) -> Result<Effective> {
    let (config_path, explicit) = match config_flag {
        Some(p) => (Some(p), true),
        None => (default_config_path(), false),
    };
    let file = match &config_path {
        Some(p) => read_file(p, explicit)?,
        None => None,
    };
    let config_file = file.as_ref().and(config_path.clone());

    let mut sources: BTreeMap<String, Source> = BTreeMap::new();
    let policy = match flags {
        Some(flags) => {
            let mut merged = PolicyConfig::default();
            if let (Some(f), Some(path)) = (file.as_ref(), config_file.as_ref()) {
                if let Some(table) = &f.policy {
                    let p: PolicyConfig = table
                        .clone()
                        .try_into()
                        .with_context(|| format!("config {}: [policy]", path.display()))?;
                    for k in keys(&p) {
                        sources.insert(k, Source::File(path.clone()));
                    }
                    merged.merge(p);
                }
            }
            let (env, env_set) = env_layer()?;
            for (field, var) in env_set {
                sources.insert(field, Source::Env(var));
            }
            merged.merge(env);
            for k in keys(flags) {
                sources.insert(k, Source::Flag);
            }
            merged.merge(flags.clone());
            Some(merged)
        }
        None => None,
    };

    let (store, store_source) = if let Some(s) = store_flag {
        (s, Source::Flag)
    } else if let Some(s) = std::env::var_os("SPILLWAY_STORE").filter(|v| !v.is_empty()) {
        (s.into(), Source::Env("SPILLWAY_STORE".into()))
    } else if let (Some(s), Some(path)) = (file.and_then(|f| f.store), config_file.as_ref()) {
        (s, Source::File(path.clone()))
    } else {
        (default_store()?, Source::Default)
    };
    Ok(Effective {
        store,
        store_source,
        config_file,
        policy_config: policy,
        sources,
    })
}
