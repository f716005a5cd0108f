#!/usr/bin/env bash
# Prepared at stop 58 for the next H200 session, after s59-h200-a.sh: the best-found studies of set 51's samples
# (experiments/bestfound-set51{,-large}, drawn at stop 58; resumable) and their suites validated with
# h200-s57-mk3.yaml, its clean score against the best found; then, where set 51 passed, its model steps with each
# variant's compile seconds and, with SHIP=1, the GPU tests with it installed as heuristics/h200.yaml.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite [db/bestfound51.sqlite db/bestfound51-large.sqlite db/heldout51.sqlite]`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml; total=${BUDGET:-560}
digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
BUDGET=$total bash experiments/device/bestfound.sh experiments/bestfound-set51 bestfound51 "$cand" "$digest"
[ -z "${MODELS:-}" ] || BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh "python3 -m inductor_tune \
  validate $cand --no-progress --models --rounds 5 --storage sqlite:///db/models-h200-s59.sqlite"
[ -z "${SHIP:-}" ] || BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh "cp $cand heuristics/h200.yaml \
  && python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_models.py \
  tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
