#!/usr/bin/env bash
# Stop 50, on an H100: the one score of the tie-rule refit b2c2a414 (experiments/candidates/h100-s48.yaml) on held-out
# H100 set 8 (seed 2048). The gate run resumes: where the call's limit stops it, copy db/heldout-h100-8.sqlite back
# and run the same script again.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h100.yaml experiments/candidates/h100-s48.yaml --
# db/quack.sqlite [db/heldout-h100-8.sqlite]`.
set -u
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate experiments/candidates/h100-s48.yaml --no-progress \
   --draw experiments/heldout/h100-set8-draw.json --rounds 3 --storage sqlite:///db/heldout-h100-8.sqlite"
