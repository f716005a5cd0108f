#!/usr/bin/env bash
# Stop 61, H200: `validate --models` now compiles Inductor's default twice (models.DEFAULT_AGAIN, as the kernel
# validations do), so that a step regresses only where it is slower beyond noise than each compile of the default.
# First the GPU test of the models path (its Llama step with the shipped file), then llama-2048 and gpt2-1024 with
# the shipped heuristics/h200.yaml (047ab3bb), 5 rounds; the storage resumes a stopped run.
# Pack with `bash experiments/device/pack.sh STASH -- db/quack.sqlite` (nothing of db/ is read).
set -u
BUDGET=${BUDGET:-380} bash experiments/device/steps.sh \
  "python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
  'tests/test_gpu_models.py::test_shipped_rules_on_a_llama_training_step' > \$OUT/pytest-models.log 2>&1; \
  tail -3 \$OUT/pytest-models.log" \
  "python3 -m inductor_tune validate heuristics/h200.yaml --no-progress --models llama-2048,gpt2-1024 --rounds 5 \
  --storage sqlite:///db/models-h200-s61.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12"
