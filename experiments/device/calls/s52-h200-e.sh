#!/usr/bin/env bash
# Stop 52: the best-found studies of set 46's samples (experiments/bestfound-set46*, committed with the draw at
# 8789ffd, before any fit after stop 51) and their suites validated with 48edc030 (experiments/candidates/h200-s52.yaml),
# which passed set 46. Tune resumes; a suite whose database came back from an earlier call is skipped.
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s52.yaml -- db/quack.sqlite
# [db/bestfound46*.sqlite]`.
set -u
bf=experiments/bestfound-set46; bfl=experiments/bestfound-set46-large; cand=experiments/candidates/h200-s52.yaml
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=("$t $bf/problems.yaml --storage sqlite:///db/bestfound46.sqlite --no-progress"
       "$t $bfl/problems.yaml --storage sqlite:///db/bestfound46-large.sqlite --no-progress")
[ -f db/bestfound46-validate-48edc030.sqlite ] || steps+=("$v $cand --suite $bf/problems.yaml \
   --db db/bestfound46.sqlite --no-progress --storage sqlite:///db/bestfound46-validate-48edc030.sqlite")
[ -f db/bestfound46-large-validate-48edc030.sqlite ] || steps+=("$v $cand --suite $bfl/problems.yaml \
   --db db/bestfound46-large.sqlite --no-progress --storage sqlite:///db/bestfound46-large-validate-48edc030.sqlite")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
