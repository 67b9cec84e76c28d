"""The loop's last verbs: gather every fact about a kernel (by running the jobs), diagnose it, try a
fix and measure it again. Parent side: may import the stages' pure modules and run, no torch."""
