#!/usr/bin/env bash
# Prepared at stop 61 for the next H200 session (docs/rules.md, "The next GPU runs", 0). First the three model steps
# of the shipped 047ab3bb that stop 61 could not time with the default compiled twice (the storage holds llama-2048
# and gpt2-1024, which are not measured again; about 330 s). Then the coverage11 studies, drawn at stop 61 from the
# spent sets' best-found gaps after set 55 was committed (experiments/coverage11-*.yaml, 20 problems, 24 trials each;
# resumable, so a second call finishes them). Their crossmeasure, span rounds and refit come after; set 55 scores it.
# Pack with `bash experiments/device/pack.sh STASH -- db/quack.sqlite db/models-h200-s61.sqlite`.
set -u
steps=("python3 -m inductor_tune validate heuristics/h200.yaml --no-progress --models --rounds 5 \
  --storage sqlite:///db/models-h200-s61.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12")
for name in coverage11-mix-rows coverage11-train-fwd-rows coverage11-fwd-long; do
  steps+=("python3 -m inductor_tune tune experiments/$name.yaml --storage sqlite:///db/$name.sqlite --no-progress \
  2>&1 | tail -25")
done
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "${steps[@]}"
