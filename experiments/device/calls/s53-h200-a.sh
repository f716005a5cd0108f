#!/usr/bin/env bash
# Prepared at stop 52 for the next H200 session (docs/rules.md, "The next GPU runs", 0): the shipped 48edc030's
# possible losses at odd N (experiments/retime-s52) in two fresh compiles of 5 rounds each, with the shipped file.
# Diagnostics: no fit reads them. A suite whose database came back from an earlier call is skipped.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml -- db/quack.sqlite`.
set -u
steps=()
for n in 1 2; do
  [ -f db/retime52-48edc030-$n.sqlite ] || steps+=("python3 -m inductor_tune validate heuristics/h200.yaml \
   --suite experiments/retime-s52/problems.yaml --rounds 5 --no-progress \
   --storage sqlite:///db/retime52-48edc030-$n.sqlite")
done
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
