#!/usr/bin/env bash
# Stop 49, first H200 call (docs/rules.md "Stop 49"): time the model steps of 0128e279 (passed held-out set 43 in
# stop 48); where no step regressed, run the GPU tests with it installed as heuristics/h200.yaml; then start the
# coverage10 studies (resumable; the next call finishes them).
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s49-h200-a.sh
set -u
cand=experiments/candidates/h200-s48b.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 --storage sqlite:///db/models-h200-s49.sqlite \
   | tee /tmp/models.txt; test \${PIPESTATUS[0]} -eq 0 && ! grep -q REGRESSED /tmp/models.txt && touch /tmp/models-ok" \
  "[ -f /tmp/models-ok ] && cp $cand heuristics/h200.yaml && \
   python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_models.py -p no:cacheprovider" \
  "python3 -m inductor_tune tune experiments/coverage10-mix-many-rows.yaml \
   --storage sqlite:///db/coverage10-mix-many-rows.sqlite --no-progress"
