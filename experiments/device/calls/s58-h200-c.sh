#!/usr/bin/env bash
# Stop 58, after s58-h200-b.sh showed Inductor's MultiKernel picking by launch time at short kernels (it timed
# Inductor's kernel at 37 us and another at 4.7 us where both run in ~5 us, and a second compile of the same
# problems picked otherwise): the entries' kernels are now timed by inductor_tune.runtime.pick (a burst behind a GPU
# sleep, L2 zeroed, interleaved rounds, Inductor's kernel kept unless another wins every round beyond the noise band).
# First the GPU test of entries and of that pick, then the spent probe of set 49 again (a diagnostic), then the one
# score of h200-s57-mk3.yaml with the new pick on held-out set 50 (seed 2081, drawn at stop 58 before the change).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m pytest -q -m gpu tests/test_gpu_multi_kernel.py -p no:cacheprovider -p no:warnings -rs 2>&1 | tail -4" \
  "python3 -m inductor_tune validate $cand --suite experiments/multikernel/probe-set49.yaml --no-progress --rounds 3 \
  --storage sqlite:///db/multikernel-probe49-pick.sqlite 2>&1 | grep -v Warning | tail -20" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set50-draw.json --rounds 3 \
  --storage sqlite:///db/heldout50.sqlite"
