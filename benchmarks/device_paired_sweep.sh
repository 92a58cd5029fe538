#!/usr/bin/env bash
# A paired sweep of one code change on the default market's RL outcome (issues 18, 20): seeds
# 0-7 of the default `gymkit train` configuration with this tree (arm "n", new) and with one
# file of the tree before (arm "o", old), 16 runs side by side, one core each, on the device's
# CPU.  Each run: its own SFT (the same warm start in both arms), RL, report.
#   bash benchmarks/device_paired_sweep.sh start OLD_FILE REL_PATH   set up, launch, return
#   bash benchmarks/device_sweep.sh wait OUT S                       wait, pack /tmp/sweep_runs
# OLD_FILE replaces REL_PATH (a path inside the gymkit package, e.g. scoring.py) in the old arm,
# e.g. `git show 466f5ee:gymkit/scoring.py > old_scoring.py`.
# Used for: the motif guard's GDPO rule (env.py of 72a4f51; runs named c/f then), R9's
# same-book duplicates (scoring.py of 466f5ee).
# Layout on the device: benchmarks/device_layout.sh (carry .whl/).
set -euo pipefail
old=$(realpath "${2:?OLD_FILE}") rel=${3:?REL_PATH}
R=/tmp/sweep_runs
source benchmarks/device_layout.sh  # every call: this call's code, PYTHONPATH=/tmp/pkg:/tmp/site
[ -f "/tmp/pkg/gymkit/$rel" ] || { echo "no gymkit/$rel in the package" >&2; exit 2; }
mkdir -p $R
(cd /tmp && time python3 -c "import gymkit; gymkit.make('us46-default')") 2>&1 | tail -3
rm -rf /tmp/pkg_old && cp -r /tmp/pkg /tmp/pkg_old && cp "$old" "/tmp/pkg_old/gymkit/$rel"
# the old tree's sources differ, so its Numba cache is its own folder: warm it too
(cd /tmp && PYTHONPATH=/tmp/pkg_old:/tmp/site python3 -c "import gymkit; gymkit.make('us46-default')")
cd /tmp
for seed in 0 1 2 3 4 5 6 7; do
  for arm in n o; do
    name=$arm$seed pkg=/tmp/pkg; [ $arm = o ] && pkg=/tmp/pkg_old
    mkdir -p $R/$name
    PYTHONPATH=$pkg:/tmp/site setsid bash -c "{ time ( python3 -m gymkit.cli train sft --run $R/$name \
      --seed $seed && python3 -m gymkit.cli train rl --run $R/$name --seed $seed --workers 1 \
      --ledger $R/$name/ledger.sqlite && python3 -m gymkit.cli train report $R/$name ) ; } \
      > $R/$name/console.log 2>&1; echo \$? > $R/$name/rc" < /dev/null > /dev/null 2>&1 &
  done
done
sleep 2; echo "launched 16"
