#!/usr/bin/env bash
# Prepared at stop 70 for the next H200 session (docs/rules.md, "The next GPU runs", 0). 646a9315 is shipped
# (heuristics/h200.yaml: 5af72bc3 and 16 column unsplit rules). Held-out set 62 (seed 2094) was drawn before the
# second column draw below was made.
#   a: the column probe's A/B on its second training draw (experiments/unsplit/outer-train2-draw.json, seed 3302:
#      64 backward problems, 4 in each of the 16 cells where stop 70's fit made a rule; about 70 s), so that each
#      cell has 8 problems; then set 61's best-found suites validated with the shipped 646a9315 (the studies are in
#      db/bestfound61{,-large}.sqlite; about 100 s); then the shipped file's `gpt2-768-t400` step (about 80 s: no
#      step timed so far has a column sum a column rule holds at); then set 62's best-found studies.
#   Then on the CPU: `python3 experiments/unsplit_fit.py fit heuristics/h200.yaml --outer --evidence
#   db/unsplit-outer-train.sqlite,db/unsplit-outer-train2.sqlite --out experiments/candidates/h200-s70.yaml`. Its
#   rules span what 8 problems of a cell cover, or leave a cell where one of the new 4 loses beyond noise. Where it
#   differs from the shipped file, it is the candidate (CAND):
#   b: CAND's one score on set 62 (about 300 s), then what is left of set 62's best-found studies;
#   c, d: the GPU tests with CAND installed, as at stop 70;
#   e: set 62's best-found suites validated with CAND (the studies resume first);
#   f: model steps with CAND: `gpt2-768-t400` (GPT-2 small, 400 tokens), where a column rule of 646a9315 holds
#      (400 x 768, at LayerNorm weight and Linear bias gradients alike), and the two 2048-token steps too where
#      `experiments/model_launches.py` says a column rule of CAND holds at 2048 rows (MODELS=..., comma-separated).
#      With CAND=heuristics/h200.yaml it times the shipped file's column rules in a model step.
# BUDGET must stay under what the device has left (the previous call's lease.budget_left_s less about 40 s).
# Pack with `bash experiments/device/pack.sh STASH experiments/unsplit/probe-outer.yaml heuristics/h200.yaml [CAND]
# -- db/quack.sqlite db/bestfound61.sqlite db/bestfound61-large.sqlite [db/bestfound62*.sqlite]`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h200-s70.yaml}
studies=()
for name in bestfound62 bestfound62-large; do
  studies+=("python3 -m inductor_tune tune experiments/bestfound-set${name#bestfound}/problems.yaml \
  --storage sqlite:///db/$name.sqlite --no-progress 2>&1 | tail -14")
done
suites=()
for part in "" -large; do
  suites+=("python3 -m inductor_tune validate heuristics/h200.yaml \
  --suite experiments/bestfound-set61$part/problems.yaml --db db/bestfound61$part.sqlite --no-progress \
  --storage sqlite:///db/bestfound61$part-validate-646a9315.sqlite \
  2>&1 | tail -16")
done
tests () {
  echo "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
   -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
case "${PART:-a}" in
  a) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate experiments/unsplit/probe-outer.yaml --no-progress \
       --draw experiments/unsplit/outer-train2-draw.json --rounds 3 --storage sqlite:///db/unsplit-outer-train2.sqlite \
       2>&1 | tail -8" \
      "${suites[@]}" \
      "python3 -m inductor_tune validate heuristics/h200.yaml --no-progress --rounds 5 \
       --storage sqlite:///db/models-h200-s70-shipped.sqlite --models gpt2-768-t400 2>&1 \
       | grep -v 'Warning\|warn\|^$' | tail -8" \
      "${studies[@]}" ;;
  b) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set62-draw.json --rounds 3 \
       --storage sqlite:///db/heldout62.sqlite 2>&1 | tail -8" \
      "${studies[@]}" ;;
  e) digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
     BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-set62 bestfound62 "$cand" "$digest" ;;
  c) BUDGET=$B bash experiments/device/steps.sh \
      "$(tests c 'tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py')" ;;
  d) BUDGET=$B bash experiments/device/steps.sh "$(tests d 'tests/test_gpu_models.py tests/test_gpu.py')" ;;
  f) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h200-s70.sqlite \
       --models ${MODELS:-gpt2-768-t400} 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8" ;;
esac
