//! Crash consistency of the session log, modelled with the store's crash
//! model (`spillway::CrashModel`): every change the log makes to its
//! file is recorded, and a power loss is simulated after each prefix of
//! them.
// Tests write files of their own; the rules of clippy.toml are the
// library's.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use serde_json::json;
use spillway::{CrashKind, CrashModel};
use spillway_registry::events::{replay_file, Event, LogSync, SessionLog};

/// A `tool/call` event of this id.
fn event(id: &str) -> Event {
    Event::ToolCall {
        call_id: id.into(),
        tool: "bash".into(),
        description: None,
        args: json!({ "command": "echo hi" }),
    }
}

/// The ids of the `tool/call` events a log replays, in order.
fn ids(path: &Path) -> Vec<String> {
    replay_file(path)
        .unwrap()
        .events
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCall { call_id, .. } => Some(call_id),
            _ => None,
        })
        .collect()
}

/// The session log in the same model: every event whose synced append had
/// returned survives a crash at any point, the log reopens, and a new event
/// is never lost to what the crash left.
#[test]
fn a_synced_session_log_event_survives_a_crash_at_every_point() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("logs");
    std::fs::create_dir(&root).unwrap();
    let model = CrashModel::new(&root).unwrap();
    let log =
        SessionLog::open_recorded(root.join("session.jsonl"), LogSync::EveryEvent, &model).unwrap();
    let opened = model.len();
    let mut returned = Vec::new();
    for i in 0..3 {
        log.append(&event(&format!("e{i}"))).unwrap();
        returned.push(model.len());
    }
    drop(log);
    for at in 0..=model.len() {
        for kind in [CrashKind::SyncedOnly, CrashKind::NamesWithoutData] {
            let after = dir.path().join(format!("log-{at}-{kind:?}"));
            model.materialize(at, kind, &after).unwrap();
            let path = after.join("session.jsonl");
            let what = format!("crash {kind:?} after {at} of {} changes", model.len());
            if at >= opened {
                assert!(path.exists(), "{what}: the log's name was lost");
            }
            let survived: Vec<String> = (0..3)
                .filter(|&i| at >= returned[i])
                .map(|i| format!("e{i}"))
                .collect();
            if path.exists() {
                // Reopen (a torn or empty file is repaired), append, replay.
                let log = SessionLog::open(&path, LogSync::EveryEvent).unwrap_or_else(|e| {
                    panic!("{what}: {e}");
                });
                log.append(&event("new")).unwrap();
                let got = ids(&path);
                assert_eq!(got.last().map(String::as_str), Some("new"), "{what}");
                for id in &survived {
                    assert!(got.contains(id), "{what}: {id} lost: {got:?}");
                }
            } else {
                assert!(survived.is_empty(), "{what}: events lost with the file");
            }
            std::fs::remove_dir_all(&after).unwrap();
        }
    }
}

/// The session log changes the disk through the same filesystem trait as
/// the store, so a fault plan reaches it too: a failed create, append,
/// fsync or directory fsync is an error of the call that met it, never a
/// success, and what returned before it replays whole.
#[test]
fn a_fault_in_each_change_the_session_log_makes_is_its_callers_error() {
    use spillway::{FaultPlan, FaultPoint, RealFs};
    use std::sync::Arc;

    const EIO: i32 = 5;
    for (point, nth) in [
        (FaultPoint::Create, 1),
        (FaultPoint::Write, 1),
        (FaultPoint::Write, 3),
        (FaultPoint::Fsync, 2),
        (FaultPoint::DirFsync, 1),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let plan = FaultPlan::new(point, nth, EIO);
        let fs = plan.fs(Arc::new(RealFs));
        let what = format!("{point:?} #{nth}");
        let log = match SessionLog::open_on(&path, LogSync::EveryEvent, fs) {
            Ok(log) => log,
            Err(e) => {
                // The header's own create, write, fsync or directory fsync.
                assert!(e.to_string().contains("Input/output"), "{what}: {e}");
                assert!(plan.calls(point) >= nth, "{what}");
                continue;
            }
        };
        let mut returned = Vec::new();
        let mut failed = false;
        for i in 0..4 {
            let id = format!("e{i}");
            match log.append(&event(&id)) {
                Ok(()) => returned.push(id),
                Err(e) => {
                    assert!(e.to_string().contains("Input/output"), "{what}: {e}");
                    failed = true;
                    break;
                }
            }
        }
        assert!(failed, "{what}: the planned fault was never met");
        drop(log);
        let replayed = ids(&path);
        assert!(replayed.starts_with(&returned), "{what}: {replayed:?}");
    }
}
