#!/usr/bin/env bash
# One refit cycle on the device (docs/rules.md), resumable; H200 unless GPU=h100:
#
#   [GPU=h100] bash experiments/device/fill_span_refit.sh STOP FILL SPAN SEED SET
#
# e.g. `... 53 21 25 125 47`: fill FILL over the fit list experiments/fits/h200-sSTOP.txt without its last two lines
# (the fill's and the span round's databases, in that order), the fit of that list without its span line
# (experiments/candidates/h200-sSTOP-prespan.yaml) and the families it changes or newly holds back against the shipped
# heuristics/h200.yaml (`changed_kernels.py --held-back`), span round SPAN over them (seed SEED), the refit from the
# whole list (experiments/candidates/h200-sSTOP.yaml) and its one score (with MULTI_KERNEL, that of the refit with
# entries) on held-out set SET (experiments/heldout/setSET-draw.json, db/heldoutSET.sqlite). crossmeasure and the
# gate run resume; the fits are not made again, and a fill (span round) whose fit without (with) the span round is
# kept, or whose refit is, is not planned again (a resumed crossmeasure with nothing left still spends about 120 s
# planning; stop 68 packed the refit alone for its score). Where the call's limit stops a step, copy what came back
# (the fits to experiments/candidates/, the databases to db/) and run it again. An empty family list (the fill
# changed nothing) leaves no span round and no refit: the shipped file stays.
#
# GPU=h100 (stop 92) runs the same cycle for the H100: the fit list experiments/fits/h100-sSTOP.txt, the fits by
# experiments/fits/fit-h100.sh, crossmeasure with --candidates-from H200 (the list holds H200 studies), the families
# against heuristics/h100.yaml, the databases db/crossmeasure-h100-sSTOP-fillFILL.sqlite and -spanSPAN.sqlite, the
# candidates experiments/candidates/h100-sSTOP{-prespan,}.yaml, and H100 held-out set SET
# (experiments/heldout/h100-setSET-draw.json, db/heldout-h100-SET.sqlite). MULTI_KERNEL is H200-only.
#
# FILL_ARGS replaces the fill's choice of sets, `--fill-share 0.25` (stop 74's cycle: `--fill-share 0 --fill-shapes
# 400`, candidates timed at any share, within 400 shapes to time; `crossmeasure --help`).
#
# The fits need no GPU, and on the CPU machine they take as long as on the device (about 90 s on two cores, stop 67).
# With FITS_ON_CPU=1 a call runs no fit: it stops at the first fit that is missing. Between calls, once the log shows
# the fill's (or the span round's) crossmeasure ended with rc=0, make that fit here with `bash
# experiments/device/fill_span_refit.sh --cpu STOP FILL SPAN SEED SET`, and pack it for the next call.
set -u
cpu=; if [ "${1:-}" = "--cpu" ]; then cpu=1; shift; fi
stop=$1; fill=$2; span=$3; seed=$4; set=$5
gpu=${GPU:-h200}
case "$gpu" in
  h200) fit=fit.sh; from=; cm=db/crossmeasure-s$stop; draw=experiments/heldout/set$set-draw.json
        gate_db=db/heldout$set.sqlite ;;
  h100) fit=fit-h100.sh; from="--candidates-from H200 "; cm=db/crossmeasure-h100-s$stop
        draw=experiments/heldout/h100-set$set-draw.json; gate_db=db/heldout-h100-$set.sqlite
        [ -z "${MULTI_KERNEL:-}" ] || { echo "fill_span_refit.sh: MULTI_KERNEL is H200-only" >&2; exit 2; } ;;
  *) echo "fill_span_refit.sh: GPU is h200 or h100, not $gpu" >&2; exit 2 ;;
esac
# A call for one GPU kind may run on the other (stops 84, 91, 92): one GPU's records in the other's databases would
# enter its fit, so nothing is measured, or written, on a GPU the cycle is not for. The fits (--cpu) need no GPU.
if [ -z "$cpu" ]; then
  have=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  case "$gpu:$have" in
    "h200:NVIDIA H200"|"h100:NVIDIA H100"*) ;;
    *) echo "fill_span_refit.sh: the $gpu cycle does not run on GPU 0 (${have:-none}): nothing run" >&2; exit 2 ;;
  esac
fi
fits=experiments/fits; list=$fits/$gpu-s$stop.txt
AV=$(ls experiments/heldout/*.json | paste -sd,)
FILL=$(sed 1,2d $list | head -n -2 | paste -sd' ')
PRE=$(sed 1,2d $list | head -n -1 | paste -sd' ')
prespan=experiments/candidates/$gpu-s$stop-prespan.yaml; cand=experiments/candidates/$gpu-s$stop.yaml
head -n -1 $list > /tmp/$gpu-s$stop-prespan.txt
# fit.sh reads a list's unsplit probes, typed rules and column rules from the files beside it; the fit without the
# span round reads the same ones.
for side in unsplit typed outer; do
  [ ! -f ${list%.txt}.$side ] || cp ${list%.txt}.$side /tmp/$gpu-s$stop-prespan.$side
done
# With MULTI_KERNEL=k the refit gets multi-kernel entries of up to k configs per size group from the same list
# (experiments/multikernel_fit.py, experiments/candidates/h200-sSTOP-mkK.yaml), and that file is the one scored.
fit_prespan="bash $fits/$fit /tmp/$gpu-s$stop-prespan.txt $prespan"; fit_cand="bash $fits/$fit $list $cand"
if [ -n "$cpu" ]; then
  if [ ! -f $prespan ]; then $fit_prespan
  elif [ ! -f $cand ]; then $fit_cand
  else echo "fill_span_refit.sh: $prespan and $cand exist: no fit is due" >&2; fi
  exit
fi
if [ -n "${FITS_ON_CPU:-}" ]; then fit_prespan=false; fit_cand=false; fi
scored=$cand; mk_step=()
if [ -n "${MULTI_KERNEL:-}" ]; then
  scored=${cand%.yaml}-mk$MULTI_KERNEL.yaml
  mk_step=("[ -f $scored ] || { [ -f $cand ] && python3 experiments/multikernel_fit.py $list \
   $cand $scored --k $MULTI_KERNEL; } && cp $scored \$OUT/")
fi
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "[ -f $prespan ] || [ -f $cand ] || python3 -m inductor_tune crossmeasure $FILL $from--fill 2 \
   ${FILL_ARGS:---fill-share 0.25} --max-configs 4 --rounds 3 --no-progress --avoid-draw $AV \
   --storage $cm-fill$fill.sqlite \
   && touch /tmp/fill$fill-done" \
  "[ -f $prespan ] || { [ -f /tmp/fill$fill-done ] && $fit_prespan; } \
   && cp $prespan \$OUT/ && python3 $fits/changed_kernels.py heuristics/$gpu.yaml $prespan --held-back \
   | grep . | tee /tmp/fams" \
  "[ -f $cand ] || { [ -s /tmp/fams ] && python3 -m inductor_tune crossmeasure $PRE $from--kernels \$(cat /tmp/fams) \
   --span-probes 10 --edge-probes 1 --seed $seed --rounds 3 --no-progress --avoid-draw $AV \
   --storage $cm-span$span.sqlite && touch /tmp/span$span-done; }" \
  "[ -f $cand ] || { [ -f /tmp/span$span-done ] && $fit_cand; } && cp $cand \$OUT/" \
  "${mk_step[@]}" \
  "[ -f $scored ] && python3 -m inductor_tune validate $scored --no-progress \
   --draw $draw --rounds 3 --storage sqlite:///$gate_db"
