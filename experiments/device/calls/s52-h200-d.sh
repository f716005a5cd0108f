#!/usr/bin/env bash
# Stop 52, after the refit 48edc030 (experiments/candidates/h200-s52.yaml) passed held-out set 46: its model steps
# (`--models --rounds 5`) and, where no step regressed and time is left (GPU_TESTS=1), the GPU tests with it installed
# as heuristics/h200.yaml.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s52.yaml --
# db/quack.sqlite`.
set -u
cand=experiments/candidates/h200-s52.yaml
steps=()
[ -f db/models-h200-s52.sqlite ] || steps+=("python3 -m inductor_tune validate $cand --no-progress --models \
   --rounds 5 --storage sqlite:///db/models-h200-s52.sqlite | tee /tmp/models.txt; \
   test \${PIPESTATUS[0]} -eq 0 && ! grep -q REGRESSED /tmp/models.txt && touch /tmp/models-ok")
[ -z "${GPU_TESTS:-}" ] || steps+=("cp $cand heuristics/h200.yaml && python3 -m pytest -q -m gpu \
   tests/test_gpu_heuristics.py tests/test_gpu_models.py tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs \
   > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
