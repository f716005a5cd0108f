#!/usr/bin/env bash
# Prepared at stop 59 for the next H200 session (docs/rules.md, "The next GPU runs", 0). h200-s57-mk3.yaml
# (6600b4f6) with the settling pick passed held-out set 52 at stop 59, and its Llama model steps were within noise;
# the GPT-2 steps and the GPU tests with it installed did not fit in that session. This runs them: the GPT-2 models
# with cold compiles (about 120 s), then the GPU tests with the file installed as heuristics/h200.yaml (the copy is
# the device's; ship here only where both pass).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --models gpt2-1024,gpt2-2048 --rounds 5 \
  --storage sqlite:///db/models-h200-s60.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12" \
  "cp $cand heuristics/h200.yaml && python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py \
  tests/test_gpu_multi_kernel.py tests/test_gpu_models.py tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs \
  > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
