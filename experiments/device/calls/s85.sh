#!/usr/bin/env bash
# Prepared at stop 85 (docs/rules.md, "The next GPU runs", 0). A call for `nvidia-h200` may run on an H100 (stop 84),
# so this script reads GPU 0's name and runs that GPU's next item; nothing runs on a GPU whose file it is not.
#   H200: the fresh compile of 86f2b08c's sweeping entries' 64 training problems (db/mix-e2e-sweep-retime.sqlite),
#         then set 72's best-found studies validated with 86f2b08c (bestfound.sh; db/bestfound72*).
#   H100: the sweeping probe's training draws, resumable: DRAWS names them (default "1 2"; draw 1 is train-draw.json
#         into db/mix-e2e-sweep-h100-train.sqlite, draw K is trainK-draw.json into ...-h100-trainK.sqlite).
#   H100, UNSPLIT=1: the H100's unsplit probe (experiments/unsplit/probe-h100.yaml: every split inner reduction kept in
#         one kernel) against Inductor's split on the H200's two unsplit training draws, 100 problems each
#         (db/unsplit-h100-train{,2}.sqlite; not timed on an H100 yet: 300 problems of set 19 took 225 s on the H200).
#   H100, SCORE=1 (after all four draws and their fresh compile, stop 85): the one score of CAND (default the fit of
#         those five records, experiments/candidates/h100-s85b.yaml, 108c2c1d; or that and the unsplit fit), on H100
#         held-out set 12 (seed 2110, drawn at stop 85: set 11 repeats 288 problems of H200 set 20;
#         db/heldout-h100-12.sqlite, about 330 s), then, where it passes, its step of `gpt2-768-t32768`, whose
#         LayerNorm backwards its entry reaches (db/models-h100-s86.sqlite, about 60 s).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/mix_e2e/probe-sweep-h200.yaml
# experiments/mix_e2e/probe-sweep-h100.yaml -- db/quack.sqlite db/mix-e2e-sweep-h100-train*.sqlite` (SCORE=1:
# `pack.sh STASH CAND -- db/quack.sqlite`; UNSPLIT=1: `pack.sh STASH experiments/unsplit/probe-h100.yaml --
# db/quack.sqlite`).
# `tee -a`: stderr is $OUT/log, and `tee /dev/stderr` reopens that file truncated (stop 86's call 2 lost its
# log's first steps that way; the databases came back whole).
set -u
B=${BUDGET:-560}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*)
    if [ -n "${SCORE:-}" ]; then
      cand=${CAND:-experiments/candidates/h100-s85b.yaml}
      BUDGET=$B exec bash experiments/device/steps.sh \
        "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/h100-set12-draw.json \
         --rounds 3 --storage sqlite:///db/heldout-h100-12.sqlite 2>&1 | tail -9 | tee -a /dev/stderr | grep -qx PASS \
         && python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage \
         sqlite:///db/models-h100-s86.sqlite --models gpt2-768-t32768 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8"
    fi
    if [ -n "${UNSPLIT:-}" ]; then
      BUDGET=$B exec bash experiments/device/steps.sh \
        "python3 -m inductor_tune validate experiments/unsplit/probe-h100.yaml --no-progress \
         --draw experiments/unsplit/train-draw.json --rounds 3 --storage sqlite:///db/unsplit-h100-train.sqlite \
         2>&1 | tail -8" \
        "python3 -m inductor_tune validate experiments/unsplit/probe-h100.yaml --no-progress \
         --draw experiments/unsplit/train2-draw.json --rounds 3 --storage sqlite:///db/unsplit-h100-train2.sqlite \
         2>&1 | tail -8"
    fi
    steps=()
    for k in ${DRAWS:-1 2}; do
      suffix=$k; [ "$k" = 1 ] && suffix=
      steps+=("python3 -m inductor_tune validate experiments/mix_e2e/probe-sweep-h100.yaml --no-progress \
       --draw experiments/mix_e2e/train$suffix-draw.json --rounds 3 \
       --storage sqlite:///db/mix-e2e-sweep-h100-train$suffix.sqlite 2>&1 | tail -8")
    done
    BUDGET=$B exec bash experiments/device/steps.sh "${steps[@]}" ;;
  *) echo "s85.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
