. .device-kit/setup.sh >/dev/null
D=/tmp/x1; mkdir -p $D
( time python3 benchmarks/sweep_vs_autotune.py --out $D/sva ) > $D/sva.out 2>&1
( time python3 -m pytest -q -x tests/gpu/test_sweep_gpu.py ) > $D/tests.out 2>&1
export WORKBENCH_REPORTS=$D/store PYTHONFAULTHANDLER=1
timeout 170 python3 -m workbench diagnose pitfall_oob_read --json > $D/oob.json 2> $D/oob.log &
P=$!
sleep 125
ps -eo pid,ppid,etimes,stat,wchan:24,args --forest | grep -v "ps -eo" > $D/ps.txt
nvidia-smi > $D/smi.txt 2>&1
for p in $(pgrep -f "workbench.run.worker"); do kill -ABRT $p; done
sleep 3
wait $P
tar czf $OUT/x1.tgz -C /tmp x1
tail -3 $D/sva.out $D/tests.out; cat $D/ps.txt | grep -v "\[" | tail -25
