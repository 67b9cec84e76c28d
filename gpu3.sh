. .device-kit/setup.sh >/dev/null
export PYTHONPATH=$PWD:$PYTHONPATH
R=$OUT/r; mkdir -p $R; S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
cp -r reports/h100 $R/h100
timeout 200 python -m workbench bench attention --out $R/h100 --refresh-ceilings > $R/bench_attention.txt 2>&1; echo "bench attention rc $? at $(( $(date +%s)-S )) s"
for k in attention_causal softmax layer_norm rms_norm; do timeout 150 python -m workbench bench $k --out $R/h100 > $R/bench_$k.txt 2>&1; echo "bench $k rc $? at $(( $(date +%s)-S )) s"; done
grep -E "^\| (attention|attention_causal|softmax|layer_norm|rms_norm) \|" $R/h100/README.md | grep -v float32
grep -h unsteady $R/bench_*.txt
timeout 150 python -m workbench diagnose attention --dtype bfloat16 --shape 4x32x4096x64 > $R/diagnose_d64.txt 2>&1; echo "diagnose rc $? at $(( $(date +%s)-S )) s"; head -24 $R/diagnose_d64.txt
timeout 120 python -m pytest -q -m gpu tests/gpu/test_attention_ws_gpu.py -p no:cacheprovider > $R/pytest_ws.txt 2>&1; echo "pytest rc $? $(tail -1 $R/pytest_ws.txt) at $(( $(date +%s)-S )) s"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
