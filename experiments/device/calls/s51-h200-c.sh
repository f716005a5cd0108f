#!/usr/bin/env bash
# Stop 51: set 45's two regressions with e75f472b timed again with the shipped eee2f777, in two fresh compiles of
# 5 rounds each (experiments/retime-set45), then the best-found studies of set 45's samples (committed at stop 50,
# before set 45 was scored) and their suites validated with eee2f777. Tune resumes; a suite whose database came back
# from an earlier call is skipped.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml -- db/quack.sqlite [db/bestfound45*.sqlite]`.
set -u
bf=experiments/bestfound-set45; bfl=experiments/bestfound-set45-large; rt=experiments/retime-set45/problems.yaml
v="python3 -m inductor_tune validate"; t="python3 -m inductor_tune tune"
steps=()
for n in 1 2; do
  [ -f db/retime45-eee2f777-$n.sqlite ] || steps+=("$v heuristics/h200.yaml --suite $rt --rounds 5 --no-progress \
   --storage sqlite:///db/retime45-eee2f777-$n.sqlite")
done
steps+=("$t $bf/problems.yaml --storage sqlite:///db/bestfound45.sqlite --no-progress")
steps+=("$t $bfl/problems.yaml --storage sqlite:///db/bestfound45-large.sqlite --no-progress")
[ -f db/bestfound45-validate-eee2f777.sqlite ] || steps+=("$v heuristics/h200.yaml --suite $bf/problems.yaml \
   --db db/bestfound45.sqlite --no-progress --storage sqlite:///db/bestfound45-validate-eee2f777.sqlite")
[ -f db/bestfound45-large-validate-eee2f777.sqlite ] || steps+=("$v heuristics/h200.yaml --suite $bfl/problems.yaml \
   --db db/bestfound45-large.sqlite --no-progress --storage sqlite:///db/bestfound45-large-validate-eee2f777.sqlite")
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
