#!/usr/bin/env python3
"""The JSON preview against the text preview of the same document, whole
process, at the sizes a tool returns.

    cargo build --release -p spillway-cli
    python3 benches/json_sizes.py [SPILLWAY_BIN] [RUNS] [--before OLD_BIN] [--instructions] [--dir DIR] [--sizes LIST]

For each size (default: 40 KB, just over the default budget; 1 MiB; 16 MiB;
64 MiB) it writes a document dense with small values, as the `stage`
bench's `json/records` group does (an object holding an array of records
`{"id","name","ok","ms","tags":[...]}` and a long log string), then runs
`spillway apply --compress none --render raw FILE` with `--format json` and
with `--format text`, alternating, RUNS times each (default 7), into a fresh
store each run, and prints the medians and the ratio. A document of up to
64 MiB is read whole, as the `stage` bench's `apply` does.

With `--before OLD_BIN`, an older build's JSON preview runs in the same
rounds and its ratio is printed beside the new one. With `--instructions`,
each is run once under valgrind's cachegrind instead and the instructions
executed are printed: a count that does not drift with the machine.
`--dir DIR` puts the inputs and the stores in DIR (`/dev/shm`: no run
waits for a disk's flush). `--sizes` takes sizes in bytes, comma-separated.
"""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kinds  # noqa: E402  (the same runner and instruction count)

SIZES = [40_000, 1 << 20, 16 << 20, 64 << 20]


def records(size):
    """A document of exactly `size` bytes: nine tenths records, then a log
    string of escaped lines (the `stage` bench's `json_doc`)."""
    parts = [b'{"run":"00000000","status":"failed","results":[']
    written, i = len(parts[0]), 0
    while written < size * 9 // 10:
        ok = b"true" if i % 1000 != 7 else b"false"
        rec = b'%s{"id":%d,"name":"test_case_%d","ok":%s,"ms":%d,"tags":["unit","fast"]}' % (
            b"," if i else b"", i, i, ok, i % 997)
        parts.append(rec)
        written += len(rec)
        i += 1
    doc = b"".join(parts) + b'],"log":"'
    doc += b"step ok\\n" * ((size - len(doc)) // 9 + 1)
    doc = doc[:size - 2]
    while doc.endswith(b"\\"):
        doc = doc[:-1]
    return doc + b'"}'


def label(size):
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    return f"{size / 1000:g} KB"


def main():
    parser = argparse.ArgumentParser(description="The JSON preview against the text preview, by size.")
    parser.add_argument("binary", nargs="?", default="target/release/spillway")
    parser.add_argument("runs", nargs="?", type=int, default=7)
    parser.add_argument("--before", help="an older build whose JSON preview is measured in the same rounds")
    parser.add_argument("--instructions", action="store_true", help="count instructions under cachegrind instead")
    parser.add_argument("--dir", help="where the inputs and the stores go (default: the temporary folder)")
    parser.add_argument("--sizes", help="sizes in bytes, comma-separated")
    args = parser.parse_args()
    if args.runs < 1:
        sys.exit("RUNS must be at least 1")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    if any(s < 1000 or s > 64 << 20 for s in sizes):
        sys.exit("each size must be between 1000 bytes and 64 MiB")
    for b in [args.binary] + ([args.before] if args.before else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not an executable (build it with `cargo build --release -p spillway-cli`)")
    json_args = ["--render", "raw", "--format", "json"]
    text_args = ["--render", "raw", "--format", "text"]
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        path = os.path.join(work, "doc.json")
        store = os.path.join(work, "store")
        if args.instructions:
            print("| size | text preview | JSON preview before | JSON preview | after / before |")
            print("|---|---:|---:|---:|---:|")
        else:
            before = " | JSON before | before / text" if args.before else ""
            print(f"| size | text preview | JSON preview{before} | JSON / text |")
            print("|---|---:|---:" + ("|---:|---:" if args.before else "") + "|---:|")
        for size in sizes:
            with open(path, "wb") as f:
                f.write(records(size))
            if args.instructions:
                t = kinds.instructions(args.binary, path, text_args, store)
                o = kinds.instructions(args.before or args.binary, path, json_args, store)
                n = kinds.instructions(args.binary, path, json_args, store)
                print(f"| {label(size)} | {t / 1e6:.1f} M | {o / 1e6:.1f} M | {n / 1e6:.1f} M | {n / o:.3f} |",
                      flush=True)
                continue
            times = {"text": [], "json": [], "before": []}
            for _ in range(args.runs):
                times["text"].append(kinds.run(args.binary, path, text_args, store)[0])
                times["json"].append(kinds.run(args.binary, path, json_args, store)[0])
                if args.before:
                    times["before"].append(kinds.run(args.before, path, json_args, store)[0])
            med = {k: statistics.median(v) * 1000 for k, v in times.items() if v}
            row = f"| {label(size)} | {med['text']:.1f} ms | {med['json']:.1f} ms"
            if args.before:
                row += f" | {med['before']:.1f} ms | {med['before'] / med['text']:.2f}x"
            print(row + f" | {med['json'] / med['text']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
