#!/usr/bin/env bash
# Stop 59, fourth H200 call: the method change of this stop scored once, on held-out set 52 (seed 2083, drawn at the
# start of stop 59 before any change). The change: where the rules touch a problem, Inductor's default is compiled a
# second time and timed in the same rounds, and a regression must be slower than both compiles beyond the band (the
# noise calibration of the third call found two default compiles 0.889-1.107 apart, their autotuner drawing other
# configs); and the pick's sleep calibration no longer times its kernel's loading. First the GPU test of the pick.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m pytest -q -m gpu tests/test_gpu_multi_kernel.py -p no:cacheprovider -p no:warnings -rA \
  > \$OUT/pytest-multi-kernel.log 2>&1; grep -v DEBUG \$OUT/pytest-multi-kernel.log | tail -8" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set52-draw.json --rounds 3 \
  --storage sqlite:///db/heldout52.sqlite 2>&1 | grep -v 'Warning\|warn\|^$\|Online softmax\|split the reduction\|important use case' | tail -30"
