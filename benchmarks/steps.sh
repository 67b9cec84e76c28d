# Sourced by the GPU-host scripts: `step NAME SECONDS COMMAND...` runs the command cut at its
# time limit, its output in $DEST/NAME.log, and appends "NAME rc=N S s" to $DEST/steps.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$DEST/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - start)) s" | tee -a "$DEST/steps.txt"
}
