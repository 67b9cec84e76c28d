#!/usr/bin/env bash
# On the GPU host, from the repository root: the zoo's GPU tests and the zoo table, each step
# bounded in time; everything lands in DEST (logs, zoo.json, zoo.md) and DEST.tgz.
#   bash benchmarks/zoo_gpu.sh DEST [diagnose|bench-sweep|table|all]
# diagnose and bench-sweep: tests/gpu/test_zoo_gpu.py in two parts, four processes each (gpu_lock
# gives their timings the GPU one at a time); table: benchmarks/zoo.py, which resumes from DEST's
# zoo.json, so a call stopped by its time limit is continued by the next.
# The zoo imports liger-kernel, flag-gems, fla-core and einops (pure-Python wheels; no dependency
# of theirs is needed): carry them in the device kit's wheels/, or where they are still missing the wheels
# in ZOO_WHEELS (default .zoo-wheels/) are installed as the kit installs its own, into /tmp/site
# without dependencies, so torch and triton stay as they are.
set -u
DEST=${1:?destination folder}
PART=${2:-all}
case $PART in diagnose | bench-sweep | table | all) ;;
*) echo "zoo_gpu.sh: no part '$PART' (see the usage line at the top)" >&2 && exit 2 ;;
esac
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-zoo}
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/steps.sh"  # step NAME SECONDS COMMAND...
if ! python3 -c "import liger_kernel, fla, einops, importlib.util as u; assert u.find_spec('flag_gems')" 2>/dev/null; then
  step install_wheels 120 python3 -m pip install -q --no-index --no-deps --no-compile \
    --target /tmp/site "${ZOO_WHEELS:-.zoo-wheels}"/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
{
  nvidia-smi -L
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  python3 -m pip show liger-kernel flag-gems fla-core 2>/dev/null | grep -E '^(Name|Version)'
} >"$DEST/versions.txt" 2>&1
tests=(python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 --dist load --durations=0)
case $PART in diagnose | all)
  mkdir -p "$DEST/fixtures"
  step zoo_diagnose 590 env ZOO_FIXTURES="$DEST/fixtures" "${tests[@]}" tests/gpu/test_zoo_gpu.py -k diagnose
  ;;
esac
case $PART in bench-sweep | all)
  mkdir -p "$DEST/fixtures"
  step zoo_bench_sweep 590 env ZOO_FIXTURES="$DEST/fixtures" "${tests[@]}" tests/gpu/test_zoo_gpu.py -k "bench or sweep"
  ;;
esac
case $PART in table | all)
  # the diagnosis runs the check and the bench itself: 345 s for all 16 on an H100
  step zoo_table 590 python3 benchmarks/zoo.py --out "$DEST" --resume --jobs 4 --timeout 400 \
    --steps diagnose,sweep
  ;;
esac
tar czf "$DEST.tgz" -C "$(dirname "$DEST")" "$(basename "$DEST")"
