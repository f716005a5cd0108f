#!/usr/bin/env bash
# Prepared at stop 86 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item.
#   H200: as s85.sh: the fresh compile of 86f2b08c's sweeping entries' 64 training problems
#         (db/mix-e2e-sweep-retime.sqlite), then set 72's best-found studies validated with 86f2b08c (bestfound.sh).
#   H100, FIT_SCORE=1 (stop 86's choice, made before set 12 was read: option (b), the unsplit A/B first and one score
#         of both changes): the H100 unsplit probe's fit of its two training draws earned one cell (rows 64..127 x N
#         8193..16384, 12 problems); this times that cell again before anything is scored: a fresh compile of the 12
#         (experiments/unsplit/h100-cell-retime-draw.json, db/unsplit-h100-retime.sqlite) and a third draw of 16 new
#         problems in it (h100-cell-train3-draw.json, seed 4244, db/unsplit-h100-train3.sqlite); then fits
#         `unsplit_fit.py fit experiments/candidates/h100-s85b.yaml --every-win` on all four records
#         (experiments/candidates/h100-s86.yaml, copied to $OUT; where the cell loses a problem it earns nothing and
#         the file is 108c2c1d again), and scores that file once on H100 held-out set 12 (db/heldout-h100-12.sqlite)
#         and, where it passes, its step of `gpt2-768-t32768` (db/models-h100-s86.sqlite).
#   H100, no FIT_SCORE (after it): the five model steps of stop 55 with that file (db/models-h100-s86b.sqlite; pack
#         `experiments/candidates/h100-s86.yaml -- db/quack.sqlite`); with H100_TESTS=1, GPU tests part c with that
#         file installed as heuristics/h100.yaml ($OUT/pytest-h100-c.log).
# Pack with `bash experiments/device/pack.sh STASH experiments/unsplit/probe-h100.yaml -- db/quack.sqlite
# db/unsplit-h100-train.sqlite db/unsplit-h100-train2.sqlite` (H200: `pack.sh STASH heuristics/h200.yaml
# experiments/mix_e2e/probe-sweep-h200.yaml -- db/quack.sqlite`).
# `tee -a`: stderr is $OUT/log, and `tee /dev/stderr` reopens that file truncated (stop 86's call 2 lost its
# log's first steps that way; the databases came back whole).
set -u
B=${BUDGET:-560}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200") BUDGET=$B exec bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*)
    if [ -n "${H100_TESTS:-}" ]; then  # GPU tests part c (candidate_parts.sh) with the file installed as h100.yaml
      BUDGET=$B exec bash experiments/device/steps.sh \
        "cp experiments/candidates/h100-s86.yaml heuristics/h100.yaml && python3 -m pytest -v --tb=short -m gpu \
         -p no:cacheprovider -p no:warnings -rs tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py \
         tests/test_gpu_unsplit_types.py > \$OUT/pytest-h100-c.log 2>&1; tail -3 \$OUT/pytest-h100-c.log"
    fi
    if [ -z "${FIT_SCORE:-}" ]; then  # after FIT_SCORE: the five model steps of stop 55 with the file set 12 passed
      BUDGET=$B exec bash experiments/device/steps.sh \
        "python3 -m inductor_tune validate experiments/candidates/h100-s86.yaml --no-progress --rounds 5 --storage \
         sqlite:///db/models-h100-s86b.sqlite --models llama-2048,llama-4096,llama-8192,gpt2-1024,gpt2-2048 2>&1 \
         | grep -v 'Warning\\|warn\\|^$' | tail -12"
    fi
    probe=experiments/unsplit/probe-h100.yaml cand=experiments/candidates/h100-s86.yaml
    BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $probe --no-progress --draw experiments/unsplit/h100-cell-retime-draw.json \
       --rounds 3 --storage sqlite:///db/unsplit-h100-retime.sqlite 2>&1 | tail -8" \
      "python3 -m inductor_tune validate $probe --no-progress --draw experiments/unsplit/h100-cell-train3-draw.json \
       --rounds 3 --storage sqlite:///db/unsplit-h100-train3.sqlite 2>&1 | tail -8" \
      "python3 experiments/unsplit_fit.py fit experiments/candidates/h100-s85b.yaml --every-win --evidence \
       db/unsplit-h100-train.sqlite,db/unsplit-h100-train2.sqlite,db/unsplit-h100-retime.sqlite,db/unsplit-h100-train3.sqlite \
       --out $cand | grep -v 'Inductor.s split kept' && cp $cand \$OUT/ \
       && python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/h100-set12-draw.json \
       --rounds 3 --storage sqlite:///db/heldout-h100-12.sqlite 2>&1 | tail -9 | tee -a /dev/stderr | grep -qx PASS \
       && python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage \
       sqlite:///db/models-h100-s86.sqlite --models gpt2-768-t32768 2>&1 | grep -v 'Warning\\|warn\\|^$' | tail -8" ;;
  *) echo "s86.sh: no item for GPU 0 ($have)" >&2; exit 2 ;;
esac
