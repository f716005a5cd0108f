#!/usr/bin/env bash
# Prepared at stop 94 (docs/rules.md, "The next GPU runs", 0). Reads GPU 0's name and runs that GPU's item:
#   H100: the checks of experiments/candidates/h100-s92.yaml (7fcb9a96, the refit that passed H100 held-out set 15 at
#         stop 94) before it ships, the parts PART names (a comma list, default all four, in this order):
#           models   its six model steps, 5 rounds (db/models-h100-s92{,b}.sqlite; 388 s at stop 93);
#           tests-c  the GPU tests of part c with it installed as heuristics/h100.yaml (108 s);
#           tests-d  those of part d (282 s);
#           samples  set 15's clean best found: the studies at its 12 samples
#                    (experiments/bestfound-h100-set15{,-large}, drawn with the set at stop 92; no fit reads them) and
#                    both suites validated with it (246 s).
#         A part starts only where its time (ESTIMATE below, with a margin) fits in what is left of BUDGET, since a
#         model step or a test run cut short brings back nothing to keep; one that does not fit is left for the next
#         call. A part whose steps all ended with status 0 is marked in .devkeep and skipped by the next call on the
#         same warm machine; a fresh machine has no .devkeep, so name the parts left in PART there. samples resumes
#         (bestfound.sh); it and models keep their databases in .devkeep.
#   H200: fresh rounds of the shipped heuristics/h200.yaml at experiments/retime94 (the one probe where its audit finds
#         a config losing, and two neighbours; db/retime94-86f2b08c.sqlite, about 60 s), then the H200 items of s93.sh
#         (h200-after-s84.sh) with what is left of BUDGET.
# Pack as item 0 says; start with `tar xJf .carry/db.tar.xz && source .devdeps/env.sh && BUDGET=575 bash
# experiments/device/calls/s94.sh > $OUT/s94.out 2>&1` (steps.sh appends each step's output to $OUT/log).
set -u
B=${BUDGET:-560}; T0=$(date +%s)
cand=experiments/candidates/h100-s92.yaml
keep=.devkeep
mkdir -p $keep
for f in $keep/*.sqlite; do [ ! -e "$f" ] || cp "$f" db/; done
declare -A ESTIMATE=([models]=420 [tests-c]=130 [tests-d]=310 [samples]=270)
run_part() {
  local left=$1
  case $2 in
    models) BUDGET=$left bash experiments/device/steps.sh \
        "python3 -m inductor_tune validate $cand --no-progress --rounds 5 \
         --storage sqlite:///db/models-h100-s92.sqlite --models llama-2048,llama-4096,gpt2-2048,gpt2-768-t32768 \
         2>&1 | grep -v 'Warning\|warn\|^$' | tail -10" \
        "python3 -m inductor_tune validate $cand --no-progress --rounds 5 \
         --storage sqlite:///db/models-h100-s92b.sqlite --models llama-8192,gpt2-1024 \
         2>&1 | grep -v 'Warning\|warn\|^$' | tail -10" ;;
    tests-c|tests-d) PART=$2 BUDGET=$left bash experiments/device/candidate_parts.sh $cand 15 92 ;;
    samples)
      digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])") \
        || return 2
      BUDGET=$left bash experiments/device/bestfound.sh experiments/bestfound-h100-set15 bestfound-h100-15 $cand \
        "$digest" ;;
  esac
}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H200")
    [ -f db/retime94-86f2b08c.sqlite ] || BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate heuristics/h200.yaml --suite experiments/retime94/problems.yaml --rounds 5 \
       --no-progress --storage sqlite:///db/retime94-86f2b08c.sqlite 2>&1 | tail -8"
    [ ! -f db/retime94-86f2b08c.sqlite ] || cp db/retime94-86f2b08c.sqlite $keep/
    exec env BUDGET=$((B - ($(date +%s) - T0))) bash experiments/device/calls/h200-after-s84.sh ;;
  "NVIDIA H100"*) ;;
  *) echo "s94.sh: no item for GPU 0 (${have:-none})" >&2; exit 2 ;;
esac
parts=${PART:-models,tests-c,tests-d,samples}
for part in ${parts//,/ }; do
  [ -n "${ESTIMATE[$part]:-}" ] \
    || { echo "s94.sh: PART is a comma list of models, tests-c, tests-d, samples" >&2; exit 2; }
done
rc=0
for part in ${parts//,/ }; do
  if [ -f $keep/done-$part ]; then echo "s94.sh: $part finished in an earlier call" >&2; continue; fi
  left=$((B - ($(date +%s) - T0)))
  if [ "$left" -lt "${ESTIMATE[$part]}" ]; then
    echo "s94.sh: $part left for the next call (${ESTIMATE[$part]} s, $left s left)" >&2; continue
  fi
  seen=$( { wc -l < "$OUT/log"; } 2>/dev/null || echo 0)
  run_part $left $part
  # steps.sh logs each step's status; a part is finished only where none of its steps failed, was cut or was skipped
  if tail -n +$((seen + 1)) "$OUT/log" 2>/dev/null | grep -q "^== rc=[1-9]\|^== skipped"; then rc=1
  else touch $keep/done-$part; fi
done
for f in db/models-h100-s92*.sqlite db/bestfound-h100-15*.sqlite; do [ ! -e "$f" ] || cp "$f" $keep/; done
exit $rc
