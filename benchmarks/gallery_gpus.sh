#!/usr/bin/env bash
# On a GPU host with one card or several, from the repository root: the gallery in one go. Every
# kernel of the catalog is diagnosed as a user runs it (check, bench, ncu profile and findings,
# kept in the store); pitfall_spill alone first (cold caches) and again at the end (warm: the
# time of one full diagnosis); the two fixes the workbench applies itself (--try); the
# launch-bound transformer eager vs one CUDA graph vs torch.compile; softmax_online against copy
# bandwidth; the sweeps of the autotuned kernels; then `report --all` into DEST/report. Given NAMEs,
# only their diagnoses (pitfall_spill's two among them), then the report.
#
# One lane per GPU, each run in it seeing that card alone (CUDA_VISIBLE_DEVICES), pulls runs from
# one shared list, longest first. A lane runs PER_GPU diagnoses at a time: their start-ups and
# compiles overlap while their checks, timings and profiles take the card one at a time
# (workbench/runtime/gpu_lock.py: a lock per GPU UUID, so lanes never wait on each other; the
# store is SQLite in WAL mode, written by every lane at once). ncu profiles one kernel at a time
# across all processes sharing $TMPDIR/nsight-compute-lock: each lane has its own TMPDIR, so the
# cards are profiled side by side (NCU_LOCK=host: one lock for the host, as ncu has by default).
# The runs marked alone (a diagnosis timed whole, a fix, the benches and sweeps of the gallery)
# wait until their lane's other runs ended and, where one must come first, until that one did.
#
# Each run cut at its limit and at the deadline (the report keeps its last REPORT_S); one JSON
# (or .out) and one log per run; steps.txt with each run's rc, wall time, GPU and start; TGZ
# (default DEST.tgz) re-packed after every run, so a call cut off still brings back what it
# finished.
# PARTS=N PART=K runs the K-th of N parts of that list, for a host whose calls are cut short (two
# H100s: the whole gallery in two calls): a kernel's diagnosis goes with every run that follows
# it, and the parts are balanced by their estimated seconds. The parts share the store
# (WORKBENCH_REPORTS), so the report at the end of the last part covers them all.
#   bash benchmarks/gallery_gpus.sh DEST [NAME ...]
#   env: GPUS (default: every card nvidia-smi lists), PER_GPU (6), DEADLINE (s, 540), NCU_LOCK,
#   TGZ, PARTS (1), PART (1)
set -u
if ! [[ "${PARTS:-1}" =~ ^[1-9][0-9]*$ && "${PART:-1}" =~ ^[1-9][0-9]*$ ]] ||
  [ "${PART:-1}" -gt "${PARTS:-1}" ]; then
  echo "gallery_gpus.sh: PART=${PART:-1} of PARTS=${PARTS:-1}: PARTS is a count from 1 and PART" \
    "one of 1..PARTS (PARTS=2 PART=1, then PART=2)" >&2
  exit 2
fi
DEST=${1:?destination folder}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
TGZ=${TGZ:-$DEST.tgz}
shift
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-gallery}
export PYTHONUNBUFFERED=1 CUDA_DEVICE_ORDER=PCI_BUS_ID # CUDA numbers the cards as nvidia-smi does
PER_GPU=${PER_GPU:-6} # six at a time on two H100s: the longest of 46 took 210 of its 240 s
REPORT_S=60
END=$((SECONDS + ${DEADLINE:-540}))
GPUS=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | paste -sd ' ')}
if [ -z "$GPUS" ]; then
  echo "gallery_gpus.sh: nvidia-smi lists no GPU: run it on a GPU host, or name the cards" \
    "(GPUS='0 1')" >&2
  exit 2
fi
WORK=$(mktemp -d /tmp/wb-gallery-lanes.XXXXXX)
# the lanes' TMPDIRs differ: the GPU locks stay in one folder whatever TMPDIR says
export WORKBENCH_LOCKS=${WORKBENCH_LOCKS:-$WORK/locks}
QUEUE=$WORK/queue
HERE=$(cd "$(dirname "$0")" && pwd)
: >"$DEST/steps.txt"
: >"$DEST/queue.txt"

# Seconds one diagnosis took on one H100, four at a time (six for the last twelve): the list runs
# longest first, so that no long run starts last. A name not here counts as DEFAULT_S.
declare -A WALL=(
  [attention]=76 [attention_causal]=62 [gelu]=86 [gelu_tanh]=82 [gelu_dropout]=80
  [gelu_three_name]=49 [matmul]=51 [matmul_bias_gelu]=51 [layer_norm]=70 [rms_norm]=66
  [add_dropout_layer_norm]=66 [pitfall_atomics]=46 [pitfall_atomics_fixed]=42
  [pitfall_bank_conflicts]=38 [pitfall_bank_conflicts_fixed]=38 [pitfall_bf16_acc]=61
  [pitfall_bf16_acc_fixed]=31 [pitfall_dropout_rng]=36 [pitfall_dropout_rng_fixed]=50
  [pitfall_dropout_scale]=38 [pitfall_launch_bound]=43 [pitfall_launch_bound_fixed]=46
  [pitfall_off_by_one]=45 [pitfall_off_by_one_fixed]=35 [pitfall_small_grid]=60
  [pitfall_small_grid_fixed]=59 [pitfall_spill_fixed]=62 [pitfall_stride]=62
  [pitfall_stride_fixed]=60 [pitfall_tail]=55 [pitfall_tail_fixed]=60 [pitfall_wide_rows]=39
  [pitfall_wide_rows_fixed]=46 [vector_add]=32 [softmax]=35 [softmax_online]=42
  [transformer]=100 # check, compiles and bench of the --try: 71 s, then ncu
)
DEFAULT_S=60 # the sanitizer's pitfalls (a failing check runs memcheck too) and any new kernel

add() { # add ORDER SECONDS MODE LABEL LIMIT AFTER ARGS...: one run on the list
  local order=$1 est=$2
  shift 2
  printf '%s\t%s\t%s\n' "$order" "$est" "$*" >>"$WORK/runs"
}
pop() { # the next run on the list, taken off it (false when none is left)
  (
    flock 8
    IFS= read -r line <"$QUEUE" || exit 1
    sed -i 1d "$QUEUE"
    printf '%s\n' "$line"
  ) 8>"$QUEUE.lock"
}
pack() { # TGZ anew, one lane at a time; a log still being written leaves tar's rc at 1
  (
    flock 9
    tar czf "$TGZ.part" --warning=no-file-changed -C "$(dirname "$DEST")" "$(basename "$DEST")"
    [ $? -le 1 ] && mv "$TGZ.part" "$TGZ"
  ) 9>"$WORK/pack.lock"
}
run() { # run LABEL SECONDS ARGS...: one workbench command cut at its limit and the deadline
  local label=$1 limit=$2 left=$((END - ${RESERVE:-$REPORT_S} - SECONDS)) start=$SECONDS ext=out
  shift 2
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    echo "$label skipped: deadline" >>"$DEST/steps.txt"
    return
  fi
  case " $* " in *" --json "*) ext=json ;; esac
  timeout -k 10 "$limit" python3 -m workbench "$@" >"$DEST/$label.$ext" 2>"$DEST/$label.log"
  echo "$label rc=$? $((SECONDS - start)) s gpu ${CUDA_VISIBLE_DEVICES:--} from $start s" \
    >>"$DEST/steps.txt"
  pack
}
follow() { # follow LABEL: wait until that run ended (or the report's time came)
  [ "$1" = - ] && return
  until grep -qE "^$1 (rc=|skipped)" "$DEST/steps.txt" || [ "$SECONDS" -ge $((END - REPORT_S)) ]; do
    sleep 1
  done
}
lane() { # lane GPU: runs from the list on that card until the list is empty
  export CUDA_VISIBLE_DEVICES=$1
  [ "${NCU_LOCK:-gpu}" = host ] || export TMPDIR=$WORK/tmp-gpu$1
  mkdir -p "${TMPDIR:-/tmp}"
  local item mode label limit after args
  while item=$(pop); do
    read -r mode label limit after args <<<"$item"
    if [ "$mode" = alone ]; then
      wait
      follow "$after"
      # shellcheck disable=SC2086 # the arguments are words without spaces
      run "$label" "$limit" $args
    else
      # shellcheck disable=SC2086
      run "$label" "$limit" $args &
      while [ "$(jobs -pr | wc -l)" -ge "$PER_GPU" ]; do wait -n; done
    fi
  done
  wait
}

{
  nvidia-smi -L
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  ncu --version | tail -n 1
  echo "lanes: GPUs $GPUS, $PER_GPU diagnoses at a time each, ncu lock per ${NCU_LOCK:-gpu}"
  echo "part ${PART:-1} of ${PARTS:-1}"
} >"$DEST/versions.txt" 2>&1
if [ $# -gt 0 ]; then
  names="$*"
else
  names=$(python3 -m workbench list --json | python3 -c \
    'import json, sys; print(" ".join(k["name"] for k in json.load(sys.stdin)["kernels"]))')
fi
# ORDER 0 runs first, then 1 (the diagnoses), then 2 (what needs the card alone), each longest
# first; a diagnosis is limited to 240 s
for name in $names; do
  [ "$name" = pitfall_spill ] && continue
  add 1 "${WALL[$name]:-$DEFAULT_S}" side "$name" 240 - diagnose "$name" --json
done
case " $names " in *" pitfall_spill "*)
  add 0 56 alone spill_cold 150 - diagnose pitfall_spill --json
  add 2 35 alone spill_warm 120 spill_cold diagnose pitfall_spill --json
  ;;
esac
if [ $# -eq 0 ]; then
  each=$(($(nproc) / $(echo "$GPUS" | wc -w))) # the sweeps' compiles share the host's cores
  [ "$each" -gt 0 ] || each=1
  # what follows a diagnosis of the same kernel comes after it, newer in the store, as before
  add 2 29 alone spill_try 150 spill_warm diagnose pitfall_spill --try register-spill --json
  add 2 34 alone launch_bound_try 120 pitfall_launch_bound \
    diagnose pitfall_launch_bound --try launch-bound --json
  add 2 200 alone transformer_graph 240 transformer bench transformer --graph
  add 2 100 alone transformer_try 150 transformer \
    diagnose transformer --dtype float16 --try launch-bound --json
  add 2 70 alone bench_softmax_online 90 softmax_online bench softmax_online --no-compile
  # every dtype's cases, each against its own ceiling on the roofline (diagnose benches one)
  add 2 90 alone bench_matmul 150 matmul bench matmul --no-compile
  add 2 110 alone sweep_matmul 120 - sweep matmul --dtype float16 --jobs "$each"
  add 2 90 alone sweep_softmax_online 100 - sweep softmax_online --dtype float16 --jobs "$each"
  for name in attention layer_norm gelu softmax; do
    add 2 50 alone "sweep_$name" 60 - sweep "$name" --jobs "$each"
  done
fi
part() { # the runs of part PART of PARTS: whole groups (a run and those after it), longest first
  # to the part with the least so far; a run beside others counts a PER_GPU-th of its seconds
  awk -F '\t' -v parts="${PARTS:-1}" -v part="${PART:-1}" -v per="$PER_GPU" '
    { line[NR] = $0; split($3, w, " "); root = (w[4] == "-") ? w[2] : group[w[4]]
      group[w[2]] = root; of[NR] = root; cost[root] += (w[1] == "side") ? $2 / per : $2 }
    END {
      n = 0
      for (g in cost) names[++n] = g
      for (i = 1; i <= n; i++) # longest first, by name where equal: the same split every call
        for (j = i + 1; j <= n; j++)
          if (cost[names[j]] > cost[names[i]] || \
              (cost[names[j]] == cost[names[i]] && names[j] < names[i])) {
            t = names[i]; names[i] = names[j]; names[j] = t
          }
      for (i = 1; i <= n; i++) {
        best = 1
        for (k = 2; k <= parts; k++) if (load[k] < load[best]) best = k
        load[best] += cost[names[i]]; into[names[i]] = best
      }
      for (i = 1; i <= NR; i++) if (into[of[i]] == part) print line[i]
    }' "$WORK/runs" >"$WORK/runs.part"
  mv "$WORK/runs.part" "$WORK/runs"
}
queue() { # the list from the runs added, in order
  sort -s -t $'\t' -k1,1n -k2,2nr "$WORK/runs" | cut -f3 >"$QUEUE"
  cat "$QUEUE" >>"$DEST/queue.txt"
  : >"$WORK/runs"
}
lanes() { # one lane per GPU until the list is empty
  local gpu start=$SECONDS
  for gpu in $GPUS; do
    lane "$gpu" &
  done
  wait
  echo "lanes: $((SECONDS - start)) s on GPUs $GPUS, $PER_GPU diagnoses at a time each," \
    "ncu lock per ${NCU_LOCK:-gpu}" >>"$DEST/steps.txt"
}
part
queue
lanes
# a profile that failed beside the other cards' is taken again, one ncu at a time on the host
retry=$(python3 "$HERE/gallery_ncu.py" failed "$DEST")
if [ -n "$retry" ]; then
  for name in $retry; do
    add 1 "${WALL[$name]:-$DEFAULT_S}" side "retry_$name" 240 - diagnose "$name" --json
  done
  queue
  NCU_LOCK=host lanes
fi
RESERVE=0 run report "$REPORT_S" report --all --out "$DEST/report"
python3 "$HERE/gallery_ncu.py" summary "$DEST" >>"$DEST/steps.txt" 2>&1
pack
rm -rf "$WORK"
cat "$DEST/steps.txt"
