#!/usr/bin/env bash
# Run shell commands one after another on a lent GPU machine within a time budget, and bring back what they wrote.
#
#   BUDGET=570 bash experiments/device/steps.sh 'python3 -m inductor_tune validate ...' 'python3 -m ...'
#
# A device call has one command line and a per-call limit; this runs each step with what is left of BUDGET seconds
# (stopped when that runs out; skipped where less than 30 s is left), so a call's budget is spent on whole steps
# first and a resumable step (tune, crossmeasure) keeps what it finished. $OUT/log gets the GPU's name, memory and
# driver, the torch and triton versions, and each step's output, start, exit status and seconds; after each step,
# every db/*.sqlite that a step of the call created or changed is copied to $OUT/db (or packed into $OUT/db.tar.xz
# where more would come back than a call returns). Where the databases were carried packed
# (experiments/device/pack.sh), unpack them first: `tar xJf .carry/db.tar.xz && bash experiments/device/steps.sh ...`.
set -u
: "${OUT:?steps.sh runs on the device machine, where OUT is set}"
T0=$(date +%s); BUDGET=${BUDGET:-570}; LOG=$OUT/log
# One call may run steps.sh more than once (a gate, then bestfound.sh): each run brings back what every run of the
# call changed, so the mark is made by the call's first run and named by its $OUT, a folder each call gets new. (Made
# where no log was under $OUT yet, it was never made for a call that sent its own output to $OUT/log, and nothing
# came back; stop 68.) An inode is reused once its folder is gone, and /tmp outlives calls on a warm machine and test
# runs on a CI machine, so a mark older than any call (the device stops one at 600 s) is another call's: CI at stop 73
# found such a mark and brought back a database no step had touched. (Tests put their marks in a folder of their own,
# STEPS_MARK_DIR.)
mark=${STEPS_MARK_DIR:-/tmp}/steps-sh.mark.$(stat -c %i "$OUT")
[ -n "$(find "$mark" -mmin -15 2>/dev/null)" ] || touch "$mark"
mkdir -p db
{ echo "##### call at $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } >> "$LOG" 2>&1
bring_back() {
  # The stores write SQLite in WAL mode: a step the budget killed leaves its commits in DB.sqlite-wal, which a copy of
  # DB.sqlite alone loses (stop 56 lost a cut gate, span round and model run that way). Checkpoint every database first.
  for f in db/*.sqlite; do
    [ ! -f "$f-wal" ] || python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$f" >> "$LOG" 2>&1
  done
  # A call returns at most 8 files from $OUT (stop 48 lost a ninth), each at most 16 MiB (stop 90 lost a 544 s
  # crossmeasure database over it): past either, the databases come back as one tarball (xz shrinks SQLite ~15x).
  mapfile -t changed < <(find db -name '*.sqlite' -newer "$mark")
  rm -rf "$OUT/db" "$OUT/db.tar.xz"
  others=$(find "$OUT" -type f | wc -l)
  large=0; [ ${#changed[@]} -eq 0 ] || large=$(find "${changed[@]}" -size +15M | wc -l)
  if [ $((others + ${#changed[@]})) -le 8 ] && [ "$large" -eq 0 ]; then
    mkdir -p "$OUT/db"; [ ${#changed[@]} -eq 0 ] || cp "${changed[@]}" "$OUT/db/"
  else
    tar cf - "${changed[@]}" | xz -6 -T0 > "$OUT/db.tar.xz"
  fi
}
# The device tool kills a call at its own limit with everything in it, which no trap survives (stop 66 lost a
# model run so, its BUDGET set above the device time left): what finished steps wrote comes back after each step.
for step in "$@"; do
  left=$((BUDGET - ($(date +%s) - T0)))
  if [ "$left" -lt 30 ]; then echo "== skipped ($left s left): $step" >> "$LOG"; continue; fi
  t=$(date +%s); echo "== $step (${left}s left) $(date +%T)" >> "$LOG"
  timeout $((left - 10)) bash -c "$step" >> "$LOG" 2>&1
  echo "== rc=$? in $(( $(date +%s) - t ))s" >> "$LOG"
  bring_back
done
