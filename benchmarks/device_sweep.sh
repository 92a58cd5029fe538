#!/usr/bin/env bash
# Issue 20's seed/recipe sweep on the device machine's CPU: many default-size runs side by side,
# one core each (one torch thread, --workers 1), each run its own SFT, RL and holdout ledger.
#   bash benchmarks/device_sweep.sh start SPEC...   set up, warm Numba, launch the runs, return
#   bash benchmarks/device_sweep.sh wait OUT S       wait up to S s for every run, pack into OUT
# SPEC = NAME:SEED[:EXTRA RL ARGS, comma-separated], e.g. b2:2  k0:0:--kl-beta,0.2
#        f0:0:--env,/tmp/pkg/sweep/r4x4.toml
# Layout on the device: benchmarks/device_layout.sh (carry .whl/).
set -euo pipefail
cmd=${1:?start|wait}
R=/tmp/sweep_runs
if [ "$cmd" = start ]; then
  shift
  source benchmarks/device_layout.sh  # every call: this call's code
  [ -d benchmarks/sweep ] && cp -r benchmarks/sweep /tmp/pkg/sweep  # candidate environments (TOML)
  mkdir -p $R
  (cd /tmp && time python3 -c "import gymkit; gymkit.make('us46-default')") 2>&1 | tail -3
  cd /tmp
  for spec in "$@"; do
    IFS=: read -r name seed extra <<< "$spec"
    extra=${extra//,/ }
    mkdir -p $R/$name
    setsid bash -c "{ time ( python3 -m gymkit.cli train sft --run $R/$name --seed $seed \
      && python3 -m gymkit.cli train rl --run $R/$name --seed $seed --workers 1 $extra \
         --ledger $R/$name/ledger.sqlite && python3 -m gymkit.cli train report $R/$name ) ; } \
      > $R/$name/console.log 2>&1; echo \$? > $R/$name/rc" < /dev/null > /dev/null 2>&1 &
  done
  sleep 2; echo "launched $#"
  exit 0
fi
out=${2:?OUT}; limit=${3:-500}
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do
  left=0
  for d in $R/*/; do [ -f "$d/rc" ] || left=$((left + 1)); done
  [ "$left" = 0 ] && break
  sleep 10
done
for d in $R/*/; do
  echo "== $(basename $d) rc=$(cat $d/rc 2>/dev/null || echo running) $(grep -c '^step' $d/console.log 2>/dev/null) log lines"
  tail -2 $d/console.log || true
done
cd $R && tar czf "$out/sweep_runs.tgz" --exclude='rollouts.jsonl' --exclude='checkpoints' --exclude='*.safetensors' --exclude='sft' .
ls -la "$out"
