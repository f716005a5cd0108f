#!/usr/bin/env bash
# Prepared at stop 50 for the next H200 session (docs/rules.md, "The next GPU runs", 0a): set 44's worst touched
# problem and its neighbours (experiments/retime-set44) timed again in 5 fresh rounds with the shipped eee2f777 and
# with 0128e279 (experiments/candidates/h200-s48b.yaml), which ships the same rule there.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s48b.yaml --
# db/quack.sqlite`.
set -u
rt=experiments/retime-set44/problems.yaml
v="python3 -m inductor_tune validate"
BUDGET=${BUDGET:-300} bash experiments/device/steps.sh \
  "$v heuristics/h200.yaml --suite $rt --rounds 5 --no-progress --storage sqlite:///db/retime44-eee2f777.sqlite" \
  "$v experiments/candidates/h200-s48b.yaml --suite $rt --rounds 5 --no-progress \
   --storage sqlite:///db/retime44-0128e279.sqlite"
