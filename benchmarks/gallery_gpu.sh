#!/usr/bin/env bash
# On the GPU host, after benchmarks/diagnose_gpu.sh filled the same store: what the H100 gallery
# adds to the diagnoses (each of which stored its check, bench, ncu profile and findings): the
# launch-bound workload eager vs one CUDA graph vs eager PyTorch vs torch.compile at every shape
# and dtype, the fix tried through `diagnose --try`, softmax_online against copy bandwidth, the
# sweeps of the autotuned kernels, then `report --all`. Each step bounded; DEST.tgz re-packed
# after each.   bash benchmarks/gallery_gpu.sh DEST [TGZ]   (env DEADLINE s, default 540)
set -u
DEST=${1:?destination folder}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
TGZ=${2:-$DEST.tgz}
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-diagnose}
export PYTHONUNBUFFERED=1
END=$((SECONDS + ${DEADLINE:-540}))
step() {  # step NAME SECONDS COMMAND...: run (cut at the deadline), log, time, pack
  local name=$1 limit=$2
  shift 2
  local left=$((END - SECONDS - 45))  # the report needs the last 45 s
  [ "$left" -lt 20 ] && { echo "$name skipped: deadline" >>"$DEST/steps.txt"; return; }
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$SECONDS
  timeout "$limit" "$@" >"$DEST/$name.out" 2>"$DEST/$name.log"
  echo "$name rc=$? $((SECONDS - start)) s" >>"$DEST/steps.txt"
  tar czf "$TGZ" -C "$(dirname "$DEST")" "$(basename "$DEST")"
}
wb=(python3 -m workbench)
step transformer_graph 240 "${wb[@]}" bench transformer --graph
step softmax_online 90 "${wb[@]}" bench softmax_online --no-compile
step transformer_try 150 "${wb[@]}" diagnose transformer --dtype float16 --try launch-bound
step sweep_matmul 120 "${wb[@]}" sweep matmul --dtype float16
step sweep_softmax_online 100 "${wb[@]}" sweep softmax_online --dtype float16
for name in attention layer_norm gelu softmax; do
  step "sweep_$name" 60 "${wb[@]}" sweep "$name"
done
END=$((END + 45))
step report 60 "${wb[@]}" report --all --out "$DEST/h100"
cat "$DEST/steps.txt"
