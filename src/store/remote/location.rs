//! Where a remote store is and how to reach it: the `s3://BUCKET/PREFIX`
//! URL, and the endpoint, region and credentials from the standard AWS
//! environment variables and shared files.

use std::collections::HashMap;
use std::path::PathBuf;

/// A parsed `s3://BUCKET/PREFIX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct S3Url {
    pub bucket: String,
    /// Without leading or trailing `/`; empty for the bucket's root.
    pub prefix: String,
}

impl S3Url {
    /// Parses `s3://BUCKET[/PREFIX]`.
    pub fn parse(url: &str) -> Result<S3Url, String> {
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            format!("{url:?} is not an S3 store URL: expected s3://BUCKET/PREFIX")
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let ok_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !ok_bucket {
            return Err(format!(
                "{url:?}: {bucket:?} is not a bucket name (3 to 63 characters of a-z, 0-9, '-' and '.')"
            ));
        }
        let prefix = prefix.trim_matches('/');
        if prefix
            .split('/')
            .any(|p| p == "." || p == ".." || (p.is_empty() && !prefix.is_empty()))
        {
            return Err(format!(
                "{url:?}: the prefix may not hold empty, '.' or '..' parts"
            ));
        }
        if prefix.bytes().any(|b| b.is_ascii_control()) {
            return Err(format!(
                "{url:?}: the prefix may not hold control characters"
            ));
        }
        Ok(S3Url {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// The URL as it is printed: `s3://BUCKET` or `s3://BUCKET/PREFIX`.
    pub fn display(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

/// The endpoint, region and credentials a client uses.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Connection {
    pub endpoint: Option<String>,
    pub region: String,
    pub allow_http: bool,
    pub credentials: Credentials,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

/// Where the credentials come from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// Keys given in the environment or a profile.
    Keys {
        id: String,
        secret: String,
        token: Option<String>,
    },
    /// The client finds them itself: a web identity token or a container
    /// credentials endpoint named in the environment.
    Ambient,
    /// A session token given without keys (refused when the store opens).
    TokenOnly(String),
}

/// What a lookup reads: environment variables and files. A seam so tests
/// can give both without touching the process environment.
pub(crate) trait Env {
    fn var(&self, key: &str) -> Option<String>;
    fn read(&self, path: &std::path::Path) -> Option<String>;
}

/// The process environment and the real files.
pub(crate) struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
    fn read(&self, path: &std::path::Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// One INI file's sections, as the AWS shared files write them.
fn sections(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim().to_string());
            continue;
        }
        if let (Some(section), Some((k, v))) = (&current, line.split_once('=')) {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

fn home(env: &dyn Env) -> Option<PathBuf> {
    env.var("HOME").map(PathBuf::from)
}

/// Resolves the connection: the environment first, then the profile
/// (`AWS_PROFILE`, else `default`) of `~/.aws/credentials` and
/// `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`).
pub(crate) fn connection(env: &dyn Env) -> Result<Connection, String> {
    let profile_name = env.var("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let named = env.var("AWS_PROFILE").is_some();
    let file = |var: &str, default: &str| {
        env.var(var)
            .map(PathBuf::from)
            .or_else(|| home(env).map(|h| h.join(".aws").join(default)))
    };
    let creds_file = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_file = file("AWS_CONFIG_FILE", "config");
    let creds_sections = creds_file
        .as_deref()
        .and_then(|p| env.read(p))
        .map(|t| sections(&t))
        .unwrap_or_default();
    let config_sections = config_file
        .as_deref()
        .and_then(|p| env.read(p))
        .map(|t| sections(&t))
        .unwrap_or_default();
    let config_key = if profile_name == "default" {
        "default".to_string()
    } else {
        format!("profile {profile_name}")
    };
    let empty = HashMap::new();
    let from_creds = creds_sections.get(&profile_name).unwrap_or(&empty);
    let from_config = config_sections.get(&config_key).unwrap_or(&empty);
    if named
        && !creds_sections.contains_key(&profile_name)
        && !config_sections.contains_key(&config_key)
    {
        return Err(format!(
            "AWS_PROFILE={profile_name}, but no such profile is in {} or {}",
            shown(&creds_file),
            shown(&config_file)
        ));
    }
    let profile = |k: &str| {
        from_creds
            .get(k)
            .or_else(|| from_config.get(k))
            .filter(|v| !v.is_empty())
            .cloned()
    };

    let endpoint = env
        .var("AWS_ENDPOINT_URL_S3")
        .or_else(|| env.var("AWS_ENDPOINT_URL"))
        .or_else(|| profile("endpoint_url"));
    let region = env
        .var("AWS_REGION")
        .or_else(|| env.var("AWS_DEFAULT_REGION"))
        .or_else(|| profile("region"));
    let region =
        match (region, &endpoint) {
            (Some(r), _) => r,
            // An endpoint of its own (an emulator, MinIO, R2) rarely cares.
            (None, Some(_)) => "us-east-1".to_string(),
            (None, None) => return Err(
                "no S3 region: set AWS_REGION (or AWS_ENDPOINT_URL for an S3-compatible server)"
                    .into(),
            ),
        };
    let allow_http_env = env
        .var("AWS_ALLOW_HTTP")
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
    let mut allow_http = false;
    if let Some(e) = &endpoint {
        if let Some(rest) = e.strip_prefix("http://") {
            if allow_http_env || is_loopback(rest) {
                allow_http = true;
            } else {
                return Err(format!(
                    "the S3 endpoint {e} is plain HTTP and not on this machine: use https, or set AWS_ALLOW_HTTP=true"
                ));
            }
        } else if !e.starts_with("https://") {
            return Err(format!(
                "the S3 endpoint {e:?} must start with https:// (or http:// on this machine)"
            ));
        }
    }

    let id = env.var("AWS_ACCESS_KEY_ID");
    let secret = env.var("AWS_SECRET_ACCESS_KEY");
    let credentials = match (id, secret) {
        (Some(id), Some(secret)) => Credentials::Keys {
            id,
            secret,
            token: env.var("AWS_SESSION_TOKEN"),
        },
        (Some(_), None) => {
            return Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into())
        }
        (None, Some(_)) => {
            return Err("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".into())
        }
        (None, None) => match (
            profile("aws_access_key_id"),
            profile("aws_secret_access_key"),
        ) {
            (Some(id), Some(secret)) => Credentials::Keys {
                id,
                secret,
                token: profile("aws_session_token"),
            },
            (Some(_), None) | (None, Some(_)) => {
                return Err(format!(
                    "profile {profile_name:?} has only one of aws_access_key_id and aws_secret_access_key"
                ))
            }
            (None, None)
                if env.var("AWS_WEB_IDENTITY_TOKEN_FILE").is_some()
                    || env.var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
                    || env.var("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some() =>
            {
                Credentials::Ambient
            }
            (None, None) => {
                return Err(format!(
                    "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile with keys in {}",
                    shown(&creds_file)
                ))
            }
        },
    };
    Ok(Connection {
        endpoint,
        region,
        allow_http,
        credentials,
    })
}

fn shown(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map_or_else(|| "~/.aws".into(), |p| p.display().to_string())
}

/// Whether `host[:port][/…]` names this machine.
pub(crate) fn is_loopback(rest: &str) -> bool {
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    struct Fake(
        HashMap<&'static str, &'static str>,
        HashMap<PathBuf, &'static str>,
    );

    impl Env for Fake {
        fn var(&self, key: &str) -> Option<String> {
            self.0.get(key).map(|v| v.to_string())
        }
        fn read(&self, path: &Path) -> Option<String> {
            self.1.get(path).map(|v| v.to_string())
        }
    }

    fn env(vars: &[(&'static str, &'static str)]) -> Fake {
        Fake(vars.iter().copied().collect(), HashMap::new())
    }

    #[test]
    fn urls() {
        let u = S3Url::parse("s3://my-bucket/a/b/").unwrap();
        assert_eq!((u.bucket.as_str(), u.prefix.as_str()), ("my-bucket", "a/b"));
        assert_eq!(u.display(), "s3://my-bucket/a/b");
        assert_eq!(S3Url::parse("s3://bkt").unwrap().display(), "s3://bkt");
        for bad in [
            "s3://",
            "s3://A/x",
            "http://b/x",
            "s3://bkt/a//b",
            "s3://bkt/../x",
            "s3://b",
        ] {
            assert!(S3Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_from_the_environment_and_loopback_http() {
        let c = connection(&env(&[
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]))
        .unwrap();
        assert!(c.allow_http);
        assert_eq!(c.region, "us-east-1");
        assert!(matches!(c.credentials, Credentials::Keys { ref id, .. } if id == "id"));
    }

    #[test]
    fn errors_name_what_is_missing() {
        let e = connection(&env(&[("AWS_REGION", "eu-west-1")])).unwrap_err();
        assert!(e.contains("AWS_ACCESS_KEY_ID"), "{e}");
        let e = connection(&env(&[("AWS_ACCESS_KEY_ID", "x")])).unwrap_err();
        assert!(e.contains("no S3 region"), "{e}");
        let e = connection(&env(&[("AWS_REGION", "r"), ("AWS_ACCESS_KEY_ID", "x")])).unwrap_err();
        assert!(e.contains("AWS_SECRET_ACCESS_KEY"), "{e}");
        let e = connection(&env(&[
            ("AWS_ENDPOINT_URL", "http://s3.example.com"),
            ("AWS_ACCESS_KEY_ID", "x"),
            ("AWS_SECRET_ACCESS_KEY", "y"),
        ]))
        .unwrap_err();
        assert!(e.contains("AWS_ALLOW_HTTP"), "{e}");
        let e = connection(&env(&[("AWS_PROFILE", "nope"), ("HOME", "/h")])).unwrap_err();
        assert!(e.contains("no such profile"), "{e}");
    }

    #[test]
    fn a_profile_from_the_shared_files() {
        let mut e = env(&[
            ("AWS_PROFILE", "team"),
            ("HOME", "/h"),
            ("AWS_ALLOW_HTTP", "true"),
        ]);
        e.1.insert(
            PathBuf::from("/h/.aws/credentials"),
            "[default]\naws_access_key_id = d\n[team]\naws_access_key_id = t\naws_secret_access_key = s\n",
        );
        e.1.insert(
            PathBuf::from("/h/.aws/config"),
            "[profile team]\nregion = eu-central-1\nendpoint_url = http://s3.lan:9000\n",
        );
        let c = connection(&e).unwrap();
        assert_eq!(c.region, "eu-central-1");
        assert_eq!(c.endpoint.as_deref(), Some("http://s3.lan:9000"));
        assert!(c.allow_http);
        assert!(
            matches!(c.credentials, Credentials::Keys { ref id, ref secret, .. } if id == "t" && secret == "s")
        );
    }

    proptest::proptest! {
        /// Any text is either refused with a message or parsed into a URL
        /// that prints back to itself (less trailing slashes), never a panic.
        #[test]
        fn any_url_is_refused_or_round_trips(s in "s3://[a-z0-9.\\-_A-Z/]{0,40}|.{0,40}") {
            match S3Url::parse(&s) {
                Ok(u) => {
                    proptest::prop_assert_eq!(S3Url::parse(&u.display()), Ok(u.clone()));
                    proptest::prop_assert!(!u.prefix.starts_with('/') && !u.prefix.ends_with('/'));
                }
                Err(e) => proptest::prop_assert!(!e.is_empty()),
            }
        }
    }

    #[test]
    fn loopback_hosts() {
        for h in ["127.0.0.1:5000", "localhost", "[::1]:9000/x", "127.1.2.3"] {
            assert!(is_loopback(h), "{h}");
        }
        for h in ["example.com", "10.0.0.1:80", "localhost.evil.com"] {
            assert!(!is_loopback(h), "{h}");
        }
    }
}
