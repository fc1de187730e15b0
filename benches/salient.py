#!/usr/bin/env python3
"""Salient lines on real logs: how many distinct errors a preview keeps,
and how much of its salient block repeats itself.

    python3 benches/salient.py BIN [BEFORE_BIN]

Records real programs under a pseudo-terminal (80x24), in a temporary
directory, each labeled by what the program itself reports:

* `cargo build` of a crate with many modules, warnings in every one and
  errors of several kinds in some; labeled by rustc's own JSON messages
  (`--message-format=json`), an error's template being its code and its
  message with the quoted names blanked;
* `pytest --tb=short` of a suite with several kinds of failure; labeled by
  its JUnit XML report, a template being the exception type.

Each log goes through `BIN apply` at 8,000 bytes and 32 KiB: with
`--render raw` (head and tail alone), with the default policy, and with the
default policy of `BEFORE_BIN` (an earlier build) when given. A template is
kept when a line of the preview shows one of its errors; a block line is a
repeat when, digits and quoted values blanked, it equals an earlier one.

Needs cargo and python3 with pytest (`pip install pytest`).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "terminal"))
from record import capture as record  # noqa: E402  (the fixtures' pseudo-terminal)

BUDGETS = [8000, 32768]


def blank(text):
    """Digits, hex and quoted values blanked: what repeats when only they differ."""
    text = re.sub(r"`[^`]*`|'[^']*'|\"[^\"]*\"", "Q", text)
    text = re.sub(r"0x[0-9a-fA-F]+|[0-9]+", "#", text)
    return re.sub(r"\s+", " ", text).strip()


def rust_template(code, message):
    return f"error[{code}]: " + re.sub(r"`[^`]*`", "`_`", message)


def cargo_log(tmp):
    crate = os.path.join(tmp, "crate")
    os.makedirs(os.path.join(crate, "src"))
    with open(os.path.join(crate, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n')
    kinds = [
        lambda k: f'    let _a{k}: i32 = "text {k}";\n',  # E0308
        lambda k: f"    let _b{k} = undefined_name_{k} + 1;\n",  # E0425
        lambda k: f"    let _c{k} = {k}u8.no_such_method_{k}();\n",  # E0599
        lambda k: f"    let _d{k} = takes_two({k});\n",  # E0061
        lambda k: f"    let _e{k}: Missing{k} = 1;\n",  # E0412
        lambda k: f"    let _f{k} = (1, 2).{k + 5};\n",  # E0609
    ]
    mods = []
    for m in range(60):
        body = [f"pub fn f_{m}_{i}() {{\n    let unused_{m}_{i} = {i};\n}}\n" for i in range(25)]
        if m % 5 == 2:
            k = m // 5
            body.append(f"pub fn broken_{m}() {{\n" + kinds[k % len(kinds)](m) + "}\n")
        with open(os.path.join(crate, "src", f"m{m}.rs"), "w") as f:
            f.write("".join(body))
        mods.append(f"mod m{m};\n")
    with open(os.path.join(crate, "src", "main.rs"), "w") as f:
        f.write("".join(mods) + "fn takes_two(_a: i32, _b: i32) {}\nfn main() {}\n")
    env = {"CARGO_TARGET_DIR": os.path.join(tmp, "target"), "CARGO_TERM_COLOR": "always"}
    log = record(["cargo", "build"], crate, env)
    js = subprocess.run(
        ["cargo", "build", "--message-format=json"],
        cwd=crate,
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
    ).stdout
    labels = set()
    for line in js.splitlines():
        m = json.loads(line)
        msg = m.get("message") if m.get("reason") == "compiler-message" else None
        if msg and msg["level"] == "error" and msg.get("code"):
            labels.add(rust_template(msg["code"]["code"], msg["message"]))
    def kept(preview):
        shown = set()
        for line in preview.splitlines():
            m = re.search(r"error\[(E[0-9]+)\]: (.*)$", line)
            if m:
                shown.add(rust_template(m.group(1), m.group(2)))
        return labels & shown
    return log, labels, kept


def pytest_log(tmp):
    suite = os.path.join(tmp, "suite")
    os.makedirs(suite)
    kinds = [
        "assert {k} == {k1}",
        "raise KeyError('user_{k}')",
        "1 / ({k} - {k})",
        "int('x{k}')",
        "[].pop()",
        "None.attr_{k}",
        "import json; json.loads('{{bad {k}')",
        "raise TimeoutError('request {k} timed out')",
    ]
    lines = []
    for i in range(1, 3001):
        if i % 97 == 13:
            body = kinds[(i // 97) % len(kinds)].format(k=i, k1=i + 1)
        else:
            body = "assert True"
        lines.append(f"def test_case_{i}():\n    {body}\n")
    with open(os.path.join(suite, "test_suite.py"), "w") as f:
        f.write("\n".join(lines))
    xml = os.path.join(tmp, "report.xml")
    log = record(
        [sys.executable, "-m", "pytest", "--tb=short", "-p", "no:cacheprovider", "--junitxml", xml],
        suite,
    )
    labels = set()
    for case in ET.parse(xml).getroot().iter("testcase"):
        for f in case.findall("failure"):
            labels.add(f.get("message", "").split(":")[0].split(" ")[0])
    labels.discard("")
    def kept(preview):
        return {t for t in labels if re.search(rf"(?<![A-Za-z]){re.escape(t)}", preview)}
    return log, labels, kept


def block(preview):
    """The salient block's lines (header excluded)."""
    out, inside = [], False
    for line in preview.splitlines():
        if re.match(r"\[spillway: [0-9]+ (of [0-9]+ )?omitted lines? (that )?match", line):
            inside = True
            continue
        if line.startswith("[spillway: omitted"):
            break
        if inside:
            out.append(line)
    return out


def repeats(lines):
    seen, n = set(), 0
    for line in lines:
        text = re.sub(r" \[\+[0-9]+ like it, lines? [0-9-]+\]$", "", line.split(":", 1)[-1])
        key = blank(text)
        if key in seen:
            n += len(line) + 1
        seen.add(key)
    return n


def preview(binary, log, budget, extra):
    store = tempfile.mkdtemp()
    try:
        out = subprocess.run(
            [binary, "--store", store, "apply", "--max-inline-bytes", str(budget)] + extra,
            input=log,
            capture_output=True,
            check=True,
        )
        # `--render raw` keeps the colour codes: read every preview as text.
        text = out.stdout.decode("utf-8", "replace")
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", text)
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    before = sys.argv[2] if len(sys.argv) > 2 else None
    tmp = tempfile.mkdtemp()
    try:
        logs = [("cargo build", *cargo_log(tmp)), ("pytest", *pytest_log(tmp))]
        print("| log | bytes | lines | error templates | budget | preview | templates kept | block bytes | repeat bytes |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, log, labels, kept in logs:
            nlines = log.count(b"\n")
            for budget in BUDGETS:
                cases = [("head and tail", binary, ["--render", "raw"])]
                if before:
                    cases.append(("previous selection", before, []))
                cases.append(("ranked shapes", binary, []))
                for label, b, extra in cases:
                    p = preview(b, log, budget, extra)
                    blk = block(p)
                    size = sum(len(l) + 1 for l in blk)
                    print(
                        f"| {name} | {len(log)} | {nlines} | {len(labels)} | {budget} | {label} "
                        f"| {len(kept(p))} of {len(labels)} | {size} | {repeats(blk)} |"
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
