//! Who may ask: the token, the `Host` the server listens as, and the
//! `Origin` of the page itself.
//!
//! A page on another site can make a browser send requests to
//! 127.0.0.1, and a name it controls can resolve to 127.0.0.1 (DNS
//! rebinding). So a request must carry the token (which that page cannot
//! know: it is printed on the viewer's standard output only), name this
//! server's own host and port in `Host`, and, when the browser says where
//! it comes from (`Origin`, `Sec-Fetch-Site`), come from this server's
//! own page.

use std::io::Read;

use axum::http::{header, HeaderMap, HeaderValue, Uri};

use crate::ViewError;

/// The token, 128 random bits as 32 hex digits.
pub(crate) fn new_token() -> Result<String, ViewError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|source| ViewError::Session {
            path: "/dev/urandom".into(),
            source,
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a request may be answered with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Answer it.
    Pass,
    /// Answer it, and set the cookie: the token came in the URL.
    PassSetCookie,
    /// Refuse it (403), saying why.
    Refuse(&'static str),
}

/// The rules for one server.
#[derive(Debug)]
pub(crate) struct Guard {
    token: String,
    hosts: [String; 2],
    origins: [String; 2],
    cookie: String,
}

impl Guard {
    pub fn new(port: u16, token: String) -> Guard {
        Guard {
            token,
            hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            origins: [
                format!("http://127.0.0.1:{port}"),
                format!("http://localhost:{port}"),
            ],
            // Named for the port: two viewers on one host keep their own.
            cookie: format!("spillway_view_{port}"),
        }
    }

    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Verdict {
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        match text(header::HOST) {
            Some(h) if self.hosts.iter().any(|ok| ok.eq_ignore_ascii_case(h)) => {}
            _ => return Verdict::Refuse("the Host header does not name this viewer"),
        }
        if let Some(o) = text(header::ORIGIN) {
            if !self.origins.iter().any(|ok| ok.eq_ignore_ascii_case(o)) {
                return Verdict::Refuse("a request from another origin");
            }
        }
        if text(header::HeaderName::from_static("sec-fetch-site")) == Some("cross-site") {
            return Verdict::Refuse("a cross-site request");
        }
        let in_query = uri.query().is_some_and(|q| {
            q.split('&')
                .filter_map(|kv| kv.strip_prefix("token="))
                .any(|t| same(t, &self.token))
        });
        if in_query {
            return Verdict::PassSetCookie;
        }
        let in_cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .any(|(k, v)| k == self.cookie && same(v, &self.token));
        let in_bearer = text(header::AUTHORIZATION)
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|t| same(t.trim(), &self.token));
        if in_cookie || in_bearer {
            Verdict::Pass
        } else {
            Verdict::Refuse("no token: open the address the viewer printed")
        }
    }

    /// The `Set-Cookie` value that carries the token from then on.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie, self.token
        )
    }
}

/// Whether two tokens are equal, in time that does not depend on where
/// they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_the_token_on_this_host_from_this_origin_passes() {
        let g = Guard::new(4000, "a".repeat(32));
        let t = "a".repeat(32);
        let with = |q: &str| format!("/api/sessions?{q}").parse::<Uri>().unwrap();
        let plain: Uri = "/api/sessions".parse().unwrap();
        let host = ("host", "127.0.0.1:4000");
        assert_eq!(
            g.check(&with(&format!("token={t}")), &headers(&[host])),
            Verdict::PassSetCookie
        );
        let cookie = format!("x=1; spillway_view_4000={t}");
        assert_eq!(
            g.check(&plain, &headers(&[host, ("cookie", &cookie)])),
            Verdict::Pass
        );
        let bearer = format!("Bearer {t}");
        assert_eq!(
            g.check(
                &plain,
                &headers(&[("host", "localhost:4000"), ("authorization", &bearer)])
            ),
            Verdict::Pass
        );
        // Refused: no token, a wrong one, another port's cookie, a
        // rebinding host, another origin, a cross-site fetch.
        let refused = [
            g.check(&plain, &headers(&[host])),
            g.check(&with("token=b"), &headers(&[host])),
            g.check(&with(&format!("token={t}x")), &headers(&[host])),
            g.check(
                &plain,
                &headers(&[host, ("cookie", &format!("spillway_view_4001={t}"))]),
            ),
            g.check(
                &with(&format!("token={t}")),
                &headers(&[("host", "evil.example:4000")]),
            ),
            g.check(
                &with(&format!("token={t}")),
                &headers(&[("host", "127.0.0.1:4001")]),
            ),
            g.check(&with(&format!("token={t}")), &headers(&[])),
            g.check(
                &with(&format!("token={t}")),
                &headers(&[host, ("origin", "http://evil.example")]),
            ),
            g.check(
                &with(&format!("token={t}")),
                &headers(&[host, ("origin", "http://127.0.0.1:4001")]),
            ),
            g.check(
                &with(&format!("token={t}")),
                &headers(&[host, ("sec-fetch-site", "cross-site")]),
            ),
        ];
        for (i, v) in refused.iter().enumerate() {
            assert!(matches!(v, Verdict::Refuse(_)), "case {i}: {v:?}");
        }
        assert_eq!(
            g.check(
                &with(&format!("token={t}")),
                &headers(&[
                    host,
                    ("origin", "http://127.0.0.1:4000"),
                    ("sec-fetch-site", "same-origin")
                ]),
            ),
            Verdict::PassSetCookie
        );
    }
}
