#!/usr/bin/env bash
# Stop 60, H200: the training A/B of an unsplit rule keyed on the reduction type (online_softmax_reduce, the softmax
# forwards), on a stratified training draw of the split region (experiments/unsplit/train-softmax-strat-draw.json,
# 4 problems per rows band x N octave, none of a held-out draw): the one kernel with Inductor's config, then with
# persistent XBLOCK=1 16 warps. Then the GPU tests with h200-s57-mk3.yaml installed as heuristics/h200.yaml, verbose
# (s60-h200-a.sh ran them quietly and ran out of time after one failure).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml
# experiments/unsplit/probe-softmax.yaml experiments/unsplit/probe-softmax-persistent16.yaml -- db/quack.sqlite`.
set -u
draw=experiments/unsplit/train-softmax-strat-draw.json; cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate experiments/unsplit/probe-softmax.yaml --draw $draw --rounds 3 --no-progress \
  --storage sqlite:///db/unsplit-softmax-train.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -6" \
  "python3 -m inductor_tune validate experiments/unsplit/probe-softmax-persistent16.yaml --draw $draw --rounds 3 \
  --no-progress --storage sqlite:///db/unsplit-softmax-persistent16-train.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' \
  | tail -6" \
  "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu tests/test_gpu_heuristics.py \
  tests/test_gpu_multi_kernel.py tests/test_gpu_models.py tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs \
  > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
