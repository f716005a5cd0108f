#!/usr/bin/env bash
# Stop 60, H200: the GPU test that failed in s60-h200-b.sh with h200-s57-mk3.yaml installed, alone with its full
# traceback; then held-out set 53 (seed 2084, drawn at the start of stop 60 before any change) scored once with
# h200-s60-softmax.yaml (mk3 plus unsplit rules keyed on online_softmax_reduce, fitted on the training A/B of
# s60-h200-b.sh), and set 53's best-found suites (studied in s60-h200-a) validated with it: its clean score.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml
# experiments/candidates/h200-s60-softmax.yaml -- db/quack.sqlite db/bestfound53.sqlite db/bestfound53-large.sqlite`.
set -u
cand=experiments/candidates/h200-s60-softmax.yaml
BUDGET=${BUDGET:-520} bash experiments/device/steps.sh \
  "cp heuristics/h200.yaml /tmp/h200-shipped.yaml && cp experiments/candidates/h200-s57-mk3.yaml heuristics/h200.yaml \
  && python3 -m pytest -v --tb=long -m gpu -p no:cacheprovider -p no:warnings \
  'tests/test_gpu_heuristics.py::test_install_changes_a_rule_shape_and_leaves_a_keep_default_shape_alone' \
  > \$OUT/pytest-install.log 2>&1; tail -3 \$OUT/pytest-install.log; cp /tmp/h200-shipped.yaml heuristics/h200.yaml" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set53-draw.json --rounds 3 \
  --storage sqlite:///db/heldout53.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8" \
  "python3 -m inductor_tune validate $cand --suite experiments/bestfound-set53/problems.yaml --db db/bestfound53.sqlite \
  --no-progress --storage sqlite:///db/bestfound53-validate-s60.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -4" \
  "python3 -m inductor_tune validate $cand --suite experiments/bestfound-set53-large/problems.yaml \
  --db db/bestfound53-large.sqlite --no-progress --storage sqlite:///db/bestfound53-large-validate-s60.sqlite 2>&1 \
  | grep -v 'Warning\|warn\|^$' | tail -4"
