#!/usr/bin/env bash
# Prepared at stop 89 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item.
# heuristics/h100.yaml is 715d722d since stop 89; nothing here scores a held-out set. H100 set 14 (seed 2112) was drawn
# at stop 89 before the coverage15 draws, and no problem of these studies is at a shape of it.
#   H200: as s85.sh-s89.sh (h200-after-s84.sh).
#   H100: the training studies of the H100's coverage draws, each resumable (tune continues a study where the last
#         call stopped, so each call adds whole trials and verdicts): coverage14-h100-welford-fwd (its 9 studies have
#         their 24 trials since stop 89, 8 their verdict), coverage14-h100-mix-bwd, then coverage15-h100-rows-fwd and
#         -bwd (rows 131073..1048576, where no H100 rule reaches; db/coverage1{4,5}-h100-*.sqlite).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/mix_e2e/probe-sweep-h200.yaml --
# db/quack.sqlite db/coverage14-h100-welford-fwd.sqlite` (and every coverage1{4,5} database an earlier call brought
# back); start with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && BUDGET=560 bash experiments/device/calls/s90.sh`.
set -u
B=${BUDGET:-560}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*) ;;
  *) echo "s90.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
steps=()
for study in coverage14-h100-welford-fwd coverage14-h100-mix-bwd coverage15-h100-rows-fwd coverage15-h100-rows-bwd; do
  steps+=("python3 -m inductor_tune tune experiments/$study.yaml --no-progress --storage sqlite:///db/$study.sqlite \
   2>&1 | grep -v '^[CEW][0-9]\{4\} ' | tail -16")
done
BUDGET=$B exec bash experiments/device/steps.sh "${steps[@]}"
