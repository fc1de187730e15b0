//! `run`, `ls`, `verify`, `gc`, `stats` and `config`, run for real.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

fn bin() -> Command {
    support::spillway_cmd()
}

fn sp(store: &Path, args: &[&str]) -> Output {
    bin().arg("--store").arg(store).args(args).output().unwrap()
}

fn sp_in(store: &Path, args: &[&str], input: &[u8]) -> Output {
    support::run_spillway(store, args, input)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn store() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    (d, s)
}

#[test]
fn run_passes_the_exit_status_through() {
    let (_d, s) = store();
    for code in [0, 1, 3, 42, 255] {
        let out = sp(
            &s,
            &["run", "--", "sh", "-c", &format!("echo hi; exit {code}")],
        );
        assert_eq!(out.status.code(), Some(code));
        assert_eq!(out.stdout, b"hi\n");
    }
    let out = sp(&s, &["run", "--json", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    let v = json(&out);
    assert_eq!(v["exit_code"], 7);
    assert!(v["signal"].is_null());
}

/// A reader that goes away (`| true`, `| head -1`) must never turn a failed
/// command into a success: `run` exits with the command's status.
#[test]
fn run_keeps_the_command_status_when_its_reader_goes_away() {
    let (_d, s) = store();
    for script in [
        "echo building; sleep 0.5; echo 'error: failed'; exit 3",
        "seq 1 1000000; exit 3",
    ] {
        for json in [false, true] {
            let mut args = vec!["--store", s.to_str().unwrap(), "run"];
            if json {
                args.push("--json");
            }
            args.extend(["--", "sh", "-c", script]);
            // The reader closes its end before spillway writes anything.
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            let status = bin().args(&args).stdout(writer).status().unwrap();
            assert_eq!(status.code(), Some(3), "{script} (json: {json})");
        }
    }
    // And a successful command still succeeds.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = bin()
        .args([
            "--store",
            s.to_str().unwrap(),
            "run",
            "--",
            "sh",
            "-c",
            "seq 1 100000",
        ])
        .stdout(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn run_reports_signals_as_128_plus_n() {
    let (_d, s) = store();
    for (sig, n) in [("TERM", 15), ("KILL", 9), ("INT", 2)] {
        let out = sp(
            &s,
            &[
                "run",
                "--json",
                "--",
                "sh",
                "-c",
                &format!("echo before; kill -{sig} $$"),
            ],
        );
        assert_eq!(out.status.code(), Some(128 + n), "{sig}");
        let v = json(&out);
        assert_eq!(v["signal"], n);
        assert!(v["exit_code"].is_null());
        assert_eq!(v["content"], "before\n");
    }
}

#[test]
fn run_keeps_stdout_and_stderr_in_arrival_order() {
    let (_d, s) = store();
    let script = "for i in 1 2 3 4 5 6; do echo out$i; echo err$i >&2; done";
    let out = sp(&s, &["run", "--", "sh", "-c", script]);
    let want: String = (1..=6).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn run_bounds_a_200_mib_output_and_stores_it() {
    let (_d, s) = store();
    let out = sp(
        &s,
        &[
            "run",
            "--json",
            "--durability",
            "relaxed",
            "--max-spill-bytes",
            "256MiB",
            "--",
            "sh",
            "-c",
            "yes 'all work and no play' | head -c 200M; echo FAILED >&2; exit 1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["total_bytes"].as_u64(), Some((200 << 20) + 7));
    assert!(v["content"].as_str().unwrap().len() <= 32 << 10);
    assert!(v["content"].as_str().unwrap().ends_with("FAILED\n"));
    assert_eq!(v["spill"]["bytes"].as_u64(), Some((200 << 20) + 7));
    let shown = sp(
        &s,
        &[
            "show",
            v["spill"]["id"].as_str().unwrap(),
            "--bytes",
            "209715200:",
        ],
    );
    assert_eq!(shown.stdout, b"FAILED\n");
}

#[test]
fn run_of_a_missing_command_is_a_one_line_error() {
    let (_d, s) = store();
    let out = sp(&s, &["run", "--", "/no/such/program", "arg"]);
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("spillway: run: cannot start /no/such/program"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
    let out = sp(&s, &["run"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Stores `n` distinct outputs; returns their ids.
fn fill(s: &Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let input = support::tool_output(100 + i as u64, 60_000);
            let v = json(&sp_in(
                s,
                &[
                    "apply",
                    "--json",
                    "--max-inline-bytes",
                    "2KiB",
                    "--durability",
                    "relaxed",
                ],
                &input,
            ));
            v["spill"]["id"].as_str().unwrap().to_string()
        })
        .collect()
}

fn set_mtime(path: &Path, ago: Duration) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
}

#[test]
fn ls_and_stats_describe_the_store() {
    let (_d, s) = store();
    let ids = fill(&s, 3);
    let v = json(&sp(&s, &["ls", "--json"]));
    let listed: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    for id in &ids {
        assert!(listed.contains(&id.as_str()));
    }
    for o in v.as_array().unwrap() {
        assert_eq!(o["compression"], "zstd");
        assert!(o["stored_bytes"].as_u64().unwrap() < o["bytes"].as_u64().unwrap());
    }
    let st = json(&sp(&s, &["stats", "--json"]));
    assert_eq!(st["objects"], 3);
    let bytes: u64 = v
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(st["bytes"].as_u64(), Some(bytes));
    assert!(st["ratio"].as_f64().unwrap() > 1.0);
    let text = String::from_utf8(sp(&s, &["ls"]).stdout).unwrap();
    assert_eq!(text.lines().count(), 4);
}

/// Every form a notice template can print protects its object: the full
/// id, the object's path, and a short id.
#[test]
fn gc_keeps_objects_a_log_names_by_path_or_by_short_id() {
    let (d, s) = store();
    let config = d.path().join("config.toml");
    std::fs::write(
        &config,
        "[policy.notice]\nstored = \"Full output: {path}\"\n",
    )
    .unwrap();
    let with_config = |args: &[&str], input: &[u8]| {
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        sp_in(&s, &all, input)
    };
    let by_path = json(&with_config(
        &["apply", "--json"],
        (0..9000)
            .map(|i| format!("by path {i}\n"))
            .collect::<String>()
            .as_bytes(),
    ));
    let path = by_path["spill"]["path"].as_str().unwrap().to_owned();
    assert!(by_path["content"].as_str().unwrap().contains(&path));
    assert!(!by_path["content"].as_str().unwrap().contains("blake3:"));
    let short = json(&sp_in(
        &s,
        &["apply", "--json"],
        "by short id\n".repeat(9000).as_bytes(),
    ));
    let short_id = short["spill"]["id"].as_str().unwrap()[..7 + 12].to_owned();
    let unnamed = json(&sp_in(
        &s,
        &["apply", "--json"],
        "nobody\n".repeat(9000).as_bytes(),
    ));
    let session = d.path().join("session.jsonl");
    std::fs::write(
        &session,
        format!(
            "{}\n{{\"see\":\"{short_id}\"}}\n",
            serde_json::json!({ "content": by_path["content"] })
        ),
    )
    .unwrap();
    let out = sp(
        &s,
        &[
            "gc",
            "--max-age",
            "0s",
            "--keep-referenced-by",
            session.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    assert_eq!(report["kept_referenced"], 2, "{report}");
    let removed: Vec<&str> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(removed, [unnamed["spill"]["id"].as_str().unwrap()]);
    assert!(Path::new(&path).exists());
}

#[test]
fn gc_honours_the_quota_the_age_and_session_references() {
    let (d, s) = store();
    let ids = fill(&s, 6);
    let objects = json(&sp(&s, &["ls", "--json"]));
    let path_of = |id: &str| -> PathBuf {
        PathBuf::from(
            objects
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["id"] == id)
                .unwrap()["path"]
                .as_str()
                .unwrap(),
        )
    };
    // Ages: ids[0] is the oldest.
    for (i, id) in ids.iter().enumerate() {
        set_mtime(&path_of(id), Duration::from_secs(3600 * (10 - i as u64)));
    }
    let session = d.path().join("session.jsonl");
    std::fs::write(
        &session,
        format!("{{\"type\":\"tool/result\",\"spill\":\"{}\"}}\n", ids[0]),
    )
    .unwrap();

    // Dry run removes nothing.
    let dry = json(&sp(&s, &["gc", "--json", "--max-bytes", "0", "--dry-run"]));
    assert_eq!(dry["removed"].as_array().unwrap().len(), 6);
    assert_eq!(json(&sp(&s, &["stats", "--json"]))["objects"], 6);

    // Age: objects unused for more than 7.5 hours go, except the referenced one.
    let r = json(&sp(
        &s,
        &[
            "gc",
            "--json",
            "--max-age",
            "7h30m",
            "--keep-referenced-by",
            session.to_str().unwrap(),
        ],
    ));
    let removed: Vec<&str> = r["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(removed, vec![ids[1].as_str(), ids[2].as_str()]);
    assert_eq!(r["kept_referenced"], 1);

    // Quota: least recently used first, the referenced one kept.
    let total: u64 = ids[3..]
        .iter()
        .map(|id| std::fs::metadata(path_of(id)).unwrap().len())
        .sum();
    let keep_size = std::fs::metadata(path_of(&ids[0])).unwrap().len();
    let quota = keep_size + total - 1;
    let r = json(&sp(
        &s,
        &[
            "gc",
            "--json",
            "--max-bytes",
            &quota.to_string(),
            "--keep-referenced-by",
            session.to_str().unwrap(),
        ],
    ));
    let removed: Vec<&str> = r["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        removed,
        vec![ids[3].as_str()],
        "only the least recently used goes"
    );
    assert!(r["remaining_bytes"].as_u64().unwrap() <= quota);
    assert!(
        sp(&s, &["show", &ids[0]]).status.success(),
        "a referenced object survives"
    );
    let text = String::from_utf8(sp(&s, &["gc", "--max-bytes", "1GiB"]).stdout).unwrap();
    assert!(text.contains("removed 0 objects"), "{text}");
}

#[test]
fn verify_finds_quarantines_and_reports_a_corrupt_object() {
    let (_d, s) = store();
    let ids = fill(&s, 2);
    assert!(sp(&s, &["verify"]).status.success());
    let objects = json(&sp(&s, &["ls", "--json"]));
    let victim = objects
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == ids[1])
        .unwrap();
    let path = PathBuf::from(victim["path"].as_str().unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    // A temp file of a dead writer, old enough to go.
    let tmp = s.join("v1/tmp/12345-1-0.tmp");
    std::fs::write(&tmp, b"partial").unwrap();
    set_mtime(&tmp, Duration::from_secs(3600));

    let out = sp(&s, &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r = json(&out);
    assert_eq!(r["ok"], 1);
    assert_eq!(r["corrupt"][0]["id"], ids[1]);
    assert!(r["corrupt"][0]["quarantined"]
        .as_str()
        .unwrap()
        .contains("quarantine"));
    assert_eq!(r["temp_removed"], 1);
    assert!(!path.exists() && !tmp.exists());
    // The corrupt object is gone from the store; the good one still reads.
    assert_eq!(sp(&s, &["show", &ids[1]]).status.code(), Some(1));
    assert!(sp(&s, &["show", &ids[0]]).status.success());
    assert!(sp(&s, &["verify"]).status.success());
}

#[test]
fn gc_never_removes_an_object_a_concurrent_writer_just_reported() {
    let (_d, s) = store();
    let input = support::tool_output(999, 80_000);
    let apply = |s: &Path| {
        json(&sp_in(
            s,
            &[
                "apply",
                "--json",
                "--max-inline-bytes",
                "2KiB",
                "--durability",
                "relaxed",
            ],
            &input,
        ))
    };
    let first = apply(&s);
    let path = PathBuf::from(first["spill"]["path"].as_str().unwrap());
    for round in 0..20 {
        // Make the object look stale, then race a gc that removes stale
        // objects against a writer that reuses it.
        if path.exists() {
            set_mtime(&path, Duration::from_secs(7200));
        }
        let gc = bin()
            .arg("--store")
            .arg(&s)
            .args(["gc", "--max-age", "1h"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let v = apply(&s);
        let id = v["spill"]["id"].as_str().unwrap();
        // Reported just now, so it must exist now and after gc finishes
        // (its mtime is fresh, so gc's age rule no longer applies to it).
        assert!(
            Path::new(v["spill"]["path"].as_str().unwrap()).exists(),
            "round {round}"
        );
        let mut gc = gc;
        assert!(gc.wait().unwrap().success());
        assert!(
            sp(&s, &["show", id]).status.success(),
            "round {round}: object lost"
        );
    }
}

#[test]
fn config_layers_file_then_env_then_flags_and_names_each_source() {
    let (d, s) = store();
    let file = d.path().join("config.toml");
    std::fs::write(&file, "store = \"/from/file\"\n[policy]\nmax_inline_bytes = \"16KiB\"\nhead_percent = 10\nzstd_level = 3\n").unwrap();
    let out = bin()
        .args([
            "--config",
            file.to_str().unwrap(),
            "config",
            "--json",
            "--head-percent",
            "40",
        ])
        .env("SPILLWAY_ZSTD_LEVEL", "5")
        .output()
        .unwrap();
    let v = json(&out);
    let p = &v["policy"];
    assert_eq!(p["max_inline_bytes"]["value"], 16384);
    assert!(p["max_inline_bytes"]["source"]
        .as_str()
        .unwrap()
        .starts_with("file "));
    assert_eq!(p["zstd_level"]["value"], 5);
    assert_eq!(p["zstd_level"]["source"], "env SPILLWAY_ZSTD_LEVEL");
    assert_eq!(p["head_percent"]["value"], 40);
    assert_eq!(p["head_percent"]["source"], "flag");
    assert_eq!(p["durability"]["source"], "default");
    assert_eq!(v["store"]["value"], "/from/file");
    // --store beats the file.
    let v = json(
        &bin()
            .args(["--config", file.to_str().unwrap(), "--store"])
            .arg(&s)
            .args(["config", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(v["store"]["source"], "flag");

    // Bad layers are one-line errors naming the culprit.
    std::fs::write(&file, "[policy]\nmax_inline_byte = 5\n").unwrap();
    let out = bin()
        .args(["--config", file.to_str().unwrap(), "config"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.starts_with("spillway: config ") && err.contains("max_inline_byte"),
        "{err}"
    );
    let out = bin()
        .args(["config"])
        .env("SPILLWAY_HEAD_PERCENT", "lots")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SPILLWAY_HEAD_PERCENT"), "{err}");
    let out = bin()
        .args(["--config", "/no/such/config.toml", "config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// Later layers override earlier ones without conflict, and `config`'s
/// output loads back as the same configuration.
#[test]
fn later_layers_override_and_config_output_loads_back() {
    let (d, s) = store();
    let file = d.path().join("config.toml");
    std::fs::write(
        &file,
        "[policy]\nzstd_level = 3\nhead_percent = 20\n[policy.notice]\nstored = \"Full: {id} \\\"q\\\" {path}\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let value = |out: &Output, k: &str| json(out)["policy"][k]["value"].clone();
    // A flag that says none drops the file's level.
    let out = sp(
        &s,
        &["--config", f, "config", "--json", "--compress", "none"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(value(&out, "compression"), "none");
    assert!(value(&out, "zstd_level").is_null());
    // The same through the environment.
    let out = bin()
        .env("SPILLWAY_ZSTD_LEVEL", "3")
        .args([
            "--store",
            s.to_str().unwrap(),
            "config",
            "--json",
            "--compress",
            "none",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A level over a file that says none asks for zstd.
    let none = d.path().join("none.toml");
    std::fs::write(&none, "[policy]\ncompression = \"none\"\n").unwrap();
    let out = sp(
        &s,
        &[
            "--config",
            none.to_str().unwrap(),
            "config",
            "--json",
            "--level",
            "5",
        ],
    );
    assert_eq!(value(&out, "compression"), "zstd");
    assert_eq!(value(&out, "zstd_level"), 5);
    // One layer that says both is still a conflict.
    let both = d.path().join("both.toml");
    std::fs::write(&both, "[policy]\ncompression = \"none\"\nzstd_level = 2\n").unwrap();
    let out = sp(&s, &["--config", both.to_str().unwrap(), "config"]);
    assert_eq!(out.status.code(), Some(1));

    // `config > file` loads back as the same configuration.
    let first = sp(&s, &["--config", f, "config"]);
    assert!(first.status.success());
    let again = d.path().join("again.toml");
    std::fs::write(&again, &first.stdout).unwrap();
    let a = json(&sp(&s, &["--config", f, "config", "--json"]));
    let b = json(&sp(
        &s,
        &["--config", again.to_str().unwrap(), "config", "--json"],
    ));
    for k in [
        "compression",
        "zstd_level",
        "head_percent",
        "max_inline_bytes",
        "notice",
    ] {
        assert_eq!(a["policy"][k]["value"], b["policy"][k]["value"], "{k}");
    }
    assert_eq!(
        b["policy"]["notice"]["value"]["stored"],
        "Full: {id} \"q\" {path}"
    );
}

/// Maintenance works while the harness's policy settings are wrong; only
/// the commands that apply a policy check it.
#[test]
fn a_bad_policy_setting_only_breaks_commands_that_apply_a_policy() {
    let (d, s) = store();
    let st = s.to_str().unwrap();
    fill(&s, 1);
    let bad_file = d.path().join("bad.toml");
    std::fs::write(
        &bad_file,
        "[policy]\nhead_percent = 150\ncompression = \"brotli\"\n",
    )
    .unwrap();
    let envs: [(&str, &str); 2] = [
        ("SPILLWAY_HEAD_PERCENT", "150"),
        ("SPILLWAY_COMPRESSION", "bogus"),
    ];
    for (var, val) in envs {
        for cmd in [
            &["ls"][..],
            &["stats"],
            &["verify"],
            &["gc", "--max-bytes", "1GiB"],
        ] {
            let out = bin()
                .env(var, val)
                .args(["--store", st])
                .args(cmd)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{var}={val} {cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = bin()
            .env(var, val)
            .args(["--store", st, "apply"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{var}={val} apply");
    }
    for cmd in [&["ls"][..], &["stats"], &["verify"]] {
        let out = bin()
            .args(["--store", st, "--config", bad_file.to_str().unwrap()])
            .args(cmd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = bin()
        .args([
            "--store",
            st,
            "--config",
            bad_file.to_str().unwrap(),
            "apply",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("policy"));
}

/// A notice's range into an object cut at `max_spill_bytes` runs past what
/// was stored: `show` writes what there is and says what is missing.
#[test]
fn show_says_when_a_range_runs_past_what_was_stored() {
    let (_d, s) = store();
    let input: String = (1..=20_000).map(|i| format!("line {i}\n")).collect();
    let v = json(&sp_in(
        &s,
        &[
            "apply",
            "--json",
            "--max-spill-bytes",
            "4KiB",
            "--compress",
            "none",
        ],
        input.as_bytes(),
    ));
    assert_eq!(v["spill"]["truncated"], true);
    let content = v["content"].as_str().unwrap();
    assert!(
        content.contains("only the first 4096 bytes could be stored"),
        "{content}"
    );
    assert!(!content.contains("Full output"), "{content}");
    let id = v["spill"]["id"].as_str().unwrap();
    let [a, b] = [0, 1].map(|i| v["omitted_range"][i].as_u64().unwrap());
    // The notice's range starts past the stored part: an error that says so.
    let out = sp(&s, &["show", id, "--lines", &format!("{a}:{b}")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lines"), "{err}");
    // A range that starts inside and runs past: what there is, and a word.
    let out = sp(&s, &["show", id, "--lines", "460:480"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("past the end"), "{err}");
    assert!(out.stdout.starts_with(b"line 460\n"));
    // A range inside the object is fine.
    let ok = sp(&s, &["show", id, "--lines", "1:3"]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(ok.stdout, b"line 1\nline 2\nline 3\n");
    // An object stored whole: the error gives its size and blames no cut.
    let small: String = (1..=1000).map(|i| format!("{i:04}\n")).collect();
    let whole = put(&s, small.as_bytes());
    let out = sp(&s, &["show", &whole, "--lines", "999:1002"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"0999\n1000\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("which holds 5000 bytes in 1000 lines"),
        "{err}"
    );
    assert!(!err.contains("only what was stored"), "{err}");
    let out = sp(&s, &["show", &whole, "--lines", "1001:1002"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has 1000 lines"), "{err}");
}

/// SIGTERM (or Ctrl-C) on `run`: the command gets the signal, the output so
/// far is stored and printed as a bounded preview, no temp file is left,
/// and the exit status is 128 + N.
#[test]
fn run_passes_a_signal_on_and_keeps_the_output_so_far() {
    for (sig, n) in [("-TERM", 15), ("-INT", 2)] {
        let (_d, s) = store();
        let child = bin()
            .args([
                "--store",
                s.to_str().unwrap(),
                "run",
                "--json",
                "--max-inline-bytes",
                "4KiB",
            ])
            .args([
                "--",
                "sh",
                "-c",
                "seq 1 200000; echo LAST_BEFORE_SIGNAL; sleep 30",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(800));
        let kill = Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128 + n), "{sig}");
        let v = json(&out);
        assert!(
            v["content"]
                .as_str()
                .unwrap()
                .ends_with("LAST_BEFORE_SIGNAL\n"),
            "{sig}"
        );
        assert!(v["content"].as_str().unwrap().len() <= 4096);
        let id = v["spill"]["id"].as_str().unwrap();
        let shown = sp(&s, &["show", id]);
        assert!(shown.stdout.starts_with(b"1\n2\n3\n"));
        assert_eq!(count_entries(&s.join("v1/tmp")), 0, "{sig}: temp file left");
    }
}

fn count_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// A background child holding the output does not hang `run`; `--timeout`
/// kills the command's process group and exits 124 with the output kept.
#[test]
fn run_returns_despite_a_background_child_and_honours_a_timeout() {
    let (_d, s) = store();
    let st = s.to_str().unwrap();
    let t = std::time::Instant::now();
    let out = bin()
        .args(["--store", st, "run", "--json", "--drain", "1s", "--"])
        .args(["sh", "-c", "echo serving; (sleep 30; echo late) & exit 0"])
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["content"], "serving\n");
    assert_eq!(v["output_cut"], true);
    assert!(String::from_utf8_lossy(&out.stderr).contains("still holds its output"));

    let t = std::time::Instant::now();
    let out = bin()
        .args(["--store", st, "run", "--json", "--timeout", "1s", "--"])
        .args(["sh", "-c", "echo working; sleep 30 & sleep 30"])
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(124));
    let v = json(&out);
    assert_eq!(v["content"], "working\n");
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["output_cut"], false, "the whole group died");
    assert!(String::from_utf8_lossy(&out.stderr).contains("timed out after 1s"));
}

/// Stores `data` and returns the object's id.
fn put(s: &Path, data: &[u8]) -> String {
    let out = sp_in(s, &["apply", "--json", "--max-inline-bytes", "1KiB"], data);
    json(&out)["spill"]["id"].as_str().unwrap().to_string()
}

#[test]
fn grep_prints_what_grep_n_prints() {
    // GNU grep on the same bytes is the oracle: the same lines, numbers,
    // context markers and group separators.
    let (_dir, s) = store();
    let mut data = String::new();
    for i in 1..=30_000 {
        data.push_str(&match i % 1000 {
            0 => format!("test_{i} FAILED: assertion failed\n"),
            500 => format!("warning: test_{i} is slow\n"),
            _ => format!("test_{i} ok\n"),
        });
    }
    let file = s.parent().unwrap().join("log.txt");
    std::fs::write(&file, &data).unwrap();
    let id = put(&s, data.as_bytes());
    for (pattern, extra) in [
        ("FAILED", vec![]),
        ("FAILED|warning", vec!["-C", "2"]),
        ("failed", vec!["-i", "-A", "1"]),
        ("^test_1[0-9]{3} ok$", vec!["-B", "3"]),
        // Context of 0 still separates groups.
        ("FAILED", vec!["-C", "0"]),
        ("FAILED|warning", vec!["-A", "0"]),
        ("warning", vec!["-B", "0", "-A", "1"]),
        // Trailing context after the last match -m allows, matches in it
        // printed as context.
        ("test_[1-5] ", vec!["-m", "1", "-C", "3"]),
        ("FAILED|warning|test_1[0-9]{3} ", vec!["-m", "3", "-A", "2"]),
    ] {
        let mut args = vec!["grep", &id, pattern, "--max-bytes", "64MiB"];
        args.extend(&extra);
        let ours = sp(&s, &args);
        assert_eq!(
            ours.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let theirs = Command::new("grep")
            .args(["-n", "-E"])
            .args(&extra)
            .arg(pattern)
            .arg(&file)
            .output()
            .unwrap();
        // Past -m, the listing ends with the note of how to continue,
        // which grep has no counterpart of.
        let ours: String = String::from_utf8_lossy(&ours.stdout)
            .lines()
            .filter(|l| !l.starts_with("[spillway: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            ours,
            String::from_utf8_lossy(&theirs.stdout),
            "pattern {pattern} {extra:?}"
        );
    }
}

#[test]
fn grep_stays_within_its_budget_and_continues_exactly() {
    let (_dir, s) = store();
    let data: String = (1..=20_000)
        .map(|i| format!("{i} {}\n", if i % 3 == 0 { "error" } else { "fine" }))
        .collect();
    let id = put(&s, data.as_bytes());
    let mut from = "1".to_string();
    let mut seen = Vec::new();
    loop {
        let out = sp(
            &s,
            &[
                "grep",
                &id,
                "error",
                "--max-bytes",
                "4KiB",
                "--from-line",
                &from,
            ],
        );
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.len() <= 4096, "{} bytes", text.len());
        let mut next = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("[spillway: ") {
                // The note names the exact command to continue with.
                assert!(
                    rest.contains(&format!(
                        "grep {} error --max-bytes 4096 --from-line ",
                        &id[..23]
                    )),
                    "{rest}"
                );
                next = Some(
                    rest.rsplit(' ')
                        .next()
                        .unwrap()
                        .trim_end_matches(']')
                        .to_string(),
                );
            } else {
                seen.push(line.split(':').next().unwrap().parse::<u64>().unwrap());
            }
        }
        match next {
            Some(n) => from = n,
            None => break,
        }
    }
    let want: Vec<u64> = (1..=20_000).filter(|i| i % 3 == 0).collect();
    assert_eq!(seen, want);
}

/// A matching line longer than the page: the continuation printed, run as
/// it is, lists the next match every time and ends.
#[test]
fn grep_continuations_run_as_printed_always_make_progress() {
    let (_dir, s) = store();
    let data: String = (1..=6)
        .map(|i| format!("{i} error {}\n", "y".repeat(1_500)))
        .collect();
    let id = put(&s, data.as_bytes());
    let mut args: Vec<String> = ["grep", &id, "error", "--max-bytes", "600"]
        .map(String::from)
        .to_vec();
    let mut seen = Vec::new();
    for _ in 0..20 {
        let strs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sp(&s, &strs);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.len() <= 600, "{} bytes: {text}", text.len());
        let mut next = None;
        for line in text.lines() {
            match line.split_once("continue with: spillway ") {
                Some((_, cmd)) => {
                    next = Some(
                        cmd.trim_end_matches(']')
                            .split(' ')
                            .map(String::from)
                            .collect(),
                    )
                }
                None => seen.push(line.split(':').next().unwrap().parse::<u64>().unwrap()),
            }
        }
        match next {
            Some(n) => {
                let n: Vec<String> = n;
                // `--store DIR` first: sp() passes the store itself.
                assert_eq!(n[0], "--store");
                args = n[2..].to_vec();
                assert!(args.contains(&"--max-bytes".to_string()), "{args:?}");
            }
            None => break,
        }
    }
    assert_eq!(seen, (1..=6).collect::<Vec<u64>>());
}

/// A command that ignores SIGTERM: killed after the grace period, or at
/// once at a second signal; the output so far is kept and stored.
#[test]
fn run_kills_a_command_that_ignores_the_signal() {
    for second_signal in [false, true] {
        let (_d, s) = store();
        let child = bin()
            .args(["--store", s.to_str().unwrap(), "run", "--json"])
            .args(["--max-inline-bytes", "4KiB", "--kill-grace", "1s"])
            .args([
                "--",
                "sh",
                "-c",
                "trap '' TERM; seq 1 100000; echo LAST_BEFORE_SIGNAL; sleep 30",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(800));
        let term = || {
            let kill = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(kill.success());
        };
        let started = std::time::Instant::now();
        term();
        if second_signal {
            std::thread::sleep(Duration::from_millis(200));
            term();
        }
        let out = child.wait_with_output().unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{took:?}");
        if second_signal {
            assert!(took < Duration::from_millis(900), "{took:?}");
        } else {
            assert!(took >= Duration::from_secs(1), "{took:?}");
        }
        assert_eq!(out.status.code(), Some(128 + 15));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("did not stop on signal 15"), "{err}");
        let v = json(&out);
        let content = v["content"].as_str().unwrap();
        assert!(content.ends_with("LAST_BEFORE_SIGNAL\n"), "{content}");
        let id = v["spill"]["id"].as_str().unwrap();
        assert!(sp(&s, &["show", id]).stdout.starts_with(b"1\n2\n3\n"));
    }
}

#[test]
fn a_zero_timeout_is_refused() {
    let (_dir, s) = store();
    let out = sp(&s, &["run", "--timeout", "0s", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a timeout of 0 would kill the command at once"),
        "{err}"
    );
}

#[test]
fn grep_exit_codes_and_bad_input() {
    let (_dir, s) = store();
    let id = put(&s, "alpha\nbeta\n".repeat(5000).as_bytes());
    assert_eq!(sp(&s, &["grep", &id, "gamma"]).status.code(), Some(1));
    let bad = sp(&s, &["grep", &id, "(unclosed"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("does not parse"), "{err}");
    // Every error is one line.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(sp(&s, &["grep", "not-an-id!", "x"]).status.code(), Some(2));
    assert_eq!(
        sp(&s, &["grep", &id, "x", "--from-line", "0"])
            .status
            .code(),
        Some(2)
    );
    let missing = sp(
        &s,
        &[
            "grep",
            "blake3:0000000000000000000000000000000000000000000000000000000000000000",
            "x",
        ],
    );
    assert_eq!(missing.status.code(), Some(1));
    let j = json(&sp(
        &s,
        &["grep", &id, "beta", "--max-count", "3", "--json"],
    ));
    assert_eq!(j["matches"], 3);
    assert_eq!(j["more_matches"], 4997);
    assert_eq!(j["lines"][0]["line"], 2);
    assert!(j["continue"].as_str().unwrap().ends_with("--from-line 8"));
}

/// The guide's JSON preview example, run as written (another store path),
/// gives the guide's output; its pointer reads back the failing record.
#[test]
fn the_guide_json_example_prints_what_the_guide_shows() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guide.md"))
            .unwrap();
    let section = &readme[readme.find("## JSON previews").expect("the section")..];
    let block = |from: usize, lang: &str| -> String {
        let open = format!("```{lang}\n");
        let start = section[from..].find(&open).unwrap() + from + open.len();
        let end = section[start..].find("```").unwrap() + start;
        section[start..end].to_string()
    };
    let commands = block(0, "sh");
    assert!(commands.contains("apply --format json --max-inline-bytes 1KiB < results.json"));
    let shown = block(section.find("```json").unwrap(), "json");
    // The document the README's python line writes (json.dumps, then print).
    let results: Vec<String> = (0..20_000)
        .map(|i| format!("{{\"test\": \"t{i}\", \"ok\": {}}}", i != 7000))
        .collect();
    let doc = format!(
        "{{\"status\": \"failed\", \"results\": [{}], \"summary\": {{\"passed\": 19999, \"failed\": 1}}}}\n",
        results.join(", ")
    );
    // A store path as long as the README's, so the read hints, and with
    // them the preview's cut, are the same length.
    let dir = tempfile::Builder::new()
        .prefix("")
        .rand_bytes("spill-demo".len())
        .tempdir_in("/tmp")
        .expect(
            "this test needs a writable /tmp: the README's example it runs names /tmp/spill-demo",
        );
    let store = dir.path().to_path_buf();
    assert_eq!(store.to_string_lossy().len(), "/tmp/spill-demo".len());
    let out = sp_in(
        &store,
        &["apply", "--format", "json", "--max-inline-bytes", "1KiB"],
        doc.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).unwrap();
    let quoted = spillway::shell_quote(&store.to_string_lossy());
    assert_eq!(
        got.trim_end(),
        shown.trim_end().replace("/tmp/spill-demo", &quoted)
    );
    let id = &got[got.find("show ").unwrap() + 5..][..23];
    let back = sp(&store, &["show", id, "--pointer", "/results/7000"]);
    assert_eq!(
        String::from_utf8_lossy(&back.stdout),
        "{\"test\": \"t7000\", \"ok\": false}\n"
    );
    assert!(section.contains("--pointer /results/7000   # {\"test\": \"t7000\", \"ok\": false}"));
}

/// The integrations page's `spillway mcp serve` example, run as written by a
/// shell (another store), answers as the page says.
#[test]
fn the_docs_mcp_serve_example_answers_as_the_docs_say() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/integrations.md"
    ))
    .unwrap();
    let section = &readme[readme.find("## MCP").expect("the section")..];
    let start = section.find("```sh\nprintf").expect("the example") + "```sh\n".len();
    let script = &section[start..start + section[start..].find("```").unwrap()];
    let (_dir, store) = store();
    let script = script.replace("/tmp/mcp-demo", &store.to_string_lossy());
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_spillway"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "the notification gets no answer");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "spillway");
    let result = &answers[1]["result"];
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 1024, "{}", text.len());
    assert!(text.starts_with("1\n2\n3\n"));
    assert!(text.contains("Output stored; read it with spill_read(id=\"blake3:"));
    assert!(text.ends_with("100000\nboom\n[exit status 1]"), "{text}");
    assert!(section.contains("`boom`\nand `[exit status 1]`"));
}

/// The guide's terminal output example, run as written by a shell (another
/// store, as long a path), prints what the guide shows.
#[test]
fn the_guide_terminal_example_prints_what_the_guide_shows() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guide.md"))
            .unwrap();
    let section = &readme[readme.find("## Terminal output").expect("the section")..];
    let block = |lang: &str| -> String {
        let open = format!("```{lang}\n");
        let start = section.find(&open).unwrap() + open.len();
        let end = section[start..].find("```").unwrap() + start;
        section[start..end].to_string()
    };
    let dir = tempfile::Builder::new()
        .prefix("")
        .rand_bytes("spill-demo".len())
        .tempdir_in("/tmp")
        .expect(
            "this test needs a writable /tmp: the README's example it runs names /tmp/spill-demo",
        );
    let store = dir.path().to_string_lossy().into_owned();
    assert_eq!(store.len(), "/tmp/spill-demo".len());
    let script = block("sh").replace("/tmp/spill-demo", &store);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_spillway"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env_remove("SPILLWAY_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        got.trim_end(),
        block("text").trim_end().replace("/tmp/spill-demo", &store)
    );
    assert!(got.contains("\n9001:FAILED tests/test_mod.py::test_9000"));
    assert!(!got.contains('\x1b'));
}

/// A user's patterns take ranks, by flag or by the config file's table
/// form: with room for few lines, the error shape is shown before the
/// warning, and the warning before the many shapes of a mere word.
#[test]
fn user_patterns_are_ranked_by_flag_and_by_config_table() {
    let (d, s) = store();
    let mut log = String::new();
    for i in 0..3000 {
        log.push_str(&match i {
            1500 => "BOOM the reactor stopped\n".to_owned(),
            2000 => "CUSTOMWARN disk at 91 percent\n".to_owned(),
            // A hundred shapes of the word, all before the two.
            i if i % 10 == 5 && i < 1400 => format!("NOTE kind{} {}\n", "x".repeat(i / 10), i),
            i => format!("step {i} done\n"),
        });
    }
    let shown = |out: &Output| -> Vec<String> {
        let v = json(out);
        let text = v["content"].as_str().unwrap();
        let block: Vec<String> = text
            .lines()
            .skip_while(|l| !l.contains("match error or warning patterns"))
            .skip(1)
            .take_while(|l| !l.starts_with("[spillway: omitted"))
            .map(str::to_owned)
            .collect();
        assert!(!block.is_empty(), "no salient block in {text}");
        block
    };
    let budget = ["--max-inline-bytes", "2000", "--salient-percent", "10"];
    let by_flags = shown(&sp_in(
        &s,
        &[
            &[
                "apply",
                "--json",
                "--salient",
                "BOOM",
                "--salient-warning",
                "CUSTOMWARN",
            ][..],
            &["--salient-word", "NOTE"],
            &budget,
        ]
        .concat(),
        log.as_bytes(),
    ));
    // Shown in line order; chosen by rank.
    assert!(
        by_flags.iter().any(|l| l.starts_with("1501:BOOM")),
        "{by_flags:?}"
    );
    assert!(
        by_flags.iter().any(|l| l.starts_with("2001:CUSTOMWARN")),
        "{by_flags:?}"
    );
    let notes = by_flags.iter().filter(|l| l.contains(":NOTE")).count();
    assert!(notes < 10, "{notes} word lines took the room: {by_flags:?}");

    let config = d.path().join("ranked.toml");
    std::fs::write(
        &config,
        "[policy]\nsalient = [\"BOOM\", { pattern = \"CUSTOMWARN\", rank = \"warning\" }, \
         { pattern = \"NOTE\", rank = \"word\" }]\n",
    )
    .unwrap();
    let by_config = shown(&sp_in(
        &s,
        &[
            &["--config", config.to_str().unwrap(), "apply", "--json"][..],
            &budget,
        ]
        .concat(),
        log.as_bytes(),
    ));
    assert_eq!(by_config, by_flags);

    // A rank that does not exist is named, and nothing is stored.
    std::fs::write(
        &config,
        "[policy]\nsalient = [{ pattern = \"x\", rank = \"severe\" }]\n",
    )
    .unwrap();
    let bad = sp_in(
        &s,
        &["--config", config.to_str().unwrap(), "apply"],
        log.as_bytes(),
    );
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("severe"));
}
