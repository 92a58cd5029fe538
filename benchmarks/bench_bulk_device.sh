#!/usr/bin/env bash
# The bulk scorer's device run (issue 26), as sent to the H200 machine from the repo root:
#   bash benchmarks/bench_bulk_device.sh OUT_DIR [N_LIST] [CARDS] [bench_bulk.py options...]
# e.g. ... $OUT/bulk 46,500,3000 100 --profile   (the per-operator table too: profile.txt)
# Layout on the device: benchmarks/device_layout.sh.
set -euo pipefail
out=${1:?OUT_DIR}; ns=${2:-46,500}; cards=${3:-200}
source benchmarks/device_layout.sh
mkdir -p "$out"
LC_ALL=C; cat gymkit/bulk/*.py benchmarks/bench_bulk.py | sha256sum | cut -c1-16 > "$out/code_digest.txt"
python3 benchmarks/bench_bulk.py device --n "$ns" --procs "$(nproc)" --out "$out" --cards "$cards" \
  "${@:4}"
