#!/usr/bin/env bash
# Prepared at stop 50 for the next H100 session (docs/rules.md, "The next GPU runs", 0a): the GPU tests with the
# refit b2c2a414 installed as heuristics/h100.yaml (it passed H100 set 8 and its model steps at stop 50; the call's
# limit stopped the tests), then the best-found studies of H100 set 8's samples (committed at stop 47, before set 8
# was scored) and their suites validated with b2c2a414 (h100-s48) and the shipped 5ed8fa56 (h100-s47). A suite
# whose database came back from an earlier call is skipped.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h100.yaml experiments/candidates/h100-s48.yaml
# experiments/candidates/h100-s47.yaml -- db/quack.sqlite [db/bestfound-h100-8*.sqlite]`; run with SKIP_GPU_TESTS=1
# once they passed.
set -u
bf=experiments/bestfound-h100-set8; bfl=experiments/bestfound-h100-set8-large
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=()
[ -n "${SKIP_GPU_TESTS:-}" ] || steps+=("cp experiments/candidates/h100-s48.yaml heuristics/h100.yaml && \
   python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_models.py -p no:cacheprovider")
# tune resumes (stop 51's first call stopped the large one part way), so it always runs.
steps+=("$t $bf/problems.yaml --storage sqlite:///db/bestfound-h100-8.sqlite --no-progress")
steps+=("$t $bfl/problems.yaml --storage sqlite:///db/bestfound-h100-8-large.sqlite --no-progress")
for c in s48:b2c2a414 s47:5ed8fa56; do
  [ -f db/bestfound-h100-8-validate-${c##*:}.sqlite ] || steps+=("$v experiments/candidates/h100-${c%%:*}.yaml \
   --suite $bf/problems.yaml --db db/bestfound-h100-8.sqlite --no-progress \
   --storage sqlite:///db/bestfound-h100-8-validate-${c##*:}.sqlite")
  [ -f db/bestfound-h100-8-large-validate-${c##*:}.sqlite ] || steps+=("$v experiments/candidates/h100-${c%%:*}.yaml \
   --suite $bfl/problems.yaml --db db/bestfound-h100-8-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound-h100-8-large-validate-${c##*:}.sqlite")
done
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
