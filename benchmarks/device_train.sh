#!/usr/bin/env bash
# Training runs on the device machine that outlive one device call (each call <= 10 min):
#   bash benchmarks/device_train.sh start      set up, warm Numba, launch the runs (setsid), return
#   bash benchmarks/device_train.sh wait OUT S  wait up to S seconds, then pack what exists into OUT
# Runs (each its own ledger):
#   gpu: the seed-scale run of issue 26 -- a 6-layer, width-256 policy, the seed's 600 RL steps,
#        --device cuda, 12 scoring workers;
#   cpu: the default configuration of issue 20 on CPU (one torch thread, 2 scoring workers),
#        i.e. what `gymkit train sft/rl` does on a laptop, for its wall time.
# Layout on the device: benchmarks/device_layout.sh (carry .whl/).
set -euo pipefail
cmd=${1:?start|wait}
R=/tmp/runs
if [ "$cmd" = start ]; then
  source benchmarks/device_layout.sh  # every call: this call's code
  mkdir -p $R/gpu $R/cpu
  (cd /tmp && time python3 -c "import gymkit; gymkit.make('us46-default'); gymkit.make('us46-default', advantages={})") 2>&1 | tail -3
  gk="python3 -m gymkit.cli"
  cd /tmp
  setsid bash -c "{ time ( $gk train sft --run $R/gpu --device cuda --layers 6 --width 256 --heads 8 \
    && $gk train rl --run $R/gpu --device cuda --steps 600 --workers 12 --ledger $R/gpu/ledger.sqlite \
    && $gk train report $R/gpu ) ; } > $R/gpu/console.log 2>&1; echo \$? > $R/gpu/rc" < /dev/null &
  setsid bash -c "{ time ( $gk train sft --run $R/cpu && $gk train rl --run $R/cpu --workers 2 \
    --ledger $R/cpu/ledger.sqlite && $gk train report $R/cpu ) ; } > $R/cpu/console.log 2>&1; \
    echo \$? > $R/cpu/rc" < /dev/null &
  sleep 2; echo launched
  exit 0
fi
out=${2:?OUT}; limit=${3:-500}
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do
  [ -f $R/gpu/rc ] && [ -f $R/cpu/rc ] && break
  sleep 10
done
for r in gpu cpu; do
  echo "== $r rc=$(cat $R/$r/rc 2>/dev/null || echo running)"; tail -4 $R/$r/console.log || true
done
cd $R && tar czf "$out/train_runs.tgz" --exclude='checkpoints' --exclude='*.safetensors' gpu cpu
ls -la "$out"
