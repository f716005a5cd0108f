#!/usr/bin/env bash
# Prepared at stop 56 for the next H200 session, after s57-h200-a.sh: the rest of set 48's best found (tune resumes; a
# suite whose database came back is skipped), then, where 14d54925's model steps held (none slower beyond noise), the
# GPU tests with it installed as heuristics/h200.yaml, as every shipped file had them (SHIP=1).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s56.yaml --
# db/quack.sqlite db/bestfound48*.sqlite`.
set -u
cand=experiments/candidates/h200-s56.yaml; total=${BUDGET:-560}
BUDGET=$total bash experiments/device/bestfound.sh experiments/bestfound-set48 bestfound48 "$cand" 14d54925
[ -z "${SHIP:-}" ] || BUDGET=$((total - SECONDS)) bash experiments/device/steps.sh "cp $cand heuristics/h200.yaml \
  && python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu.py -p no:cacheprovider -p no:warnings \
  -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log"
