#!/usr/bin/env bash
# The parts of an H200 call script that check a candidate file before it ships (docs/rules.md, "The next GPU runs"):
#
#   bash experiments/device/candidate_parts.sh CANDIDATE.yaml SET STOP
#
#   PART=tests: the GPU tests with CANDIDATE installed as its GPU's heuristics/h200.yaml or h100.yaml, in two steps
#               (c, d; about 230 and 330 s at stop 75, when d overran what one call had left), each log under $OUT;
#               PART=tests-c and PART=tests-d run one step each, a call apiece;
#   PART=model: its step of MODEL (default `gpt2-768-t400`), 5 rounds, the default compiled twice
#               (db/models-h200-sSTOP.sqlite);
#   PART=gate:  its one score on held-out set SET (experiments/heldout/setSET-draw.json, db/heldoutSET.sqlite), or
#               on the draw DRAW names (experiments/heldout/NAME-draw.json: db/heldout-NAME.sqlite), 3 rounds;
#   SAMPLES=1:  held-out set SET's best-found studies and both suites validated with it (bestfound.sh).
# BUDGET as steps.sh reads it (default 560).
set -u
cand=$1; set=$2; stop=$3
T0=$(date +%s); B=${BUDGET:-560}
# A call for one GPU kind may run on the other (stop 84: an H200 call ran on an H100, whose studies ran for 230 s
# before validate refused the H200 file); nothing runs on a GPU the file is not for.
want=$(sed -n '/^gpu:/,/^[^ ]/s/^  name: //p' "$cand" 2>/dev/null | head -1)
if [ -n "$want" ] && command -v nvidia-smi > /dev/null; then
  have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  [ "$have" = "$want" ] || { echo "candidate_parts.sh: $cand is for $want; GPU 0 is $have: nothing run" >&2; exit 2; }
fi
# The tests run with the candidate in place of the shipped file of its GPU (an H100 candidate over heuristics/h100.yaml).
installed=heuristics/h200.yaml
case "$want" in *H100*) installed=heuristics/h100.yaml ;; esac
if [ -n "${SAMPLES:-}" ]; then
  digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
  BUDGET=$B exec bash experiments/device/bestfound.sh experiments/bestfound-set$set bestfound$set "$cand" "$digest"
fi
gpu_tests () {  # $1: the log's name, $2: the test files
  BUDGET=$((B - ($(date +%s) - T0))) bash experiments/device/steps.sh \
    "cp $cand $installed && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
     -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
tests_c="tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py"
tests_d="tests/test_gpu_models.py tests/test_gpu.py"
case "${PART:-}" in
  tests) gpu_tests c "$tests_c"; gpu_tests d "$tests_d" ;;
  tests-c) gpu_tests c "$tests_c" ;;
  tests-d) gpu_tests d "$tests_d" ;;
  model)
    BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 \
       --storage sqlite:///db/models-h200-s$stop.sqlite --models ${MODEL:-gpt2-768-t400} 2>&1 \
       | grep -v 'Warning\|warn\|^$' | tail -8" ;;
  gate)
    draw=${DRAW:-experiments/heldout/set$set-draw.json}
    [ -f "$draw" ] || { echo "candidate_parts.sh: no draw at $draw" >&2; exit 2; }
    store=db/heldout$set.sqlite
    [ -z "${DRAW:-}" ] || store=db/heldout-$(basename "$DRAW" -draw.json).sqlite
    BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw $draw --rounds 3 --storage sqlite:///$store \
       2>&1 | tail -9" ;;
  *) echo "candidate_parts.sh: PART=tests, tests-c, tests-d, model, gate or SAMPLES=1" >&2; exit 2 ;;
esac
