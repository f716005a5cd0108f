#!/usr/bin/env bash
# Stop 52 (docs/rules.md "The next GPU runs", 0 of stop 51): the model GPU tests once with stop 51's `validate`
# change, then the map of the shipped H200 file's loss at scaled_softmax_bwd 274x11897 (experiments/map-s52), one
# fresh compile of 5 rounds. A diagnostic: no fit reads it.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml -- db/quack.sqlite`.
set -u
v="python3 -m inductor_tune validate"
steps=()
[ -n "${SKIP_GPU_TESTS:-}" ] || steps+=("python3 -m pytest -q -m gpu tests/test_gpu_models.py -p no:cacheprovider \
   -p no:warnings -rs > \$OUT/pytest-models.log 2>&1; tail -3 \$OUT/pytest-models.log")
[ -f db/map52-eee2f777.sqlite ] || steps+=("$v heuristics/h200.yaml --suite experiments/map-s52/problems.yaml \
   --rounds 5 --no-progress --storage sqlite:///db/map52-eee2f777.sqlite")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
