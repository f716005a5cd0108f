#!/usr/bin/env bash
# Prepared at stop 60 for the next H200 session, after s61-h200-a.sh: the best-found studies of set 54's samples
# (experiments/bestfound-set54{,-large}, drawn at stop 60; resumable) and their suites validated with
# h200-s60-softmax-base.yaml, its clean score; with SHIP=1 (where set 54 passed), the GPU tests with it installed as
# heuristics/h200.yaml. Its new rules cannot reach the model steps (their attention is SDPA and they compute no loss,
# so no softmax reaches Inductor); run `validate --models` where budget is left.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml
# experiments/candidates/h200-s60-softmax-base.yaml -- db/quack.sqlite [db/bestfound54.sqlite
# db/bestfound54-large.sqlite]`.
set -u
cand=experiments/candidates/h200-s60-softmax-base.yaml; total=${BUDGET:-560}
digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
BUDGET=$total bash experiments/device/bestfound.sh experiments/bestfound-set54 bestfound54 "$cand" "$digest"
[ -z "${SHIP:-}" ] || BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh "cp $cand heuristics/h200.yaml \
  && python3 -m pytest -v --tb=short -m gpu tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py \
  tests/test_gpu_models.py tests/test_gpu.py tests/test_gpu_unsplit_types.py -p no:cacheprovider -p no:warnings -rs \
  > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
