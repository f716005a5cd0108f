#!/usr/bin/env bash
# Prepared at stop 93 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item:
#   H100: the refit cycle over d7915d43's evidence, `GPU=h100 FILL_ARGS="--fill-share 0.25 --fill-shapes 400"
#         fill_span_refit.sh 92 1 3 913 15` (fill 1, the fit without span round 3, span round 3, the refit
#         experiments/candidates/h100-s92.yaml and its one score on H100 set 15), resumable;
#   H200: s90.sh's H200 items (h200-after-s84.sh).
# A call's working tree is this machine's, where what the last call wrote is not yet (stop 92's call 7): what the
# cycle writes is kept in .devkeep and put back at the next call on the same warm machine. A fresh machine has no
# .devkeep: commit what each call brings back before the next one.
# Pack as item 0 says; start with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && BUDGET=540 bash
# experiments/device/calls/s93.sh`.
set -u
B=${BUDGET:-560}
keep=.devkeep
kept_dbs="db/crossmeasure-h100-s92-*.sqlite db/heldout-h100-15.sqlite db/mix-e2e-sweep-retime.sqlite
 db/bestfound72*.sqlite"
mkdir -p $keep
for f in $keep/*.sqlite; do [ ! -e "$f" ] || cp "$f" db/; done
# A fit committed here wins over the one an earlier call kept: the cycle does not fit again what exists.
for f in $keep/*.yaml; do
  [ ! -e "$f" ] || [ -e "experiments/candidates/${f##*/}" ] || cp "$f" experiments/candidates/
done
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*) GPU=h100 FILL_ARGS="--fill-share 0.25 --fill-shapes 400" BUDGET=$B \
      bash experiments/device/fill_span_refit.sh 92 1 3 913 15 ;;
  *) echo "s93.sh: no item for GPU 0 (${have:-none})" >&2; exit 2 ;;
esac
rc=$?
for f in $kept_dbs experiments/candidates/h100-s92*.yaml; do [ ! -e "$f" ] || cp "$f" $keep/; done
exit $rc
