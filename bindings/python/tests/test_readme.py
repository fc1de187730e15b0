"""The integrations page's Python section runs as written."""

import re
import tempfile
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"


def test_readme_python_examples_run(tmp_path, monkeypatch):
    # The folders an example makes in the temporary folder go in this
    # test's, which pytest removes.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    text = PAGE.read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the Python section has an example"
    for code in blocks:
        exec(compile(code, "docs/integrations.md (Python section)", "exec"), {"__name__": "readme"})
