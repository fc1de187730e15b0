#!/usr/bin/env bash
# Fuzzes one target, or every target, for a fixed time each.
#
#     fuzz/run.sh TARGET|all SECONDS
#
# CI runs `fuzz/run.sh all 10`: enough to catch a harness that no longer
# builds or an invariant broken on the seeds. Long campaigns (an hour a
# target, say) are run by hand; CONTRIBUTING.md says when. Each target reads
# fuzz/seeds/TARGET and keeps what it finds in fuzz/corpus/TARGET (not
# tracked); a failing input lands in fuzz/artifacts/TARGET.
set -euo pipefail
cd "$(dirname "$0")"

if [ $# -ne 2 ]; then
    echo "usage: fuzz/run.sh TARGET|all SECONDS" >&2
    exit 2
fi
which=$1
seconds=$2
case "$seconds" in
    '' | *[!0-9]* | 0)
        echo "fuzz/run.sh: SECONDS must be a whole number of seconds above 0, got '$seconds'" >&2
        exit 2
        ;;
esac

if ! command -v cargo-fuzz > /dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
# cargo-fuzz needs nightly flags; this lets the stable toolchain take them.
export RUSTC_BOOTSTRAP=1
# A warning in a target fails the build, as clippy's does for the rest.
export RUSTFLAGS="${RUSTFLAGS:-} -D warnings"

# The targets are the [[bin]] entries of fuzz/Cargo.toml.
mapfile -t all < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^spillway-fuzz$')
if [ "$which" = all ]; then
    targets=("${all[@]}")
else
    found=no
    for t in "${all[@]}"; do [ "$t" = "$which" ] && found=yes; done
    if [ "$found" = no ]; then
        echo "fuzz/run.sh: no target '$which'; the targets are: ${all[*]}" >&2
        exit 2
    fi
    targets=("$which")
fi

# Coverage instrumentation only by default: the code under test is safe
# Rust (and cargo-fuzz's flags do not reach the C of zstd), so AddressSanitizer
# finds little here, while it makes the build take about half as long again
# and halves the inputs run in a given time. SPILLWAY_FUZZ_SANITIZER=address
# turns it on for a long campaign.
sanitizer=${SPILLWAY_FUZZ_SANITIZER:-none}

# One instrumented build of every target, then each one runs.
cargo fuzz build -s "$sanitizer"
mkdir -p ../target/fuzz-logs
tmp=""
trap 'rm -rf "$tmp"' EXIT
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    log="../target/fuzz-logs/$target.log"
    # A run ends by exiting, so a target's temporary store is never
    # dropped: each run gets a temporary folder of its own, removed after.
    tmp=$(mktemp -d)
    if ! TMPDIR="$tmp" cargo fuzz run -s "$sanitizer" "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -dict=spillway.dict \
        -rss_limit_mb=4096 -print_final_stats=1 > "$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz target $target failed (its input is in fuzz/artifacts/$target)" >&2
        exit 1
    fi
    rm -rf "$tmp"
    echo "$target: $(grep -E '^stat::number_of_executed_units' "$log" | tr -s ' ')"
done
echo "fuzz: ${#targets[@]} targets clean after $seconds s each"
