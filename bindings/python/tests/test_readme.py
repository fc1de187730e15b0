"""The README's Python section runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_python_examples_run():
    text = README.read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the Python section has an example"
    for code in blocks:
        exec(compile(code, "README.md (Python section)", "exec"), {"__name__": "readme"})
