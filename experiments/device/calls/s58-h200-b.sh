#!/usr/bin/env bash
# Prepared at stop 57 for the next H200 session, after s58-h200-a.sh, where the refit with multi-kernel entries
# (h200-s57-mk3.yaml) passed set 49: its model steps (`validate --models --rounds 5`, with each variant's compile
# seconds, which the entries' extra kernels add to), then the suites of set 49's best-found samples validated with it
# (their studies ran at stop 57, db/bestfound49*.sqlite, and were not read before this score), then, with SHIP=1 and
# where no model is slower beyond noise, the GPU tests with it installed as heuristics/h200.yaml.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-mk3.yaml --
# db/quack.sqlite db/bestfound49.sqlite db/bestfound49-large.sqlite [db/models-h200-s57.sqlite]`.
set -u
cand=experiments/candidates/h200-s57-mk3.yaml; total=${BUDGET:-560}
digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
BUDGET=$total bash experiments/device/steps.sh "python3 -m inductor_tune validate $cand --no-progress --models \
  --rounds 5 --storage sqlite:///db/models-h200-s57.sqlite"
BUDGET=$((total - SECONDS)) bash experiments/device/bestfound.sh experiments/bestfound-set49 bestfound49 "$cand" \
  "$digest"
[ -z "${SHIP:-}" ] || BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh "cp $cand heuristics/h200.yaml \
  && python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_models.py \
  tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
