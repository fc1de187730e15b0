//! `spillway view` over HTTP: who it answers, what its API gives (cards as
//! the log holds them, pages of stored objects equal to `spillway show`,
//! search inside stored output), a log followed as it grows, a missing
//! object, and stopping.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{run_spillway, spillway_cmd};

/// A running viewer; stopped (SIGTERM, then killed) when dropped.
struct Viewer {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn view(store: &Path, args: &[&Path]) -> Viewer {
    let mut cmd = spillway_cmd();
    cmd.arg("--store").arg(store).arg("view").args(args);
    start(cmd)
}

/// Starts a `spillway … view …` command and reads its address.
fn start(mut cmd: std::process::Command) -> Viewer {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_prefix("spillway view: ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .trim();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    Viewer {
        child,
        port: port.parse().unwrap(),
        token: token.to_string(),
    }
}

/// One HTTP/1.1 request: the status, the headers (lowercase names) and the
/// body.
fn request(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let hs: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if hs
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked")
    {
        body = dechunk(&body);
    }
    (status, hs, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 4 + n..];
    }
}

impl Viewer {
    fn get(&self, path: &str) -> (u16, Value) {
        let bearer = format!("Bearer {}", self.token);
        let (status, _, body) = request(self.port, path, &[("Authorization", &bearer)]);
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }
}

/// A session made by a real run: a program whose first nested call's
/// output is spilled, and a term only the stored output holds.
fn session(dir: &Path) -> std::path::PathBuf {
    logged(
        dir,
        "const big = await tools.run({command: \"seq 1 6000 | sed 's/^/row /'; echo 'zebra-in-the-middle'; seq 1 3000 | sed 's/^/tail /'\"});\n\
         await tools.run({command: 'echo small'});\n\
         return big.length",
    )
}

/// `program` run by `spillway code` on the store `DIR/store`, logged in
/// `DIR/s.jsonl`: the log.
fn logged(dir: &Path, program: &str) -> std::path::PathBuf {
    let log = dir.join("s.jsonl");
    let out = run_spillway(
        &dir.join("store"),
        &["code", "--session-log", log.to_str().unwrap()],
        program.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    log
}

#[test]
fn a_viewer_answers_only_its_token_on_its_host_from_its_own_page() {
    let dir = tempfile::tempdir().unwrap();
    let log = session(dir.path());
    let v = view(&dir.path().join("store"), &[&log]);
    let host = format!("127.0.0.1:{}", v.port);
    let bearer = format!("Bearer {}", v.token);
    let with_token = format!("/api/sessions?token={}", v.token);
    let cookie = format!("spillway_view_{}={}", v.port, v.token);
    let refused: [(&str, Vec<(&str, &str)>); 7] = [
        ("/", vec![]),
        ("/api/sessions", vec![]),
        (
            "/api/sessions?token=0123456789abcdef0123456789abcdef",
            vec![],
        ),
        (&with_token, vec![("Host", "attacker.example")]),
        (&with_token, vec![("Host", "127.0.0.1:1")]),
        (&with_token, vec![("Origin", "http://attacker.example")]),
        (
            "/api/sessions",
            vec![("Authorization", &bearer), ("Sec-Fetch-Site", "cross-site")],
        ),
    ];
    for (path, headers) in &refused {
        let (status, _, _) = request(v.port, path, headers);
        assert_eq!(status, 403, "{path} {headers:?}");
    }
    // The token in the address: a cookie, and the address without it.
    let (status, headers, _) = request(v.port, &format!("/?token={}", v.token), &[]);
    assert_eq!(status, 303);
    let set = headers.iter().find(|(k, _)| k == "set-cookie").unwrap();
    assert!(
        set.1.starts_with(&cookie)
            && set.1.contains("HttpOnly")
            && set.1.contains("SameSite=Strict")
    );
    for auth in [
        ("Cookie", cookie.as_str()),
        ("Authorization", bearer.as_str()),
    ] {
        let (status, headers, body) = request(v.port, "/", &[auth, ("Host", &host)]);
        assert_eq!(status, 200);
        assert!(String::from_utf8_lossy(&body).contains("<input type=\"search\""));
        let csp = headers
            .iter()
            .find(|(k, _)| k == "content-security-policy")
            .unwrap();
        assert!(csp.1.contains("default-src 'none'"));
    }
    let (status, _, _) = request(
        v.port,
        "/api/sessions",
        &[
            ("Cookie", &cookie),
            ("Origin", &format!("http://localhost:{}", v.port)),
            ("Host", &format!("localhost:{}", v.port)),
        ],
    );
    assert_eq!(status, 200);
    // It listens on 127.0.0.1 and nowhere else.
    let listening: Vec<String> = std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .chain(
            std::fs::read_to_string("/proc/net/tcp6")
                .unwrap_or_default()
                .lines(),
        )
        .filter(|l| l.split_whitespace().nth(3) == Some("0A"))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .filter(|a| a.ends_with(&format!(":{:04X}", v.port)))
        .collect();
    assert_eq!(listening, vec![format!("0100007F:{:04X}", v.port)]);
}

#[test]
fn cards_pages_of_stored_objects_and_search_are_what_the_log_and_the_store_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let log = session(dir.path());
    let v = view(&store, &[&log]);
    let (status, s) = v.get("/api/sessions");
    assert_eq!(status, 200);
    assert_eq!(s["sessions"][0]["cards"], 1);
    assert_eq!(s["sessions"][0]["dialect"], "spillway");
    let (_, page) = v.get("/api/cards?session=0&offset=0&limit=10");
    assert_eq!(page["total"], 1);
    let card = &page["cards"][0];
    assert_eq!(card["kind"], "execute");
    assert_eq!(card["pending"], false);
    assert!(card["rawInput"].as_str().unwrap().contains("tools.run"));
    let d = card["dispatches"].as_array().unwrap();
    assert_eq!(d.len(), 2, "{card}");
    assert_eq!(d[1]["content"][0]["text"], "small\n");
    assert!(d[0]["subCallId"].as_str().unwrap().ends_with(":code:1"));
    // The first nested call's notice, expanded a page at a time, is
    // exactly `spillway show ID --lines A:B`.
    let n = &d[0]["notices"][0];
    let (id, lines) = (n["id"].as_str().unwrap(), n["lines"].as_str().unwrap());
    let shown = run_spillway(&store, &["show", id, "--lines", lines], b"");
    assert!(shown.status.success());
    for limit in [1000, 4096, 1 << 20] {
        let mut text = String::new();
        let mut next = Some(format!("lines={lines}"));
        let mut pages = 0;
        while let Some(sel) = next {
            let (status, p) = v.get(&format!("/api/object/{id}?{sel}&limit={limit}"));
            assert_eq!(status, 200, "{p}");
            assert!(p["text"].as_str().unwrap().len() <= limit);
            text.push_str(p["text"].as_str().unwrap());
            next = p["next"].as_str().map(str::to_owned);
            pages += 1;
        }
        assert_eq!(text.as_bytes(), &shown.stdout[..], "limit {limit}");
        assert_eq!(pages > 1, shown.stdout.len() > limit, "limit {limit}");
    }
    // A term only the stored output holds: found with spills=1 only.
    let (_, found) = v.get("/api/search?q=ZEBRA-in-the&spills=0");
    assert_eq!(found["hits"].as_array().unwrap().len(), 0);
    let (_, found) = v.get("/api/search?q=ZEBRA-in-the&spills=1");
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert_eq!(hits[0]["line"], 6001);
    assert_eq!(hits[0]["card"], 0);
    assert!(hits[0]["object"].as_str().unwrap().starts_with(id));
    let (_, found) = v.get("/api/search?q=small");
    assert_eq!(
        found["hits"].as_array().unwrap().len(),
        0,
        "the card's own text does not hold it"
    );
    // Bad requests get a clear error, not a crash.
    for (path, want) in [
        (format!("/api/object/{id}?lines=9:1"), 400),
        (format!("/api/object/{id}?lines=99999:"), 416),
        (format!("/api/object/{id}?lines=1:2&bytes=0:1"), 400),
        ("/api/object/nothex".to_string(), 400),
        ("/api/object/0123456789abcdef".to_string(), 404),
        ("/api/cards?session=7".to_string(), 404),
        ("/api/cards?offset=x".to_string(), 400),
    ] {
        let (status, body) = v.get(&path);
        assert_eq!(status, want, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}"
        );
    }
    // An object gone from the store says so on its notice; the rest works.
    let rm = run_spillway(&store, &["gc", "--max-bytes", "0"], b"");
    assert!(
        rm.status.success(),
        "{}",
        String::from_utf8_lossy(&rm.stderr)
    );
    let (status, body) = v.get(&format!("/api/object/{id}?lines={lines}"));
    assert_eq!(status, 404, "{body}");
    let (status, _) = v.get("/api/cards?session=0");
    assert_eq!(status, 200);
}

/// A log still being written: new calls, dispatches and results reach the
/// API and the event stream; torn and garbage lines are counted.
#[test]
fn a_log_being_written_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.jsonl");
    std::fs::write(&log, "{\"format\":\"spillway-session\",\"version\":1}\n").unwrap();
    let v = view(&dir.path().join("store"), &[&log]);
    let mut events = TcpStream::connect(("127.0.0.1", v.port)).unwrap();
    events
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        events,
        "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
        v.port, v.token
    )
    .unwrap();
    let append = |text: &str| {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    // What the stream sent, and how much of it earlier waits took.
    let (mut seen, mut taken) = (Vec::new(), 0);
    let mut wait_for = |needle: &str| {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            let text = String::from_utf8_lossy(&seen[taken..]).into_owned();
            if let Some(at) = text.find(needle) {
                // The rest of that event is taken with it.
                let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
                taken += end;
                return t.elapsed();
            }
            let mut buf = [0u8; 4096];
            if let Ok(n) = events.read(&mut buf) {
                seen.extend_from_slice(&buf[..n]);
            }
        }
        panic!("no {needle:?} in {}", String::from_utf8_lossy(&seen));
    };
    // Subscribed once the stream's headers are back.
    wait_for("text/event-stream");
    append(&format!(
        "{}\n",
        json!({"type": "tool/call", "callId": "c1", "tool": "run_code", "args": {"code": "return 1"}})
    ));
    let took = wait_for("\"cards\":1");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let (_, p) = v.get("/api/cards");
    assert_eq!(p["cards"][0]["pending"], true);
    append(&format!(
        "{}\n",
        json!({"type": "tool/code-dispatch-start", "subCallId": "c1:code:1", "parentCallId": "c1", "tool": "run", "args": {"command": "ls"}})
    ));
    wait_for("\"changed\":[0]");
    let (_, p) = v.get("/api/cards");
    assert_eq!(p["cards"][0]["dispatches"][0]["pending"], true);
    // Half a line waits for the rest; then the result is in.
    let result = json!({"type": "tool/result", "callId": "c1", "content": [{"type": "text", "text": "1"}], "isError": false}).to_string();
    let (a, b) = result.split_at(20);
    append(a);
    std::thread::sleep(Duration::from_millis(500));
    let (_, s) = v.get("/api/sessions");
    assert_eq!(s["sessions"][0]["badLines"], 0);
    append(&format!("{b}\nnot an event\n"));
    wait_for("\"badLines\":1");
    let (_, p) = v.get("/api/cards");
    assert_eq!(p["cards"][0]["pending"], false);
    assert_eq!(p["cards"][0]["content"][0]["text"], "1");
    let (_, s) = v.get("/api/sessions");
    assert_eq!(s["sessions"][0]["badLines"], 1);
    assert_eq!(
        s["sessions"][0]["bad"][0]["line"], 5,
        "header, call, start, result, then it"
    );
    // A bad line alone is news as well.
    append("still not an event\n");
    wait_for("\"badLines\":2");
}

/// DeepSeek Harness's log format: its header, its event envelope, its
/// field names, and the events no card shows.
#[test]
fn a_deepseek_harness_log_shows_one_card_per_outer_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let lines = [
        json!({"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0}),
        json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}),
        json!({"type": "tool/call", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1, "callId": "call_1", "name": "run_code", "arguments": "{\"code\":\"return 2\",\"description\":\"add\"}"}}),
        json!({"type": "tool/code-dispatch-start", "seq": 2, "time": 3, "data": {"rootCallId": "call_1", "parentCallId": "call_1", "subCallId": "call_1:code:0", "name": "bash", "arguments": {"command": "ls"}}}),
        json!({"type": "tool/code-dispatch", "seq": 3, "time": 4, "data": {"rootCallId": "call_1", "parentCallId": "call_1", "subCallId": "call_1:code:0", "name": "bash", "arguments": {"command": "ls"}, "isError": false, "content": [{"type": "text", "text": "a b"}]}}),
        json!({"type": "tool/result", "seq": 4, "time": 5, "data": {"turn": 1, "step": 1, "message": {"id": "m1", "role": "user", "source": {"kind": "tool"}, "content": [{"type": "tool-result", "toolCallId": "call_1", "content": [{"type": "text", "text": "2"}], "isError": false}]}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, text).unwrap();
    let v = view(&dir.path().join("store"), &[dir.path()]);
    let (_, s) = v.get("/api/sessions");
    assert_eq!(s["sessions"][0]["dialect"], "deepseek-harness");
    let (_, p) = v.get("/api/cards");
    assert_eq!(p["total"], 1);
    let c = &p["cards"][0];
    assert_eq!(
        (c["callId"].as_str(), c["title"].as_str()),
        (Some("call_1"), Some("add"))
    );
    assert_eq!(c["rawInput"], "return 2");
    assert_eq!(c["content"][0]["text"], "2");
    assert_eq!(c["dispatches"][0]["content"][0]["text"], "a b");
    assert_eq!(c["dispatches"][0]["tool"], "bash");
}

/// A JSON preview's markers expand by their pointer: the value it stands
/// for, read from the store.
#[test]
fn a_json_markers_pointer_reads_back_the_value_it_stands_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let log = logged(
        dir.path(),
        "return {name: 'report', rows: Array.from({length: 3000}, (_, i) => ({id: i, label: 'row ' + i}))}",
    );
    let v = view(&store, &[&log]);
    let (_, page) = v.get("/api/cards");
    let notices = page["cards"][0]["notices"].as_array().unwrap().clone();
    let marker = notices
        .iter()
        .find(|n| n["pointer"].is_string())
        .unwrap_or_else(|| panic!("no marker in {}", page["cards"][0]));
    let (id, pointer) = (
        marker["id"].as_str().unwrap(),
        marker["pointer"].as_str().unwrap(),
    );
    let q: String = pointer
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, p) = v.get(&format!("/api/object/{id}?pointer={q}"));
    assert_eq!(status, 200, "{p}");
    let value: Value = serde_json::from_str(p["text"].as_str().unwrap()).unwrap();
    let whole: Value = serde_json::from_str(
        &String::from_utf8(run_spillway(&store, &["show", id], b"").stdout).unwrap(),
    )
    .unwrap();
    assert_eq!(Some(&value), whole.pointer(pointer), "{pointer}");
}

/// `--open` hands the address to `$BROWSER`.
#[test]
fn open_hands_the_address_to_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let log = session(dir.path());
    let opener = dir.path().join("opener.sh");
    let got = dir.path().join("opened.txt");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$1\" > '{}'\n", got.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut cmd = spillway_cmd();
    cmd.env("BROWSER", &opener)
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["view", "--open"])
        .arg(&log);
    let v = start(cmd);
    let url = format!("http://127.0.0.1:{}/?token={}", v.port, v.token);
    let t = Instant::now();
    while std::fs::read_to_string(&got).map_or(true, |s| s.trim().is_empty()) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the opener never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), url);
}

#[test]
fn bad_sessions_are_clear_errors_and_an_interrupt_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let not_a_log = dir.path().join("notes.txt");
    std::fs::write(&not_a_log, "hello\n").unwrap();
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    for (args, code, says) in [
        (vec![dir.path().join("missing.jsonl")], 1, "missing.jsonl"),
        (vec![not_a_log.clone()], 1, "not a spillway session log"),
        (vec![empty_dir.clone()], 1, "holds no session log"),
        (vec![], 2, "SESSION"),
    ] {
        let out = spillway_cmd()
            .arg("--store")
            .arg(&store)
            .arg("view")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let log = session(dir.path());
    let mut v = view(&store, &[&log]);
    // A live stream open does not keep it from stopping.
    let mut events = TcpStream::connect(("127.0.0.1", v.port)).unwrap();
    write!(
        events,
        "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
        v.port, v.token
    )
    .unwrap();
    // Nor does a client that never finishes its request.
    let mut half = TcpStream::connect(("127.0.0.1", v.port)).unwrap();
    write!(half, "GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", v.port).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    unsafe_kill(v.child.id(), libc::SIGINT);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = v.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "still serving 5 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert!(TcpStream::connect(("127.0.0.1", v.port)).is_err());
}

fn unsafe_kill(pid: u32, sig: i32) {
    // SAFETY: a plain kill(2) on a child this test started.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0);
}
