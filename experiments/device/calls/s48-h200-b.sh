#!/usr/bin/env bash
# Stop 48, second H200 call (docs/rules.md "Stop 48"): score the refit 32fa782e once on held-out set 42; where it
# passes, time the model steps; then start set 42's best-found studies (resumable; the next call finishes them).
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s48-h200-b.sh
set -u
cand=experiments/candidates/h200-s48.yaml
BUDGET=${BUDGET:-570} bash experiments/device/steps.sh \
  "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set42-draw.json --rounds 3 \
   --storage sqlite:///db/heldout42.sqlite && touch /tmp/pass42" \
  "[ -f /tmp/pass42 ] && python3 -m inductor_tune validate $cand --no-progress --models --rounds 5 \
   --storage sqlite:///db/models-h200-s48.sqlite" \
  "python3 -m inductor_tune tune experiments/bestfound-set42/problems.yaml --storage sqlite:///db/bestfound42.sqlite \
   --no-progress"
