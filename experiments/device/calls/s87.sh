#!/usr/bin/env bash
# Prepared at stop 86 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item.
#   H200: as s85.sh and s86.sh: the fresh compile of 86f2b08c's sweeping entries' 64 training problems
#         (db/mix-e2e-sweep-retime.sqlite), then set 72's best-found studies validated with 86f2b08c (bestfound.sh).
#   H100: the two H100 coverage draws of stop 86 (experiments/coverage14-h100-{welford-fwd,mix-bwd}.yaml, 17 studies
#         of 24 trials; db/coverage14-h100-*.sqlite; tune resumes), then the studies of H100 held-out set 13's
#         best-found samples (experiments/bestfound-h100-set13{,-large}; db/bestfound-h100-13{,-large}.sqlite), which
#         read the "0.97x best found" target with whatever file set 13 scores (validated once that file is fixed).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/mix_e2e/probe-sweep-h200.yaml --
# db/quack.sqlite`; start with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && BUDGET=560 bash
# experiments/device/calls/s87.sh`.
# `tee -a`: stderr is $OUT/log, and `tee /dev/stderr` reopens that file truncated (stop 86's call 2 lost its
# log's first steps that way; the databases came back whole).
set -u
B=${BUDGET:-560}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*)
    steps=()
    for part in welford-fwd mix-bwd; do
      steps+=("python3 -m inductor_tune tune experiments/coverage14-h100-$part.yaml --no-progress \
       --storage sqlite:///db/coverage14-h100-$part.sqlite 2>&1 | tail -14")
    done
    for part in "" -large; do
      steps+=("python3 -m inductor_tune tune experiments/bestfound-h100-set13$part/problems.yaml --no-progress \
       --storage sqlite:///db/bestfound-h100-13$part.sqlite 2>&1 | tail -10")
    done
    BUDGET=$B exec bash experiments/device/steps.sh "${steps[@]}" ;;
  *) echo "s87.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
