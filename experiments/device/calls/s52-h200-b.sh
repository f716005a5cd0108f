#!/usr/bin/env bash
# Stop 52: the second map of the shipped H200 file's loss at scaled_softmax_bwd 274x11897 (experiments/map2-s52),
# one fresh compile of 5 rounds. A diagnostic: no fit reads it.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml -- db/quack.sqlite`.
set -u
v="python3 -m inductor_tune validate"
steps=()
[ -f db/map52b-eee2f777.sqlite ] || steps+=("$v heuristics/h200.yaml --suite experiments/map2-s52/problems.yaml \
   --rounds 5 --no-progress --storage sqlite:///db/map52b-eee2f777.sqlite")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
