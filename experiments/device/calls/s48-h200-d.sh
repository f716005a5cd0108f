#!/usr/bin/env bash
# Stop 48, fourth H200 call (docs/rules.md "Stop 48"): score 0128e279 (the refit with ties on the worst ratio to the
# best found going to the config least slower than the default) once on held-out set 43; where it passes, time the
# model steps.
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s48-h200-d.sh
set -u
cand=experiments/candidates/h200-s48b.yaml
BUDGET=${BUDGET:-570} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set43-draw.json --rounds 3 \
   --storage sqlite:///db/heldout43.sqlite && touch /tmp/pass43" \
  "[ -f /tmp/pass43 ] && python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h200-s48.sqlite"
