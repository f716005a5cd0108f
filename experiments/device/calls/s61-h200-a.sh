#!/usr/bin/env bash
# Prepared at stop 60 for the next H200 session (docs/rules.md, "The next GPU runs", 0). h200-s60-softmax-base.yaml
# (047ab3bb) is the shipped 14d54925 plus 8 unsplit rules keyed on online_softmax_reduce (softmax forwards), fitted on
# the stratified training A/B of stop 60. First the GPU tests that stop 60 wrote or changed and could not run (the
# typed rule on a real compile; the install test's keep-default shape, now outside entries and Inductor's split),
# with the file installed as heuristics/h200.yaml (the device's copy); then held-out set 54 (seed 2085, drawn at stop
# 60 before the file was fitted), scored once; then the focused held-out draw of softmax forwards in Inductor's split
# region (experiments/heldout/set54-softmax-draw.json, seed 2086, 100 problems, 13 inside the typed rules' spans;
# drawn after the fit, before any score), where the random gate rarely reaches them (15 of the 15000 problems of H200
# sets 5-54), scored once.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml
# experiments/candidates/h200-s60-softmax-base.yaml -- db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s60-softmax-base.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "cp heuristics/h200.yaml /tmp/h200-shipped.yaml && cp $cand heuristics/h200.yaml \
  && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings tests/test_gpu_unsplit_types.py \
  'tests/test_gpu_heuristics.py::test_install_changes_a_rule_shape_and_leaves_a_keep_default_shape_alone' \
  > \$OUT/pytest-s60.log 2>&1; tail -4 \$OUT/pytest-s60.log; cp /tmp/h200-shipped.yaml heuristics/h200.yaml" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set54-draw.json --rounds 3 \
  --storage sqlite:///db/heldout54.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8" \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set54-softmax-draw.json --rounds 3 \
  --storage sqlite:///db/heldout54-softmax.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8"
