#!/usr/bin/env bash
# On the GPU host: compute-sanitizer's raw reports of the pitfall kernels, for the CPU tests'
# fixtures (tests/fixtures/sanitizer/<tool>_<kernel>.txt replace the hand-written SAMPLE_*).
# Each flawed kernel and its twin run `check --sanitize TOOL` as a user runs it; DEST keeps the
# tool's log as it wrote it (<tool>_<kernel>.txt), the check's JSON (<tool>_<kernel>.json), the
# command's stderr and wall time (steps.txt), beside `compute-sanitizer --version` and the plain
# check's time of one twin (the sanitized check's budget is 5x that). DEST.tgz is re-packed after
# every run, so a run cut off by its time limit still brings back what it finished.
#   bash benchmarks/sanitizer_capture.sh DEST
set -u
DEST=${1:?destination folder}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-sanitizer}
export PYTHONUNBUFFERED=1
PITFALLS=kernels/pitfalls
pack() { tar czf "$DEST.tgz.part" -C "$(dirname "$DEST")" "$(basename "$DEST")" && mv "$DEST.tgz.part" "$DEST.tgz"; }
python3 - >"$DEST/tool.txt" 2>&1 <<'EOF'
from workbench.profilers import sanitizer
tool = sanitizer.find()
print(tool.path, tool.version, sep="\n")
EOF
"$(head -1 "$DEST/tool.txt")" --version >>"$DEST/tool.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$DEST/tool.txt" 2>&1
run() {  # run TOOL KERNEL [ARGS...]: one check, its JSON, the sanitizer's log, the time
  local tool=$1 kernel=$2 start=$SECONDS label="$1_$2"
  shift 2
  timeout 600 python3 -m workbench check "$kernel" --path "$PITFALLS" --json "$@" \
    >"$DEST/$label.json" 2>"$DEST/$label.log"
  echo "$label rc=$? $((SECONDS - start)) s" >>"$DEST/steps.txt"
  python3 - "$DEST/$label.json" "$DEST/$label.txt" <<'EOF'
import json, shutil, sys
result = (json.load(open(sys.argv[1])) or {}).get("result") or {}
log = (result.get("sanitizer") or {}).get("log")
if log:
    shutil.copy(log, sys.argv[2])
EOF
  pack
}
run plain pitfall_off_by_one_fixed
for pair in memcheck:pitfall_off_by_one memcheck:pitfall_oob_write memcheck:pitfall_oob_read \
  initcheck:pitfall_uninit racecheck:pitfall_race synccheck:pitfall_race; do
  tool=${pair%%:*}
  kernel=${pair#*:}
  run "$tool" "$kernel" --sanitize "$tool"
  run "$tool" "${kernel}_fixed" --sanitize "$tool"
done
pack
echo "packed $DEST.tgz"
