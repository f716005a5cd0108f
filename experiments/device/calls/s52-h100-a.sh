#!/usr/bin/env bash
# Stop 52 (H100): the refit 473aeeff (experiments/candidates/h100-s52.yaml: b2c2a414's databases and rules, with
# FitParams.cols_by_alignment) scored once on held-out H100 set 9 (seed 2049, drawn at stop 50 before any fit after
# it), then, where it passed, its model steps; with GPU_TESTS=1 the GPU tests with it installed as
# heuristics/h100.yaml; with BESTFOUND=1 the best-found studies of set 9's samples (committed with the draw) and
# their suites validated with it. Steps whose database came back from an earlier call are skipped.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h100-s52.yaml -- db/quack.sqlite
# [db/heldout-h100-9.sqlite db/models-h100-s52.sqlite db/bestfound-h100-9*.sqlite]`; both were stored at stop 52, so
# the next session runs `BESTFOUND=1 bash experiments/device/calls/s52-h100-a.sh` for set 9's best found.
set -u
cand=experiments/candidates/h100-s52.yaml; bf=experiments/bestfound-h100-set9; bfl=experiments/bestfound-h100-set9-large
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=()
[ -f db/heldout-h100-9.sqlite ] || steps+=("$v $cand --no-progress --draw experiments/heldout/h100-set9-draw.json \
   --rounds 3 --storage sqlite:///db/heldout-h100-9.sqlite && touch /tmp/set9-pass")
[ -f db/models-h100-s52.sqlite ] || steps+=("[ -f /tmp/set9-pass ] && $v $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h100-s52.sqlite")
[ -z "${GPU_TESTS:-}" ] || steps+=("cp $cand heuristics/h100.yaml && python3 -m pytest -q -m gpu \
   tests/test_gpu_heuristics.py tests/test_gpu_models.py tests/test_gpu.py -p no:cacheprovider -p no:warnings -rs \
   > \$OUT/pytest.log 2>&1; tail -3 \$OUT/pytest.log")
if [ -n "${BESTFOUND:-}" ]; then
  steps+=("$t $bf/problems.yaml --storage sqlite:///db/bestfound-h100-9.sqlite --no-progress"
          "$t $bfl/problems.yaml --storage sqlite:///db/bestfound-h100-9-large.sqlite --no-progress")
  [ -f db/bestfound-h100-9-validate-473aeeff.sqlite ] || steps+=("$v $cand --suite $bf/problems.yaml \
   --db db/bestfound-h100-9.sqlite --no-progress --storage sqlite:///db/bestfound-h100-9-validate-473aeeff.sqlite")
  [ -f db/bestfound-h100-9-large-validate-473aeeff.sqlite ] || steps+=("$v $cand --suite $bfl/problems.yaml \
   --db db/bestfound-h100-9-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound-h100-9-large-validate-473aeeff.sqlite")
fi
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
