#!/usr/bin/env bash
# Stop 52: the refit with FitParams.cols_by_alignment (experiments/candidates/h200-s52.yaml, from
# experiments/fits/h200-s52.txt, stop 51's data) scored once on held-out set 46 (seed 2077, drawn and committed at
# 8789ffd before any fit after stop 51).
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s52.yaml -- db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s52.yaml
steps=()
[ -f db/heldout46.sqlite ] || steps+=("python3 -m inductor_tune validate $cand --no-progress \
   --draw experiments/heldout/set46-draw.json --rounds 3 --storage sqlite:///db/heldout46.sqlite")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
