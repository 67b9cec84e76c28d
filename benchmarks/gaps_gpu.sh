#!/usr/bin/env bash
# On the GPU host: the steps that decide how to close a kernel's gap, each as a user runs it,
# its output, log and wall time kept (steps.txt), DEST.tgz re-packed after each step.
#   bash benchmarks/gaps_gpu.sh DEST STEP...   (STEP: name=command..., e.g. 'diag=diagnose attention')
set -u
DEST=${1:?destination folder}
shift
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
export DEST
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-$DEST/store}
export PYTHONUNBUFFERED=1
END=$((SECONDS + ${DEADLINE:-540}))
for spec in "$@"; do
  name=${spec%%=*}
  cmd=${spec#*=}
  left=$((END - SECONDS))
  [ "$left" -lt 15 ] && { echo "$name skipped: deadline" >>"$DEST/steps.txt"; continue; }
  start=$(date +%s.%N)
  timeout "$left" bash -c "$cmd" >"$DEST/$name.out" 2>"$DEST/$name.log"
  rc=$?
  echo "$name rc=$rc $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s: $cmd" >>"$DEST/steps.txt"
  tar czf "$DEST.tgz" -C "$(dirname "$DEST")" "$(basename "$DEST")"
done
cat "$DEST/steps.txt"
