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
  its JUnit XML report, a template being the exception type;
* a service's log (`salient_service.py`: an asyncio server whose clients
  reset connections, send malformed requests and time out), once as text
  and once as JSON lines; labeled by the logging records at ERROR, a
  template being the record's own message template;
* `pip install -v` of three packages with C extensions, the second of which
  fails to build (one file with errors of several kinds; every other file
  compiles with warnings); labeled by gcc's own JSON diagnostics
  (`-fdiagnostics-format=json`) of that file.

Each log goes through `BIN apply` at 8,000 bytes and 32 KiB: with
`--render raw` (head and tail alone), with the default policy, and with the
default policy of `BEFORE_BIN` (an earlier build) when given. A template is
kept when a line of the preview shows one of its errors; a block line is a
repeat when it says what an earlier one says (`repeat_key`).

Needs cargo, gcc and python3 with pytest and wheel (`pip install pytest
wheel`), and Python's headers.
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


def service_log(tmp, mode):
    labels_file = os.path.join(tmp, f"labels-{mode}.jsonl")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "salient_service.py")
    log = record([sys.executable, script, mode, labels_file], tmp)
    templates = {json.loads(l)["template"] for l in open(labels_file)}
    # A template's own text, its placeholders any value, ending where the
    # message ends (at the line's end, a JSON string's end, or a note).
    def pattern(t):
        rx = re.escape(t)
        for ph in ("%s", "%d", "%x", "%r"):
            rx = rx.replace(re.escape(ph), ".+?")
        return re.compile(rx + r'(?=\r?$|"| \[\+)')
    pats = {t: pattern(t) for t in templates}
    def kept(preview):
        lines = preview.splitlines()
        return {t for t, rx in pats.items() if any(rx.search(l) for l in lines)}
    return log, templates, kept


def gcc_template(message):
    return re.sub(r"‘[^’]*’|'[^']*'", "Q", message)


def pip_log(tmp):
    # Three packages, built in order: the second one's C extension fails
    # (one file, errors of several kinds), the others build with warnings;
    # `-v` shows every compiler's output, as CI logs do.
    def package(name, files, broken):
        pkg = os.path.join(tmp, name)
        os.makedirs(os.path.join(pkg, "src"))
        with open(os.path.join(pkg, "setup.py"), "w") as f:
            f.write(
                "import glob\nfrom setuptools import setup, Extension\n"
                f'setup(name="{name}", version="0.1", ext_modules=[Extension("{name}", '
                'sorted(glob.glob("src/*.c")), extra_compile_args=["-Wall", "-Wextra"])])\n'
            )
        for m in range(files):
            with open(os.path.join(pkg, "src", f"m{m:03}.c"), "w") as f:
                f.write(
                    f"#include <Python.h>\nint f{m}(int a, int b, int c) {{\n"
                    f"  int unused_{m} = {m};\n  int x = a;\n  return x;\n}}\n"
                )
        if broken:
            path = os.path.join(pkg, "src", f"m{files // 2:03}b.c")
            with open(path, "w") as f:
                f.write(
                    "#include <Python.h>\nint two(int a, int b);\nstruct conn { int fd; };\n"
                    "int broken(void) {\n  int x = undeclared_value;\n  char *p = 5;\n"
                    "  struct conn c;\n  c.port = 1;\n  missing_type y = 0;\n"
                    "  return two(1) + x + y + *p;\n}\n"
                    "int more(void) {\n  return no_such_constant + two(1, 2, 3);\n}\n"
                )
            return path
        return None

    package("beta", 60, False)
    broken = package("alpha", 60, True)
    package("gamma", 60, False)
    env = {"LC_ALL": "C.UTF-8"}
    log = record(
        [sys.executable, "-m", "pip", "install", "-v", "--no-index", "--no-build-isolation",
         "./beta", "./alpha", "./gamma"],
        tmp,
        env,
    )
    include = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    diag = subprocess.run(
        ["gcc", "-fsyntax-only", "-Wall", "-Wextra", "-fdiagnostics-format=json", "-I", include, broken],
        capture_output=True, text=True, env=dict(os.environ, **env),
    ).stderr
    labels = {gcc_template(d["message"]) for d in json.loads(diag) if d["kind"] == "error"}
    def kept(preview):
        shown = set()
        for line in preview.splitlines():
            m = re.search(r"\berror: (.*?)(?: \[\+[0-9]+ like it.*)?$", line)
            if m:
                shown.add(gcc_template(m.group(1)))
        return labels & shown
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


def repeat_key(text):
    """What a block line says, without what varies between its repeats: for
    a JSON object its fields but the time, digits and hex blanked; for text,
    digits, hex and quoted values blanked."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        fields = sorted((k, str(v)) for k, v in doc.items() if k != "time")
        return " ".join(k + "=" + re.sub(r"0x[0-9a-fA-F]+|[0-9]+", "#", v) for k, v in fields)
    return blank(text)


def repeats(lines):
    seen, n = set(), 0
    for line in lines:
        text = re.sub(r" \[\+[0-9]+ like it, lines? [0-9-]+\]$", "", line.split(":", 1)[-1])
        key = repeat_key(text)
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
        logs = [
            ("cargo build", *cargo_log(tmp)),
            ("pytest", *pytest_log(tmp)),
            ("service log", *service_log(tmp, "text")),
            ("JSON-lines log", *service_log(tmp, "json")),
            ("pip install", *pip_log(tmp)),
        ]
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
