#!/usr/bin/env bash
# Prepared at stop 76 (docs/rules.md, "Stop 76"): the method change after held-out set 65, scored once on held-out
# set 66 (seed 2098, experiments/heldout/set66-draw.json, drawn and committed before the change). The candidate,
# experiments/candidates/h200-s76.yaml (293e238e), is h200-s74.txt's evidence fitted with no loss excused at any
# evidence shape (experiments/fits/h200-s76.txt and .excused; made on the CPU). A plain call scores it
# (db/heldout66.sqlite, about 330 s) and, where it passes, times its `gpt2-768-t400` step (db/models-h200-s76.sqlite).
#   PART=tests-c, PART=tests-d: the GPU tests with the candidate installed (one call each);
#   SAMPLES=1: set 66's best-found studies and both suites validated with the candidate.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s76.yaml --
# db/quack.sqlite`.
set -u
B=${BUDGET:-560}
cand=experiments/candidates/h200-s76.yaml
if [ -n "${SAMPLES:-}" ] || [ -n "${PART:-}" ]; then
  exec bash experiments/device/candidate_parts.sh $cand 66 76
fi
BUDGET=$B bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set66-draw.json --rounds 3 \
   --storage sqlite:///db/heldout66.sqlite \
   && python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h200-s76.sqlite \
   --models gpt2-768-t400 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8"
