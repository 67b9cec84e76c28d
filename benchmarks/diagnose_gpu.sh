#!/usr/bin/env bash
# On the GPU host: `diagnose` as a user runs it on the pitfall kernels, their twins and library
# kernels, with the two fixes it applies itself (--try), each step bounded and timed; results
# land in DEST (one JSON and one log per run, steps.txt) and TGZ (default DEST.tgz), re-packed
# after each step so that a run cut off by its time limit still brings back what it finished.
#   bash benchmarks/diagnose_gpu.sh DEST [TGZ] [NAME ...]   (NAMEs: only these plain diagnoses)
set -u
DEST=${1:?destination folder}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
TGZ=${2:-$DEST.tgz}
shift $(($# < 2 ? $# : 2))
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-diagnose}
export PYTHONUNBUFFERED=1
run() {  # run LABEL SECONDS ARGS...: one diagnose, its JSON, log and time
  local label=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" python3 -m workbench diagnose "$@" --json >"$DEST/$label.json" 2>"$DEST/$label.log"
  echo "$label rc=$? $((SECONDS - start)) s" | tee -a "$DEST/steps.txt"
  tar czf "$TGZ" -C "$(dirname "$DEST")" "$(basename "$DEST")"
}
nvidia-smi -L >"$DEST/versions.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  >>"$DEST/versions.txt" 2>&1
if [ $# -gt 0 ]; then
  for name in "$@"; do run "$name" 120 "$name"; done
  exit 0
fi
run spill_full 120 pitfall_spill
run spill_try 150 pitfall_spill --try register-spill
run launch_bound_try 120 pitfall_launch_bound --try launch-bound
run transformer_try 150 transformer --dtype float16 --try launch-bound
for name in pitfall_bank_conflicts pitfall_atomics pitfall_bf16_acc pitfall_small_grid \
  pitfall_spill_fixed pitfall_launch_bound_fixed pitfall_bank_conflicts_fixed vector_add; do
  run "$name" 120 "$name"
done
