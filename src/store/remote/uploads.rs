//! Multipart uploads left behind by writers that died: listed with a
//! signed `ListMultipartUploads` (the client crate has no call for it) and
//! aborted with the client's own `AbortMultipartUpload`.

use std::time::Duration;

use object_store::aws::AwsAuthorizer;
use object_store::client::{HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::multipart::MultipartStore;
use object_store::path::Path as Key;
use object_store::ObjectStoreExt;

use super::Remote;
use crate::store::StoreError;

/// One upload in progress: its key and id.
struct Pending {
    key: String,
    upload_id: String,
}

/// Percent-encodes a query value or a key's segment as SigV4 wants it.
pub(super) fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The text of each `<tag>…</tag>` in `xml`, in order.
pub(super) fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(&close) else { break };
        out.push(&after[..j]);
        rest = &after[j + close.len()..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

impl Remote {
    /// The multipart uploads in progress below `rel/`.
    fn pending_uploads(&self, rel: &str) -> Result<Vec<Pending>, StoreError> {
        let prefix = format!("{}/", self.key(rel));
        let target = format!("{}/{prefix}", self.display());
        let fail = |e: String| StoreError::Remote {
            op: "list uploads in",
            target: target.clone(),
            kind: crate::store::StoreErrorKind::OtherIo,
            source: e.into(),
        };
        // Over a client given for tests there is no S3 to list.
        let Some(l) = &self.listing else {
            return Ok(Vec::new());
        };
        let base = l.base(&self.url.bucket);
        let http = ReqwestConnector::default()
            .connect(&l.client_options)
            .map_err(|e| fail(e.to_string()))?;
        let mut out = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut url = format!("{base}/?prefix={}&uploads=", encode(&prefix));
            if let Some((k, u)) = &markers {
                url.push_str(&format!(
                    "&key-marker={}&upload-id-marker={}",
                    encode(k),
                    encode(u)
                ));
            }
            let body = self.block_on(async {
                let cred =
                    l.s3.credentials()
                        .get_credential()
                        .await
                        .map_err(|e| fail(e.to_string()))?;
                let mut req = http::Request::builder()
                    .method("GET")
                    .uri(&url)
                    .body(HttpRequestBody::empty())
                    .map_err(|e| fail(e.to_string()))?;
                AwsAuthorizer::new(&cred, "s3", &l.region)
                    .try_authorize(&mut req, None)
                    .map_err(|e| fail(e.to_string()))?;
                let resp = http.execute(req).await.map_err(|e| fail(e.to_string()))?;
                let status = resp.status();
                let body = resp
                    .into_body()
                    .bytes()
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let text = String::from_utf8_lossy(&body).into_owned();
                if !status.is_success() {
                    return Err(fail(format!("HTTP {status}: {text}")));
                }
                Ok(text)
            })?;
            for upload in elements(&body, "Upload") {
                if let (Some(k), Some(u)) = (
                    elements(upload, "Key").first(),
                    elements(upload, "UploadId").first(),
                ) {
                    out.push(Pending {
                        key: unescape(k),
                        upload_id: unescape(u),
                    });
                }
            }
            let truncated = elements(&body, "IsTruncated").first() == Some(&"true");
            let next = (
                elements(&body, "NextKeyMarker")
                    .first()
                    .map(|s| unescape(s)),
                elements(&body, "NextUploadIdMarker")
                    .first()
                    .map(|s| unescape(s)),
            );
            match (truncated, next) {
                (true, (Some(k), Some(u))) if markers.as_ref() != Some(&(k.clone(), u.clone())) => {
                    markers = Some((k, u));
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Aborts the multipart uploads that writers which died left behind,
    /// and returns how many. An upload below `tmp/` is abandoned once it is
    /// older than `grace` by the time in its key's name (a server's own
    /// upload times are not relied on: some emulators report a fixed one).
    /// An upload at an object's key (a create-only copy, or a whole content
    /// sent in parts, see [`super::direct`]) is abandoned when
    /// no copy marker younger than `grace` names that key: the uploads are
    /// listed before the markers, and a writer puts its marker before it
    /// starts the upload, so a live copy's marker is always seen.
    pub(crate) fn abort_stale_uploads(&self, grace: Duration) -> Result<usize, StoreError> {
        let now = crate::store::now_nanos();
        let young = |name: &str| {
            super::temp_stamp(name).map(|stamp| now.saturating_sub(stamp) <= grace.as_nanos())
        };
        let mut stale = Vec::new();
        for p in self.pending_uploads("tmp")? {
            let name = p.key.rsplit('/').next().unwrap_or("");
            if young(name) == Some(false) {
                stale.push(p);
            }
        }
        let copies = self.pending_uploads("objects")?;
        if !copies.is_empty() {
            let live = self.live_copies(&young)?;
            stale.extend(copies.into_iter().filter(|p| !live.contains(&p.key)));
        }
        let mut aborted = 0;
        let Some(l) = &self.listing else {
            return Ok(0);
        };
        for p in stale {
            let key = Key::from(p.key.as_str());
            if self
                .block_on(l.s3.abort_multipart(&key, &p.upload_id))
                .is_ok()
            {
                aborted += 1;
            }
        }
        Ok(aborted)
    }

    /// The object keys that copy markers `young` accepts name.
    fn live_copies(
        &self,
        young: &dyn Fn(&str) -> Option<bool>,
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        let mut live = std::collections::HashSet::new();
        for meta in self.list("tmp/")? {
            let name = meta.location.filename().unwrap_or("");
            if !name.ends_with(".copying") || young(name) != Some(true) {
                continue;
            }
            // A marker that went away meanwhile ended its copy.
            let body = self.block_on(async {
                let got = self.client.get(&meta.location).await?;
                got.bytes().await
            });
            match body {
                Ok(body) => {
                    live.insert(String::from_utf8_lossy(&body).into_owned());
                }
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.err("read", &meta.location, e)),
            }
        }
        Ok(live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_xml() {
        let xml = "<ListMultipartUploadsResult><Upload><Key>p/v1/tmp/1-2-3.tmp</Key><UploadId>a&amp;b</UploadId></Upload>\
                   <Upload><Key>x</Key><UploadId>y</UploadId></Upload><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>";
        let ups = elements(xml, "Upload");
        assert_eq!(ups.len(), 2);
        assert_eq!(unescape(elements(ups[0], "UploadId")[0]), "a&b");
        assert_eq!(elements(ups[1], "Key"), vec!["x"]);
        assert_eq!(encode("a b/c~"), "a%20b%2Fc~");
    }
}
