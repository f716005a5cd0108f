#!/usr/bin/env bash
# Prepared at stop 85 (docs/rules.md, "The next GPU runs", 0). A call for `nvidia-h200` may run on an H100 (stop 84),
# so this script reads GPU 0's name and runs that GPU's next item; nothing runs on a GPU whose file it is not.
#   H200: the fresh compile of 86f2b08c's sweeping entries' 64 training problems (db/mix-e2e-sweep-retime.sqlite),
#         then set 72's best-found studies validated with 86f2b08c (bestfound.sh; db/bestfound72*).
#   H100: the sweeping probe's training draws, resumable: DRAWS names them (default "1 2"; draw 1 is train-draw.json
#         into db/mix-e2e-sweep-h100-train.sqlite, draw K is trainK-draw.json into ...-h100-trainK.sqlite).
#   H100, SCORE=1 (after all four draws, stop 85): a fresh compile of the 41 training problems the fit's entries reach
#         (db/mix-e2e-sweep-h100-retime.sqlite), the fit again with that fifth record ($OUT/h100-s86.yaml: a cell
#         where a retimed problem did not win loses its entry; nothing widens), and, where an entry is left, its one score on H100
#         held-out set 11 (db/heldout-h100-11.sqlite). About 150 + 330 s.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/mix_e2e/probe-sweep-h200.yaml
# experiments/mix_e2e/probe-sweep-h100.yaml -- db/quack.sqlite db/mix-e2e-sweep-h100-train*.sqlite` (SCORE=1: and
# heuristics/h100.yaml, whose evidence the fit and the gate read).
set -u
B=${BUDGET:-560}; T0=$(date +%s)
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200")
    BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate experiments/mix_e2e/probe-sweep-h200.yaml --no-progress \
       --draw experiments/mix_e2e/retime-s84-draw.json --rounds 3 --storage sqlite:///db/mix-e2e-sweep-retime.sqlite \
       2>&1 | tail -8"
    SAMPLES=1 BUDGET=$((B - ($(date +%s) - T0))) exec bash experiments/device/candidate_parts.sh \
      heuristics/h200.yaml 72 85 ;;
  "NVIDIA H100"*)
    if [ -n "${SCORE:-}" ]; then
      e=db/mix-e2e-sweep-h100-train.sqlite,db/mix-e2e-sweep-h100-train2.sqlite,db/mix-e2e-sweep-h100-train3.sqlite
      e=$e,db/mix-e2e-sweep-h100-train4.sqlite,db/mix-e2e-sweep-h100-retime.sqlite
      BUDGET=$B exec bash experiments/device/steps.sh \
        "python3 -m inductor_tune validate experiments/mix_e2e/probe-sweep-h100.yaml --no-progress \
         --draw experiments/mix_e2e/retime-h100-s85-draw.json --rounds 3 \
         --storage sqlite:///db/mix-e2e-sweep-h100-retime.sqlite 2>&1 | tail -8" \
        "python3 experiments/mix_e2e_fit.py fit heuristics/h100.yaml --sweep --evidence $e --out \$OUT/h100-s86.yaml \
         | tail -4 && grep -q 'end_to_end: true' \$OUT/h100-s86.yaml && python3 -m inductor_tune validate \$OUT/h100-s86.yaml --no-progress \
         --draw experiments/heldout/h100-set11-draw.json --rounds 3 --storage sqlite:///db/heldout-h100-11.sqlite \
         2>&1 | tail -9"
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
