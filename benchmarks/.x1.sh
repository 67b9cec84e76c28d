. .device-kit/setup.sh >/dev/null
D=/tmp/x1; mkdir -p $D
( time python3 benchmarks/sweep_vs_autotune.py --out $D/sva ) > $D/sva.out 2>&1
PER_GPU=4 DEADLINE=300 bash benchmarks/gallery_gpus.sh $D/gal pitfall_oob_read transformer rms_norm gelu_dropout > $D/gal.out 2>&1
tar czf $OUT/x1.tgz -C /tmp x1 --exclude=store
tail -n 4 $D/sva.out; cat $D/gal/steps.txt
