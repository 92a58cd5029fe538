#!/usr/bin/env bash
# The motif guard's GDPO rule on the default market's RL outcome (issues 18, 20): seeds 0-7 of
# the default `gymkit train` configuration under the *capped* rule (this tree: an answer is
# guarded when R10 fired and its uncapped reward was positive) and under the *fired* rule (the
# tree before: guarded whenever R10 fired), 16 runs side by side, one core each, on the
# device's CPU.  Each run: its own SFT (the same warm start in both arms), RL, report.
#   bash benchmarks/device_guard_sweep.sh start FIRED_ENV_PY   set up, launch, return
#   bash benchmarks/device_sweep.sh wait OUT S                 wait, pack /tmp/sweep_runs
# FIRED_ENV_PY: gymkit/env.py of the tree before (`git show 72a4f51:gymkit/env.py`).
# Layout on the device: benchmarks/device_layout.sh (carry .whl/).
set -euo pipefail
fired=$(realpath "${2:?FIRED_ENV_PY}")
R=/tmp/sweep_runs
source benchmarks/device_layout.sh  # every call: this call's code, PYTHONPATH=/tmp/pkg:/tmp/site
mkdir -p $R
(cd /tmp && time python3 -c "import gymkit; gymkit.make('us46-default')") 2>&1 | tail -3
rm -rf /tmp/pkg_fired && cp -r /tmp/pkg /tmp/pkg_fired && cp "$fired" /tmp/pkg_fired/gymkit/env.py
# the fired tree's sources differ, so its Numba cache is its own folder: warm it too
(cd /tmp && PYTHONPATH=/tmp/pkg_fired:/tmp/site python3 -c "import gymkit; gymkit.make('us46-default')")
cd /tmp
for seed in 0 1 2 3 4 5 6 7; do
  for arm in capped fired; do
    name=${arm:0:1}$seed pkg=/tmp/pkg; [ $arm = fired ] && pkg=/tmp/pkg_fired
    mkdir -p $R/$name
    PYTHONPATH=$pkg:/tmp/site setsid bash -c "{ time ( python3 -m gymkit.cli train sft --run $R/$name \
      --seed $seed && python3 -m gymkit.cli train rl --run $R/$name --seed $seed --workers 1 \
      --ledger $R/$name/ledger.sqlite && python3 -m gymkit.cli train report $R/$name ) ; } \
      > $R/$name/console.log 2>&1; echo \$? > $R/$name/rc" < /dev/null > /dev/null 2>&1 &
  done
done
sleep 2; echo "launched 16"
