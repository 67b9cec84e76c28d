#!/usr/bin/env bash
# On the GPU host: the TUI in a real terminal (tmux, 170x45), used as a user would on the spilling
# kernel: filter to it, choose the neighbours sweep space, then sweep (t), profile (p), diagnose
# (g) and try the fix (y), each waited for until its job ends; the screen after each step and
# its time land in DEST (screens as text, steps.txt).   bash benchmarks/tui_gpu_tmux.sh DEST
set -u
DEST=${1:?destination folder}
mkdir -p "$DEST"
export WORKBENCH_REPORTS=${WORKBENCH_REPORTS:-/tmp/wb-diagnose}
S=wb
tmux kill-server 2>/dev/null
screen() { tmux capture-pane -p -t $S; }
shot() { screen >"$DEST/$1.txt"; }
keys() { for k in "$@"; do tmux send-keys -t $S "$k"; sleep 0.4; done; }
waitjob() {  # waitjob NAME LIMIT: until the job bar no longer offers to cancel
  local start=$SECONDS
  sleep 2
  while [ $((SECONDS - start)) -lt "$2" ] && screen | grep -q "x cancels"; do sleep 1; done
  echo "$1 $((SECONDS - start)) s" | tee -a "$DEST/steps.txt"
  shot "$1"
}
start=$SECONDS
tmux new-session -d -s $S -x 170 -y 45 "python3 -m workbench"  # the UI draws on stderr
until screen | grep -q pitfall_spill || [ $((SECONDS - start)) -gt 60 ]; do sleep 0.1; done
echo "painted $((SECONDS - start)) s" | tee -a "$DEST/steps.txt"
shot 0_start
keys / && tmux send-keys -t $S -l pitfall_spill && sleep 0.5 && keys Enter
shot 1_filtered
keys o Tab Tab Tab Tab Enter Down Down Enter Tab Enter  # options: sweep space = neighbours
shot 2_options
keys t && waitjob 3_sweep 240
keys p && waitjob 4_profile 180
keys g && waitjob 5_diagnose 180
keys y && waitjob 6_try 180
keys j && sleep 1 && shot 7_jobs
keys Escape q
sleep 2
cat "$DEST/steps.txt"
