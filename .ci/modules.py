#!/usr/bin/env python3
"""The module graph of each crate, and a check that it has no circle.

    python3 .ci/modules.py            # check every crate; exit 1 on a circle
    python3 .ci/modules.py src/store  # also print the graph below a folder

An edge A -> B means a file of module A names an item of module B (a `use`
or a path, tests and comments left out). A module naming its own parent or
child is not an edge: a parent declares its children and they use its
types. A circle among the rest (`a` uses `b`, `b` uses `a`) is what this
refuses: it means neither can be read, changed or moved without the other.
"""

import os
import re
import sys

CRATES = ["src", "crates/process/src", "crates/registry/src", "crates/mcp/src",
          "crates/code/src", "crates/view/src", "crates/cli/src", "bindings/python/src",
          "bindings/node/src"]


def modules(root):
    """Module path (a tuple) of every .rs file below `root`."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if rel and rel[-1] == "tests" or "tests" in rel[:-1]:
                continue
            out[tuple(rel)] = os.path.join(dirpath, f)
    return out


def code_of(path):
    text = open(path, encoding="utf-8").read()
    # Unit tests are their own module; they may use anything.
    text = re.split(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod tests", text)[0]
    text = re.sub(r"//[^\n]*", "", text)
    return text


PATH = re.compile(r"\b((?:crate|super|self)(?:::super)*)::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)")
USE_GROUP = re.compile(r"\buse\s+((?:crate|super|self)(?:::super)*)::((?:[a-z_][a-z0-9_]*::)*)\{([^;]*)\}", re.S)


def targets(mod, text, known):
    """The modules that `mod`'s code names."""
    found = set()

    def resolve(head, rest):
        parts = head.split("::")
        if parts[0] == "crate":
            base = []
        elif parts[0] == "self":
            base = list(mod)
        else:
            base = list(mod)
        for p in parts:
            if p == "super":
                base = base[:-1]
        path = base + [r for r in rest if r]
        # The longest prefix that is a module.
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in known:
                return tuple(path[:n])
        return None

    for m in PATH.finditer(text):
        found.add(resolve(m.group(1), m.group(2).split("::")))
    for m in USE_GROUP.finditer(text):
        prefix = [p for p in m.group(2).split("::") if p]
        for item in re.split(r"[,\s]+", m.group(3)):
            item = item.strip("{} ")
            if item:
                found.add(resolve(m.group(1), prefix + item.split("::")))
    return {t for t in found if t is not None}


def related(a, b):
    """Whether one is the other's ancestor (or the same)."""
    return a[: len(b)] == b or b[: len(a)] == a


def graph(root):
    known = modules(root)
    edges = {}
    for mod, path in known.items():
        edges[mod] = sorted(t for t in targets(mod, code_of(path), known) if not related(mod, t))
    return edges


def circles(edges):
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in edges.get(n, []):
            if state.get(d) == 1:
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return found


def name(mod):
    return "::".join(mod) or "(root)"


def main():
    show = sys.argv[1:]
    bad = 0
    for root in CRATES:
        if not os.path.isdir(root):
            continue
        edges = graph(root)
        for c in circles(edges):
            bad += 1
            print(f"{root}: an import circle: {' -> '.join(name(m) for m in c)}")
        for folder in show:
            if folder.startswith(root):
                below = tuple(os.path.relpath(folder, root).split(os.sep)) if folder != root else ()
                for mod in sorted(edges):
                    if mod[: len(below)] == below and edges[mod]:
                        print(f"{name(mod)} -> {', '.join(name(t) for t in edges[mod])}")
    if bad:
        sys.exit(1)
    print(f"no import circle in {len(CRATES)} crates")


if __name__ == "__main__":
    main()
