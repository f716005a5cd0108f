#!/usr/bin/env bash
# Stop 50, on an H100, after the tie-rule refit b2c2a414 (experiments/candidates/h100-s48.yaml) passed held-out H100
# set 8: its model steps (`--models --rounds 5`) and, where no step regressed, the GPU tests with it installed as
# heuristics/h100.yaml. The models ran at stop 50 (db/models-h100-s48.sqlite, named after the file); the call's limit
# stopped the GPU tests with 7 passed, 2 skipped and the tenth under way: run them again alone with MODELS_DONE=1
# (experiments/device/calls/s51-h100-a.sh does, and more).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h100.yaml experiments/candidates/h100-s48.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h100-s48.yaml
steps=()
[ -n "${MODELS_DONE:-}" ] && touch /tmp/models-ok || steps+=("python3 -m inductor_tune validate $cand --no-progress \
   --models --rounds 5 --storage sqlite:///db/models-h100-s48.sqlite | tee /tmp/models.txt; \
   test \${PIPESTATUS[0]} -eq 0 && ! grep -q REGRESSED /tmp/models.txt && touch /tmp/models-ok")
steps+=("[ -f /tmp/models-ok ] && cp $cand heuristics/h100.yaml && \
   python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_models.py -p no:cacheprovider")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
