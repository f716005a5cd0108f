#!/usr/bin/env bash
# Prepared at stop 54 for the next H100 session: the refit of 473aeeff's databases with FitParams.odd_hull
# (experiments/candidates/h100-s54.yaml, fitted on the CPU at stop 54) scored once on held-out H100 set 10 (seed 2050,
# drawn at stop 52 before any fit after it), then, where it passed, its model steps; with GPU_TESTS=1 the GPU tests
# with it installed as heuristics/h100.yaml; with BESTFOUND=1 the best-found studies of set 9's samples (clean: set 9
# is spent) and their suites validated with the shipped 473aeeff (experiments/candidates/h100-s52.yaml). Steps whose
# database came back from an earlier call are skipped.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s54.yaml
# experiments/candidates/h100-s52.yaml -- db/quack.sqlite [db/heldout-h100-10.sqlite db/models-h100-s54.sqlite
# db/bestfound-h100-9*.sqlite]`.
set -u
cand=experiments/candidates/h100-s54.yaml; shipped=experiments/candidates/h100-s52.yaml
bf=experiments/bestfound-h100-set9; bfl=experiments/bestfound-h100-set9-large
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=()
[ -f db/heldout-h100-10.sqlite ] || steps+=("$v $cand --no-progress --draw experiments/heldout/h100-set10-draw.json \
   --rounds 3 --storage sqlite:///db/heldout-h100-10.sqlite && touch /tmp/set10-pass")
[ -f db/models-h100-s54.sqlite ] || steps+=("[ -f /tmp/set10-pass ] && $v $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h100-s54.sqlite")
[ -z "${GPU_TESTS:-}" ] || steps+=("cp $cand heuristics/h100.yaml && python3 -m pytest -q -m gpu \
   tests/test_gpu_heuristics.py tests/test_gpu_models.py tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs \
   > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log")
if [ -n "${BESTFOUND:-}" ]; then
  steps+=("$t $bf/problems.yaml --storage sqlite:///db/bestfound-h100-9.sqlite --no-progress"
          "$t $bfl/problems.yaml --storage sqlite:///db/bestfound-h100-9-large.sqlite --no-progress")
  [ -f db/bestfound-h100-9-validate-473aeeff.sqlite ] || steps+=("$v $shipped --suite $bf/problems.yaml \
   --db db/bestfound-h100-9.sqlite --no-progress --storage sqlite:///db/bestfound-h100-9-validate-473aeeff.sqlite")
  [ -f db/bestfound-h100-9-large-validate-473aeeff.sqlite ] || steps+=("$v $shipped --suite $bfl/problems.yaml \
   --db db/bestfound-h100-9-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound-h100-9-large-validate-473aeeff.sqlite")
fi
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
