#!/usr/bin/env bash
# Prepared at stop 54 for the next H200 session: the best-found studies of set 47's samples
# (experiments/bestfound-set47*, committed with the draw at 6ea9ccd, before any fit after stop 52) and their suites
# validated with the shipped 0608dd76 (experiments/candidates/h200-s54.yaml), which passed set 47 at stop 54: the
# clean held-out score against the best found. Tune resumes; a suite whose database came back from an earlier call
# is skipped. With GPU_TESTS=1, the four tests of tests/test_gpu.py that stop 54's GPU-test step ran out of time for
# (the heuristics installed are the shipped heuristics/h200.yaml, 0608dd76).
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s54.yaml -- db/quack.sqlite
# [db/bestfound47*.sqlite]`.
set -u
bf=experiments/bestfound-set47; bfl=experiments/bestfound-set47-large; cand=experiments/candidates/h200-s54.yaml
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=("$t $bf/problems.yaml --storage sqlite:///db/bestfound47.sqlite --no-progress"
       "$t $bfl/problems.yaml --storage sqlite:///db/bestfound47-large.sqlite --no-progress")
[ -f db/bestfound47-validate-0608dd76.sqlite ] || steps+=("$v $cand --suite $bf/problems.yaml \
   --db db/bestfound47.sqlite --no-progress --storage sqlite:///db/bestfound47-validate-0608dd76.sqlite")
[ -f db/bestfound47-large-validate-0608dd76.sqlite ] || steps+=("$v $cand --suite $bfl/problems.yaml \
   --db db/bestfound47-large.sqlite --no-progress --storage sqlite:///db/bestfound47-large-validate-0608dd76.sqlite")
[ -z "${GPU_TESTS:-}" ] || steps+=("python3 -m pytest -q -m gpu tests/test_gpu.py -k 'short_study or catalog_reductions \
   or gpu_lock or focused_study' -p no:cacheprovider -p no:warnings -rs > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
