//! The routes: the page, its script and style, and the JSON API under it.
//! Every route is behind the [`Guard`](crate::guard::Guard).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, Query, Request, State as Extract};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::Stream;
use serde_json::{json, Value};
use spillway::Store;
use spillway_process::Cancel;
use tokio::sync::broadcast::error::RecvError;

use crate::answer::{failure, number, reply, Failure};
use crate::assets;
use crate::guard::{Guard, Verdict};
use crate::objects::object_page;
use crate::search;
use crate::sessions::Sessions;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct State {
    pub sessions: Arc<Sessions>,
    pub store: Option<Store>,
    pub guard: Guard,
    /// Asked when the viewer stops: live streams end.
    pub stop: Cancel,
}

type Shared = Arc<State>;

/// The most cards one request returns.
const MAX_CARDS: usize = 500;
/// How long a search may take before it answers with what it found.
const SEARCH_TIME: Duration = Duration::from_secs(10);
/// The most hits a search returns.
const MAX_HITS: usize = 500;

pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(page))
        .route(
            "/app.js",
            get(|| async { asset(assets::SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { asset(assets::STYLE, "text/css; charset=utf-8") }),
        )
        .route("/api/sessions", get(sessions))
        .route("/api/cards", get(cards))
        .route("/api/object/{id}", get(object))
        .route("/api/search", get(search_route))
        .route("/api/events", get(events))
        .fallback(|| async {
            failure(StatusCode::NOT_FOUND, "no such page".into()).into_response()
        })
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Refuses what the guard refuses; sets the cookie when the token came in
/// the URL; adds the headers every answer carries.
async fn guard(Extract(st): Extract<Shared>, req: Request, next: Next) -> Response {
    let verdict = st.guard.check(req.uri(), req.headers());
    let mut response = match verdict {
        Verdict::Refuse(why) => failure(StatusCode::FORBIDDEN, why.into()).into_response(),
        Verdict::PassSetCookie if req.uri().path() == "/" => {
            // The token leaves the address bar (and the history) at once.
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::SEE_OTHER;
            r.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/"));
            r
        }
        Verdict::Pass | Verdict::PassSetCookie => next.run(req).await,
    };
    let h = response.headers_mut();
    if verdict == Verdict::PassSetCookie {
        if let Ok(v) = HeaderValue::from_str(&st.guard.set_cookie()) {
            h.insert(header::SET_COOKIE, v);
        }
    }
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn page() -> Response {
    asset(assets::PAGE, "text/html; charset=utf-8")
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// Runs blocking work (a file, the store) off the server's threads.
async fn blocking(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response()
    })
}

type Params = Query<HashMap<String, String>>;

async fn sessions(Extract(st): Extract<Shared>) -> Response {
    blocking(move || {
        let list: Vec<Value> = st
            .sessions
            .list
            .iter()
            .enumerate()
            .map(|(i, s)| s.summary(i))
            .collect();
        reply(json!({ "sessions": list, "store": st.store.is_some() }))
    })
    .await
}

async fn cards(Extract(st): Extract<Shared>, Query(q): Params) -> Response {
    blocking(move || {
        let args = (|| {
            Ok::<_, Failure>((
                number(&q, "session", 0)?,
                number(&q, "offset", 0)?,
                number(&q, "limit", 50)?.min(MAX_CARDS),
            ))
        })();
        let (session, offset, limit) = match args {
            Ok(a) => a,
            Err(r) => return r.into_response(),
        };
        let Some(s) = st.sessions.get(session) else {
            return failure(StatusCode::NOT_FOUND, format!("no session {session}")).into_response();
        };
        let index = s.index();
        match index.cards(offset, limit) {
            Ok(cards) => reply(json!({
                "session": session,
                "total": index.len(),
                "offset": offset,
                "cards": cards,
            })),
            Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        }
    })
    .await
}

async fn object(
    Extract(st): Extract<Shared>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Response {
    let Some(store) = st.store.clone() else {
        return failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "the viewer was started without a store".into(),
        )
        .into_response();
    };
    blocking(move || match object_page(&store, &id, &q) {
        Ok(v) => reply(v),
        Err(r) => r.into_response(),
    })
    .await
}

async fn search_route(Extract(st): Extract<Shared>, Query(q): Params) -> Response {
    let needle = q.get("q").cloned().unwrap_or_default();
    let spills = matches!(q.get("spills").map(String::as_str), Some("1" | "true"));
    let limit = match number(&q, "limit", 100) {
        Ok(n) => n.clamp(1, MAX_HITS),
        Err(r) => return r.into_response(),
    };
    blocking(move || {
        let store = if spills { st.store.as_ref() } else { None };
        let deadline = Instant::now() + SEARCH_TIME;
        reply(search::search(
            &st.sessions,
            store,
            &needle,
            limit,
            deadline,
        ))
    })
    .await
}

/// Server-sent events: `session` for each change of a log (its new card
/// count, the cards that changed), `resync` when this stream fell behind.
async fn events(
    Extract(st): Extract<Shared>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = st.sessions.changes.subscribe();
    let stream = futures_util::stream::unfold((rx, st.stop.clone()), |(mut rx, stop)| async move {
        loop {
            if stop.is_cancelled() {
                return None;
            }
            let event = match tokio::time::timeout(Duration::from_millis(250), rx.recv()).await {
                Err(_) => continue,
                Ok(Ok(message)) => SseEvent::default().event("session").data(message),
                Ok(Err(RecvError::Lagged(_))) => SseEvent::default().event("resync").data("{}"),
                Ok(Err(RecvError::Closed)) => return None,
            };
            return Some((Ok(event), (rx, stop)));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
