#!/usr/bin/env bash
# Prepared at stop 71 for the next H200 session (docs/rules.md, "The next GPU runs", 0). 0d443b28 is shipped
# (heuristics/h200.yaml: 6cea98b1, which passed held-out set 62, less the column rule of rows 147..233 x N 132..233
# that the third column draw dropped). Held-out set 63 (seed 2095) was drawn before that draw was measured and before
# the candidate below was fitted.
#   a: CAND's one score on set 63 (about 300 s), then set 63's best-found studies. CAND is
#      experiments/candidates/h200-s71.yaml (f8e76f08): the column fit of all three training draws (8 problems a cell
#      in the first two draws, 8 more in the third), 12 column rules whose spans are what 16 problems of a cell cover
#      (0d443b28's 12 spans, widened; the inner rules, launch rules and split-autotune entries are 0d443b28's);
#   c, d: the GPU tests with CAND installed, as at stops 70 and 71;
#   e: set 63's best-found suites validated with CAND (the studies resume first);
#   f: model steps with CAND: `gpt2-768-t400`, where the column rule of rows 270..504 x N 573..953 holds.
# BUDGET must stay under what the device has left (the previous call's lease.budget_left_s less about 40 s).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s71.yaml
# -- db/quack.sqlite [db/bestfound63*.sqlite]`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h200-s71.yaml}
studies=()
for name in bestfound63 bestfound63-large; do
  studies+=("python3 -m inductor_tune tune experiments/bestfound-set${name#bestfound}/problems.yaml \
  --storage sqlite:///db/$name.sqlite --no-progress 2>&1 | tail -14")
done
tests () {
  echo "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
   -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
case "${PART:-a}" in
  a) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set63-draw.json --rounds 3 \
       --storage sqlite:///db/heldout63.sqlite 2>&1 | tail -8" \
      "${studies[@]}" ;;
  e) digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
     BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-set63 bestfound63 "$cand" "$digest" ;;
  c) BUDGET=$B bash experiments/device/steps.sh \
      "$(tests c 'tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py')" ;;
  d) BUDGET=$B bash experiments/device/steps.sh "$(tests d 'tests/test_gpu_models.py tests/test_gpu.py')" ;;
  f) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h200-s71.sqlite \
       --models ${MODELS:-gpt2-768-t400} 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8" ;;
esac
