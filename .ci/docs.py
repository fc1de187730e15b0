#!/usr/bin/env python3
"""The documentation's shape: the README stays short, and every relative
link in the tracked Markdown files names a file that exists and, when it has
a `#fragment`, a heading in that file (GitHub's slugs)."""

import re
import subprocess
import sys
from pathlib import Path

README_MAX_LINES = 200


def slug(heading: str) -> str:
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    found, fence = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"^#{1,6} (.*)", line)):
            found.add(slug(m.group(1)))
    return found


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    files = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True)
    errors = []
    lines = len((root / "README.md").read_text().splitlines())
    if lines > README_MAX_LINES:
        errors.append(f"README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/")
    for name in files.stdout.split():
        md = root / name
        if "node_modules" in name or not md.exists():
            continue
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, frag = target.partition("#")
            dest = (md.parent / file).resolve() if file else md
            if not dest.exists():
                errors.append(f"{name}: link to {target}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                errors.append(f"{name}: link to {target}: no such heading")
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
