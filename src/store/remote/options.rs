//! [`S3Options`]: how to reach an S3 store, given in code or read from the
//! standard AWS environment.

use std::path::{Path, PathBuf};
#[cfg(feature = "test-seams")]
use std::sync::Arc;

use super::location::{connection, is_loopback, Connection, Credentials, Env, ProcessEnv, S3Url};
use super::{config, DEFAULT_CACHE_BYTES};
use crate::store::StoreError;

/// How to reach an S3 store (`s3://BUCKET/PREFIX`) and where to cache what
/// it reads. Given in code, nothing is read from the environment but the
/// default cache directory; [`S3Options::from_env`] reads everything the
/// way [`Store::open_url`](crate::Store::open_url) does, and what is set
/// afterwards overrides it.
///
/// ```
/// # #[cfg(feature = "s3")] {
/// use spillway::{S3Options, Store};
/// let mut opts = S3Options::new("s3://team-spill/agents").unwrap();
/// opts.endpoint("http://127.0.0.1:9000")
///     .credentials("minio", "minio-secret")
///     .cache_dir("/var/cache/harness/s3");
/// // Nothing is sent until the first operation.
/// let store = Store::open_s3(&opts).unwrap();
/// assert_eq!(store.location().to_string(), "s3://team-spill/agents");
/// # }
/// ```
#[derive(Clone)]
pub struct S3Options {
    pub(super) url: S3Url,
    endpoint: Option<String>,
    region: Option<String>,
    allow_http: bool,
    credentials: Option<Credentials>,
    cache_dir: Option<PathBuf>,
    pub(super) cache_bytes: u64,
    #[cfg(feature = "test-seams")]
    pub(super) client: Option<Arc<dyn object_store::ObjectStore>>,
}

impl std::fmt::Debug for S3Options {
    /// Everything but the credentials' values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Options")
            .field("url", &self.url.display())
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("allow_http", &self.allow_http)
            .field("credentials", &self.credentials.as_ref().map(|_| "…"))
            .field("cache_dir", &self.cache_dir)
            .field("cache_bytes", &self.cache_bytes)
            .finish_non_exhaustive()
    }
}

impl S3Options {
    /// Options for the store at `url` (`s3://BUCKET[/PREFIX]`), with no
    /// endpoint (AWS itself), no region, no credentials, plain HTTP only to
    /// this machine, the default cache directory and a 1 GiB cache.
    ///
    /// # Errors
    ///
    /// [`StoreError::Config`] for a malformed URL.
    pub fn new(url: &str) -> Result<S3Options, StoreError> {
        Ok(S3Options {
            url: S3Url::parse(url).map_err(config)?,
            endpoint: None,
            region: None,
            allow_http: false,
            credentials: None,
            cache_dir: None,
            cache_bytes: DEFAULT_CACHE_BYTES,
            #[cfg(feature = "test-seams")]
            client: None,
        })
    }

    /// Options read from the standard AWS variables and shared files, and
    /// `SPILLWAY_S3_CACHE` and `SPILLWAY_S3_CACHE_BYTES`, as
    /// [`Store::open_url`](crate::Store::open_url) reads them.
    ///
    /// # Errors
    ///
    /// [`StoreError::Config`] for a malformed URL or a setting that is
    /// missing or wrong (the message names it).
    pub fn from_env(url: &str) -> Result<S3Options, StoreError> {
        S3Options::read_env(url, &ProcessEnv)
    }

    pub(super) fn read_env(url: &str, env: &dyn Env) -> Result<S3Options, StoreError> {
        let mut opts = S3Options::new(url)?;
        let conn = connection(env).map_err(config)?;
        opts.endpoint = conn.endpoint;
        opts.region = Some(conn.region);
        opts.allow_http = conn.allow_http;
        opts.credentials = Some(conn.credentials);
        opts.cache_dir = env.var("SPILLWAY_S3_CACHE").map(PathBuf::from);
        if let Some(v) = env.var("SPILLWAY_S3_CACHE_BYTES") {
            opts.cache_bytes = v
                .parse::<crate::units::ByteSize>()
                .map_err(|e| config(format!("SPILLWAY_S3_CACHE_BYTES: {e}")))?
                .get();
        }
        Ok(opts)
    }

    /// The endpoint of an S3-compatible server (`https://…`; `http://`
    /// only on this machine or with [`allow_http`](Self::allow_http)).
    pub fn endpoint(&mut self, url: impl Into<String>) -> &mut Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The bucket's region. Without one, a store with its own endpoint
    /// uses `us-east-1`, and one without an endpoint cannot be opened.
    pub fn region(&mut self, region: impl Into<String>) -> &mut Self {
        self.region = Some(region.into());
        self
    }

    /// An access key and its secret.
    pub fn credentials(
        &mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> &mut Self {
        self.credentials = Some(Credentials::Keys {
            id: access_key_id.into(),
            secret: secret_access_key.into(),
            token: None,
        });
        self
    }

    /// A session token for temporary credentials, with
    /// [`credentials`](Self::credentials).
    pub fn session_token(&mut self, token: impl Into<String>) -> &mut Self {
        if let Some(Credentials::Keys { token: t, .. }) = &mut self.credentials {
            *t = Some(token.into());
        } else {
            self.credentials = Some(Credentials::TokenOnly(token.into()));
        }
        self
    }

    /// Allows a plain HTTP endpoint that is not on this machine.
    pub fn allow_http(&mut self, allow: bool) -> &mut Self {
        self.allow_http = allow;
        self
    }

    /// Where verified copies are cached (each bucket and prefix gets a part
    /// of its own). Default: `$XDG_CACHE_HOME/spillway/s3`, else
    /// `~/.cache/spillway/s3`.
    pub fn cache_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The cache's bound in bytes; least recently used copies leave first.
    pub fn cache_bytes(&mut self, bytes: u64) -> &mut Self {
        self.cache_bytes = bytes;
        self
    }

    /// A client of the project's own choosing in place of the S3 client
    /// (tests only: the `test-seams` feature), such as `object_store`'s
    /// in-memory store. Listing and aborting abandoned multipart uploads,
    /// which only S3 has, then does nothing.
    #[cfg(feature = "test-seams")]
    pub fn client(&mut self, client: Arc<dyn object_store::ObjectStore>) -> &mut Self {
        self.client = Some(client);
        self
    }

    /// The connection, checked: a region or an endpoint, HTTP only where it
    /// is allowed, and credentials.
    pub(super) fn connection(&self) -> Result<Connection, String> {
        let region = match (&self.region, &self.endpoint) {
            (Some(r), _) => r.clone(),
            (None, Some(_)) => "us-east-1".to_string(),
            (None, None) => {
                return Err(
                    "no S3 region: give one (or an endpoint for an S3-compatible server)".into(),
                )
            }
        };
        if let Some(e) = &self.endpoint {
            if let Some(rest) = e.strip_prefix("http://") {
                if !self.allow_http && !is_loopback(rest) {
                    return Err(format!(
                        "the S3 endpoint {e} is plain HTTP and not on this machine: use https, or allow HTTP"
                    ));
                }
            } else if !e.starts_with("https://") {
                return Err(format!(
                    "the S3 endpoint {e:?} must start with https:// (or http:// on this machine)"
                ));
            }
        }
        let credentials = match &self.credentials {
            Some(Credentials::TokenOnly(_)) => {
                return Err("an S3 session token was given without an access key and secret".into())
            }
            Some(c) => c.clone(),
            None => {
                return Err(
                    "no S3 credentials: give an access key and secret, or read them from the environment"
                        .into(),
                )
            }
        };
        let allow_http = self
            .endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        Ok(Connection {
            endpoint: self.endpoint.clone(),
            region,
            allow_http,
            credentials,
        })
    }

    /// The cache directory of this bucket and prefix.
    pub(super) fn cache_path(&self) -> Result<PathBuf, StoreError> {
        let base = match &self.cache_dir {
            Some(d) => d.clone(),
            None => default_cache_base(&ProcessEnv).ok_or_else(|| {
                config("no cache directory for the S3 store: give one, or set SPILLWAY_S3_CACHE or HOME")
            })?,
        };
        let tag = blake3::hash(
            format!(
                "{}\n{}\n{}",
                self.endpoint.as_deref().unwrap_or(""),
                self.url.bucket,
                self.url.prefix
            )
            .as_bytes(),
        )
        .to_hex();
        Ok(base.join(&tag.as_str()[..16]))
    }
}

/// `$XDG_CACHE_HOME/spillway/s3`, else `~/.cache/spillway/s3`.
fn default_cache_base(env: &dyn Env) -> Option<PathBuf> {
    env.var("XDG_CACHE_HOME")
        .map(|d| PathBuf::from(d).join("spillway").join("s3"))
        .or_else(|| {
            env.var("HOME")
                .map(|h| PathBuf::from(h).join(".cache").join("spillway").join("s3"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Fake(HashMap<&'static str, &'static str>);

    impl Env for Fake {
        fn var(&self, key: &str) -> Option<String> {
            self.0.get(key).map(|v| v.to_string())
        }
        fn read(&self, _: &Path) -> Option<String> {
            None
        }
    }

    fn opts() -> S3Options {
        S3Options::new("s3://bucket/pre/fix").unwrap()
    }

    #[test]
    fn given_in_code_nothing_comes_from_the_environment() {
        let mut o = opts();
        assert!(o.connection().unwrap_err().contains("no S3 region"));
        o.region("eu-west-1");
        assert!(o.connection().unwrap_err().contains("no S3 credentials"));
        o.credentials("id", "secret").session_token("tok");
        let c = o.connection().unwrap();
        assert_eq!((c.region.as_str(), c.endpoint), ("eu-west-1", None));
        assert!(
            c.credentials
                == Credentials::Keys {
                    id: "id".into(),
                    secret: "secret".into(),
                    token: Some("tok".into())
                }
        );
    }

    #[test]
    fn an_endpoint_of_its_own_needs_no_region_and_http_only_nearby() {
        let mut o = opts();
        o.credentials("id", "secret")
            .endpoint("http://127.0.0.1:9000");
        let c = o.connection().unwrap();
        assert_eq!(c.region, "us-east-1");
        assert!(c.allow_http);
        o.endpoint("http://minio.internal:9000");
        assert!(o.connection().unwrap_err().contains("plain HTTP"));
        o.allow_http(true);
        assert!(o.connection().is_ok());
        o.endpoint("ftp://x");
        assert!(o.connection().unwrap_err().contains("https://"));
    }

    #[test]
    fn a_token_alone_is_refused_and_secrets_are_not_printed() {
        let mut o = opts();
        o.region("us-east-1").session_token("tok");
        assert!(o.connection().unwrap_err().contains("session token"));
        o.credentials("AKIAEXAMPLE", "very-secret");
        let shown = format!("{o:?}");
        assert!(
            !shown.contains("very-secret") && !shown.contains("AKIAEXAMPLE"),
            "{shown}"
        );
    }

    #[test]
    fn the_environment_fills_the_same_settings() {
        let env = Fake(HashMap::from([
            ("AWS_ENDPOINT_URL", "http://localhost:5000"),
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("SPILLWAY_S3_CACHE", "/c"),
            ("SPILLWAY_S3_CACHE_BYTES", "2MiB"),
        ]));
        let mut o = S3Options::read_env("s3://bucket", &env).unwrap();
        assert_eq!(o.cache_bytes, 2 << 20);
        assert!(o.cache_path().unwrap().starts_with("/c"));
        assert_eq!(o.connection().unwrap().region, "us-east-1");
        // What is set in code afterwards wins.
        o.region("ap-south-1").cache_dir("/elsewhere");
        assert_eq!(o.connection().unwrap().region, "ap-south-1");
        assert!(o.cache_path().unwrap().starts_with("/elsewhere"));
        let bad = Fake(HashMap::from([
            ("AWS_REGION", "x"),
            ("AWS_ACCESS_KEY_ID", "id"),
        ]));
        assert!(S3Options::read_env("s3://bucket", &bad).is_err());
    }

    #[test]
    fn each_bucket_and_prefix_gets_its_own_cache() {
        let mut a = S3Options::new("s3://bucket/a").unwrap();
        let mut b = S3Options::new("s3://bucket/b").unwrap();
        a.cache_dir("/c");
        b.cache_dir("/c");
        assert_ne!(a.cache_path().unwrap(), b.cache_path().unwrap());
        assert!(S3Options::new("http://bucket").is_err());
    }
}
