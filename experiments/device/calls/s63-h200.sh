#!/usr/bin/env bash
# Prepared at stop 62 for the next H200 session (docs/rules.md, "The next GPU runs", 0), in three calls (PART=a, b, c).
# aa79734d (experiments/candidates/h200-s62.yaml: the refit over experiments/fits/h200-s62.txt, the typed softmax
# rules included) failed held-out set 55 on one problem whose compile under the rules built Inductor's own kernels
# and launch configs (a split-autotune entry, which the shipped 047ab3bb has too, kept Inductor's split). The scorer
# now sets such problems apart (validate.same_program), a change of method: aa79734d is scored once, on held-out set
# 56 (seed 2088, drawn at stop 62 after its fit and that change, before any score).
#   a: set 56 (about 290 s), then, where it passes, the GPU tests of test_gpu_models.py and test_gpu.py with the file
#      installed as heuristics/h200.yaml (about 280 s);
#   b: where set 56 passed (SHIP=1), the other GPU tests (about 300 s), then llama-2048, gpt2-1024 and gpt2-2048;
#   c: where set 56 passed (SHIP=1), llama-4096 and llama-8192 (`validate --models` resumes its storage).
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s62.yaml -- db/quack.sqlite
# [db/heldout56.sqlite db/models-h200-s63.sqlite]`.
set -u
cand=experiments/candidates/h200-s62.yaml
installed="cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider \
  -p no:warnings -rs"
models="python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h200-s63.sqlite"
case "${PART:-a}" in
  a) BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set56-draw.json --rounds 3 \
      --storage sqlite:///db/heldout56.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12; \
      [ \${PIPESTATUS[0]} -eq 0 ] && touch /tmp/set56-passed" \
      "[ -f /tmp/set56-passed ] && $installed tests/test_gpu_models.py tests/test_gpu.py > \$OUT/pytest-a.log 2>&1; \
      tail -3 \$OUT/pytest-a.log" ;;
  b) [ -n "${SHIP:-}" ] && BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "$installed tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py \
      > \$OUT/pytest-b.log 2>&1; tail -3 \$OUT/pytest-b.log" \
      "$models --models llama-2048,gpt2-1024,gpt2-2048 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12" ;;
  c) [ -n "${SHIP:-}" ] && BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "$models --models 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12" ;;
esac
