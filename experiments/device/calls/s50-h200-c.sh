#!/usr/bin/env bash
# Stop 50: the GPU tests with eee2f777 installed (call b ran out of time after nine of them: the gate test now also
# re-runs its draw), then the best-found studies of held-out set 44's samples and their suites, each validated with
# eee2f777 (h200-s50) and with the 0128e279 it replaces (h200-s48b). Steps that the call's limit stops are run again
# by the next call with the same script; tune and crossmeasure resume, a suite validate measures again.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s50.yaml
# experiments/candidates/h200-s48b.yaml -- db/quack.sqlite [db/bestfound44*.sqlite]`. Stop 50 ran it twice, the second
# time with SKIP_GPU_TESTS=1 and the three databases of the first call packed.
set -u
bf=experiments/bestfound-set44; bfl=experiments/bestfound-set44-large
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=()
# The second call is run with SKIP_GPU_TESTS=1 once they passed.
[ -n "${SKIP_GPU_TESTS:-}" ] || steps+=("cp experiments/candidates/h200-s50.yaml heuristics/h200.yaml && \
   python3 -m pytest -q -m gpu tests/test_gpu_heuristics.py tests/test_gpu_models.py -p no:cacheprovider")
# A study or suite whose database came back from an earlier call is complete: the second call skips it.
[ -f db/bestfound44.sqlite ] || steps+=("$t $bf/problems.yaml --storage sqlite:///db/bestfound44.sqlite --no-progress")
[ -f db/bestfound44-large.sqlite ] || steps+=("$t $bfl/problems.yaml --storage sqlite:///db/bestfound44-large.sqlite \
   --no-progress")
for c in s50:eee2f777 s48b:0128e279; do
  [ -f db/bestfound44-validate-${c##*:}.sqlite ] || steps+=("$v experiments/candidates/h200-${c%%:*}.yaml \
   --suite $bf/problems.yaml --db db/bestfound44.sqlite --no-progress \
   --storage sqlite:///db/bestfound44-validate-${c##*:}.sqlite")
  [ -f db/bestfound44-large-validate-${c##*:}.sqlite ] || steps+=("$v experiments/candidates/h200-${c%%:*}.yaml \
   --suite $bfl/problems.yaml --db db/bestfound44-large.sqlite --no-progress \
   --storage sqlite:///db/bestfound44-large-validate-${c##*:}.sqlite")
done
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
