#!/usr/bin/env bash
# On the GPU host, from the repository root: the GPU test suite and the GPU benchmarks, each step
# bounded in time so that a stuck one costs only itself; everything lands in DEST (logs, JSON,
# the fixtures the CPU tests read) and DEST.tgz.
#   bash benchmarks/gpu_verify.sh DEST [suite-files|suite-diagnoses|paths|sweep|cache|diagnose|all|gpus]
# suite-files then suite-diagnoses: all of `pytest -m gpu`, each in parallel (on an H100 ~6.5 and
# ~7 min: one call each).
set -u
DEST=${1:?destination folder}
PART=${2:-all}
case $PART in suite-files | suite-diagnoses | paths | sweep | cache | diagnose | all | gpus) ;;
*) echo "gpu_verify.sh: no part '$PART' (see the usage line at the top)" >&2 && exit 2 ;;
esac
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-verify}
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/steps.sh"  # step NAME SECONDS COMMAND...
{
  nvidia-smi -L
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} >"$DEST/versions.txt" 2>&1
# -v: each test's outcome as it ends, so a step cut at its time limit still names its failures
gpu=(python3 -m pytest -m gpu -v -p no:cacheprovider -n 6 --durations=0)
case $PART in suite-files)
  # the zoo has its own script (benchmarks/zoo_gpu.sh): 16 diagnoses would not fit this step
  step suite_files 560 "${gpu[@]}" --dist loadfile tests/gpu tests/test_pitfall_kernels.py \
    --ignore tests/gpu/test_zoo_gpu.py -k "not ranked_first and not nothing_above_info and not at_most_45"
  ;;
esac
case $PART in suite-diagnoses)
  # the diagnoses side by side (gpu_lock gives their timings and ncu the GPU one at a time),
  # then the one that times a whole diagnosis, alone
  step suite_diagnoses 480 "${gpu[@]}" --dist load tests/gpu/test_diagnose_gpu.py \
    -k "ranked_first or nothing_above_info"
  step suite_45s 80 python3 -m pytest -m gpu -q -p no:cacheprovider -n 0 \
    tests/gpu/test_diagnose_gpu.py -k at_most_45
  ;;
esac
case $PART in paths | all)
  step gpu_paths 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_gpu_paths.py
  ;;
esac
case $PART in sweep | all)
  step gpu_sweep 200 env SWEEP_FIXTURES="$DEST" \
    python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_sweep_gpu.py
  step sweep_vs_autotune 200 python3 benchmarks/sweep_vs_autotune.py --out "$DEST/sweep_vs_autotune"
  step sweep_matmul16 200 python3 -m workbench sweep matmul16 --path benchmarks/sweep_matmul16.py
  ;;
esac
case $PART in cache | all)
  step gpu_cache 500 env CACHE_FIXTURE_OUT="$DEST/cache" \
    python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cache_gpu.py
  ;;
esac
case $PART in diagnose | all)
  step gpu_pitfalls 400 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_pitfall_kernels.py \
    tests/gpu/test_check_facts_gpu.py
  mkdir -p "$DEST/diagnose"
  step gpu_diagnose 900 env DIAGNOSE_FIXTURES="$DEST/diagnose" \
    python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_diagnose_gpu.py
  ;;
esac
case $PART in gpus)
  # every GPU of the host: 1, 2, 4... natively and on a local Ray cluster, one worker killed
  step sweep_gpus 580 python3 benchmarks/sweep_gpus.py --out "$DEST/gpus"
  ;;
esac
tar czf "$DEST.tgz" -C "$(dirname "$DEST")" "$(basename "$DEST")"
