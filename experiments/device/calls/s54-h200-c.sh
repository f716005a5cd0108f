#!/usr/bin/env bash
# Stop 54, after the refit with `FitParams.odd_hull` (experiments/candidates/h200-s54.yaml) passed its one score on
# held-out set 47: the model catalog's training steps with it (a ship condition), then the GPU tests with it as
# heuristics/h200.yaml (the runtime's lookup changed). Pack with `bash experiments/device/pack.sh STASH
# heuristics/h200.yaml experiments/candidates/h200-s54.yaml -- db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s54.yaml
BUDGET=${BUDGET:-575} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h200-s54.sqlite" \
  "cp $cand heuristics/h200.yaml && python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu.py \
   tests/test_gpu_models.py -p no:cacheprovider -p no:warnings -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
