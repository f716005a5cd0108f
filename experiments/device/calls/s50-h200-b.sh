#!/usr/bin/env bash
# Stop 50, after the refit eee2f777 (experiments/candidates/h200-s50.yaml) passed held-out set 44: its model steps
# (`--models --rounds 5`) and, where no step regressed, the GPU tests with it installed as heuristics/h200.yaml.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s50.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s50.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h200-s50.sqlite | tee /tmp/models.txt; \
   test \${PIPESTATUS[0]} -eq 0 && ! grep -q REGRESSED /tmp/models.txt && touch /tmp/models-ok" \
  "[ -f /tmp/models-ok ] && cp $cand heuristics/h200.yaml && \
   python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_models.py -p no:cacheprovider"
