//! A whole content sent straight to its object key: a multipart upload at
//! the key itself, parts in parallel, completed create-only.
//!
//! When the caller holds the whole content its id is known before a byte
//! is sent, so nothing goes to a temporary key and nothing is copied. The
//! client crate completes its own uploads unconditionally, so the
//! `CompleteMultipartUpload` that publishes the object is a signed request
//! of ours carrying `If-None-Match: *`: an object already at the key is
//! never replaced, and "already there" (`412`) is a dedup hit.
//!
//! Like a create-only copy, the upload sits at an object's key, whose name
//! carries no time; a marker in `tmp/` names the key for as long as the
//! upload lives, so cleanup never aborts a live one (see
//! [`super::uploads`]).

use std::collections::VecDeque;

use bytes::Bytes;
use object_store::aws::AwsAuthorizer;
use object_store::client::{HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as Key;
use object_store::PutPayload;

use super::uploads::{elements, encode};
use super::{Listing, Remote};
use crate::store::{StoreError, StoreErrorKind};

/// Parts sent at once. The content is already in memory, so this bounds
/// only the requests the server sees, not memory.
const IN_FLIGHT: usize = 8;

/// A whole content of more stored bytes than this goes in parts; up to it,
/// in one `PUT` (four parts' worth: below that, the requests a multipart
/// upload adds cost more than its parallel parts save).
pub(super) const PARTS_FROM: usize = 4 * super::upload::PART;

/// How `CompleteMultipartUpload` answered.
#[derive(Debug, PartialEq, Eq)]
enum Completed {
    /// The object now holds the upload.
    Created,
    /// An object was already at the key (`412`), or another completion
    /// raced this one (`409`): the upload is not the object.
    Exists,
}

/// The `CompleteMultipartUpload` body naming `parts` in order.
fn completion_body(parts: &[PartId]) -> String {
    let mut xml = String::from("<CompleteMultipartUpload>");
    for (i, p) in parts.iter().enumerate() {
        let etag = p
            .content_id
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        xml.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
            i + 1
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    xml
}

/// What a completion's status and body say. S3 may answer `200` and still
/// fail (an `<Error>` in the body, sent after the status).
fn completion_outcome(status: u16, body: &str) -> Result<Completed, String> {
    let code = elements(body, "Code").first().map(|c| c.to_string());
    match (status, code.as_deref()) {
        (412, _) | (_, Some("PreconditionFailed")) => Ok(Completed::Exists),
        (409, _) | (_, Some("ConditionalRequestConflict")) => Ok(Completed::Exists),
        (200..=299, None) => Ok(Completed::Created),
        (_, code) => Err(format!(
            "HTTP {status}{}: {}",
            code.map(|c| format!(" ({c})")).unwrap_or_default(),
            body.trim()
        )),
    }
}

impl Listing {
    /// The URL of `key`, path-style below the endpoint (or the bucket's
    /// AWS host), every segment percent-encoded as SigV4 wants it.
    pub(super) fn key_url(&self, bucket: &str, key: &str) -> String {
        let mut url = self.base(bucket);
        for segment in key.split('/') {
            url.push('/');
            url.push_str(&encode(segment));
        }
        url
    }
}

impl Remote {
    /// Creates `key` with the whole content's stored `bytes` unless it
    /// exists: `Ok(false)` when an object was there. Up to [`PARTS_FROM`]
    /// (or over a client given for tests, which takes no signed requests of
    /// ours) in one create-only `PUT`; past it in parts of
    /// [`super::upload::PART`] at the key, whose upload a marker names for
    /// as long as it lives.
    pub(super) fn create_whole(&self, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        match &self.listing {
            Some(l) if bytes.len() > PARTS_FROM => {
                self.with_upload_marker(key, || self.upload_at(l, key, bytes))
            }
            _ => self.put_create(key, bytes),
        }
    }

    fn upload_at(&self, l: &Listing, key: &Key, bytes: Bytes) -> Result<bool, StoreError> {
        let id = self
            .block_on(l.s3.create_multipart(key))
            .map_err(|e| self.err("start upload", key, e))?;
        let sent = self.send_parts(l, key, &id, &bytes).and_then(|parts| {
            self.complete_create(l, key, &id, &parts)
                .map_err(|reason| StoreError::Remote {
                    op: "publish",
                    target: self.url_of(key).display().to_string(),
                    kind: StoreErrorKind::OtherIo,
                    source: reason.into(),
                })
        });
        match sent {
            Ok(Completed::Created) => Ok(true),
            Ok(Completed::Exists) => {
                let _ = self.block_on(l.s3.abort_multipart(key, &id));
                Ok(false)
            }
            Err(e) => {
                let _ = self.block_on(l.s3.abort_multipart(key, &id));
                Err(e)
            }
        }
    }

    /// Sends every part, [`IN_FLIGHT`] at a time, and returns their ids in
    /// order.
    fn send_parts(
        &self,
        l: &Listing,
        key: &Key,
        id: &str,
        bytes: &Bytes,
    ) -> Result<Vec<PartId>, StoreError> {
        let part = super::upload::PART;
        let count = bytes.len().div_ceil(part);
        let mut parts = Vec::with_capacity(count);
        let mut flying = VecDeque::new();
        let id = id.to_owned();
        for i in 0..count {
            let slice = bytes.slice(i * part..((i + 1) * part).min(bytes.len()));
            let (s3, at, upload) = (l.s3.clone(), key.clone(), id.clone());
            flying.push_back(
                self.rt().spawn(async move {
                    s3.put_part(&at, &upload, i, PutPayload::from(slice)).await
                }),
            );
            while flying.len() >= IN_FLIGHT || (i + 1 == count && !flying.is_empty()) {
                let Some(next) = flying.pop_front() else {
                    break;
                };
                match self.block_on(next) {
                    Ok(Ok(p)) => parts.push(p),
                    Ok(Err(e)) => {
                        flying.iter().for_each(|f| f.abort());
                        return Err(self.err("upload part", key, e));
                    }
                    Err(e) => {
                        flying.iter().for_each(|f| f.abort());
                        return Err(StoreError::Remote {
                            op: "upload part",
                            target: self.url_of(key).display().to_string(),
                            kind: StoreErrorKind::OtherIo,
                            source: e.to_string().into(),
                        });
                    }
                }
            }
        }
        Ok(parts)
    }

    /// `CompleteMultipartUpload` with `If-None-Match: *`, signed here.
    fn complete_create(
        &self,
        l: &Listing,
        key: &Key,
        id: &str,
        parts: &[PartId],
    ) -> Result<Completed, String> {
        let url = format!(
            "{}?uploadId={}",
            l.key_url(&self.url.bucket, key.as_ref()),
            encode(id)
        );
        let http = ReqwestConnector::default()
            .connect(&l.client_options)
            .map_err(|e| e.to_string())?;
        let body = completion_body(parts);
        self.block_on(async {
            let cred =
                l.s3.credentials()
                    .get_credential()
                    .await
                    .map_err(|e| e.to_string())?;
            let mut req = http::Request::builder()
                .method("POST")
                .uri(&url)
                .header("If-None-Match", "*")
                .header("Content-Type", "application/xml")
                .body(HttpRequestBody::from(body.into_bytes()))
                .map_err(|e| e.to_string())?;
            AwsAuthorizer::new(&cred, "s3", &l.region)
                .try_authorize(&mut req, None)
                .map_err(|e| e.to_string())?;
            let resp = http.execute(req).await.map_err(|e| e.to_string())?;
            let status = resp.status().as_u16();
            let text = resp.into_body().bytes().await.map_err(|e| e.to_string())?;
            completion_outcome(status, &String::from_utf8_lossy(&text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_completion_names_every_part_in_order() {
        let parts = ["\"a1\"", "\"b&2\""].map(|e| PartId {
            content_id: e.to_owned(),
        });
        assert_eq!(
            completion_body(&parts),
            "<CompleteMultipartUpload>\
             <Part><PartNumber>1</PartNumber><ETag>\"a1\"</ETag></Part>\
             <Part><PartNumber>2</PartNumber><ETag>\"b&amp;2\"</ETag></Part>\
             </CompleteMultipartUpload>"
        );
    }

    #[test]
    fn a_completion_is_read_from_its_status_and_its_body() {
        let ok =
            "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag></CompleteMultipartUploadResult>";
        assert_eq!(completion_outcome(200, ok), Ok(Completed::Created));
        assert_eq!(completion_outcome(412, ""), Ok(Completed::Exists));
        assert_eq!(completion_outcome(409, ""), Ok(Completed::Exists));
        // A failure S3 reports after a 200 status.
        let late = "<Error><Code>InternalError</Code><Message>try again</Message></Error>";
        let e = completion_outcome(200, late).unwrap_err();
        assert!(
            e.contains("InternalError") && e.contains("try again"),
            "{e}"
        );
        let pre = "<Error><Code>PreconditionFailed</Code></Error>";
        assert_eq!(completion_outcome(200, pre), Ok(Completed::Exists));
        assert!(completion_outcome(403, "<Error><Code>AccessDenied</Code></Error>").is_err());
    }
}
