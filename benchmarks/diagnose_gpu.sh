#!/usr/bin/env bash
# On the GPU host: `diagnose` as a user runs it, on every kernel of the catalog (pitfalls, their
# twins, the library) or on the NAMEs given. pitfall_spill runs alone first (cold caches) and
# again at the end (warm): the time of one full diagnosis with ncu. The others run JOBS at a time:
# their checks and compiles overlap while timings and ncu take the GPU one at a time (gpu_lock).
# Then the two fixes the workbench applies itself (--try). One JSON and one log per run, steps.txt
# with each run's wall time; TGZ (default DEST.tgz) is re-packed after every run, so a run cut
# off by its time limit still brings back what it finished.
#   bash benchmarks/diagnose_gpu.sh DEST [TGZ] [NAME ...]     (env JOBS, default 4; DEADLINE s)
set -u
DEST=${1:?destination folder}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
TGZ=${2:-$DEST.tgz}
shift $(($# < 2 ? $# : 2))
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-diagnose}
export PYTHONUNBUFFERED=1 DEST TGZ
JOBS=${JOBS:-4}
END=$((SECONDS + ${DEADLINE:-560}))
run() {  # run LABEL SECONDS ARGS...: one diagnose, its JSON, log and time
  local label=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" python3 -m workbench diagnose "$@" --json >"$DEST/$label.json" 2>"$DEST/$label.log"
  echo "$label rc=$? $((SECONDS - start)) s" >>"$DEST/steps.txt"
  (
    flock 9  # the parallel runs pack one at a time
    tar czf "$TGZ.part" -C "$(dirname "$DEST")" "$(basename "$DEST")" && mv "$TGZ.part" "$TGZ"
  ) 9>"$TGZ.lock"
}
export -f run
left() { echo $((END - SECONDS)); }
nvidia-smi -L >"$DEST/versions.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  >>"$DEST/versions.txt" 2>&1
if [ $# -gt 0 ]; then
  names="$*"
else
  names=$(python3 -m workbench list --json | python3 -c \
    'import json, sys; print(" ".join(k["name"] for k in json.load(sys.stdin)["kernels"]))')
fi
reserve=10  # for what follows the parallel part
case " $names " in *" pitfall_spill "*) run spill_cold 150 pitfall_spill && reserve=150 ;; esac
start=$SECONDS
for name in $names; do
  [ "$name" = pitfall_spill ] || echo "$name"
done | timeout "$(($(left) - reserve))" xargs -P "$JOBS" -I{} bash -c 'run {} 240 {}'
echo "parallel part: $((SECONDS - start)) s for $JOBS at a time" >>"$DEST/steps.txt"
case " $names " in *" pitfall_spill "*) run spill_warm 120 pitfall_spill ;; esac
if [ $# -eq 0 ]; then
  [ "$(left)" -gt 100 ] && run spill_try 150 pitfall_spill --try register-spill
  [ "$(left)" -gt 60 ] && run launch_bound_try 120 pitfall_launch_bound --try launch-bound
fi
cat "$DEST/steps.txt"
