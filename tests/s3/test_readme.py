"""The operations page's "Shared store on S3" example, run as written
against moto_server (only its port is this run's), gives the page's output."""

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import BIN, ROOT


def section() -> str:
    text = (ROOT / "docs" / "operations.md").read_text()
    start = text.index("## Shared store on S3")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_readme_example_runs_as_written(tmp_path, moto):
    sec = section()
    script = re.search(r"```sh\n(.*?)```", sec, re.S).group(1)
    expected = re.search(r"prints\n\n```text\n(.*?)```", sec, re.S).group(1)
    assert "http://127.0.0.1:5000" in script
    script = script.replace("http://127.0.0.1:5000", moto.endpoint)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPILLWAY_"))}
    # spillway, and a python3 with boto3 (this one).
    env["PATH"] = os.pathsep.join([str(Path(BIN).parent), str(Path(sys.executable).parent), env["PATH"]])
    env["SPILLWAY_S3_CACHE"] = str(tmp_path / "cache")
    # What the script makes with mktemp goes in this test's folder.
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode() == expected
