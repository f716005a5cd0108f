#!/usr/bin/env bash
# Prepared at stop 57 for the next H200 session (docs/rules.md, "The next GPU runs", 0). Fill 23 (19 shapes over the
# best-found studies of the spent set 48) ran at stop 57, and its fit without the span round, ead44299
# (experiments/candidates/h200-s57-prespan.yaml), was made on the CPU; it changes nn_layernorm_bwd and
# scaled_softmax_bwd against the shipped 14d54925. So: span round 27 (seed 127) over those, the refit from
# experiments/fits/h200-s57.txt, multi-kernel entries of up to 3 configs per size group fitted onto it from the same
# list (experiments/multikernel_fit.py: experiments/candidates/h200-s57-mk3.yaml), and the one score of that file
# on held-out set 49 (seed 2080, drawn at stop 56 before any later fit and before the multi-kernel method existed).
# The fill is not planned again (its prespan fit is kept).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s57-prespan.yaml
# [experiments/candidates/h200-s57.yaml experiments/candidates/h200-s57-mk3.yaml] -- db/quack.sqlite
# $(sed 1,2d experiments/fits/h200-s57.txt | head -n -1) [db/crossmeasure-s57-span27.sqlite db/heldout49.sqlite]`.
set -u
MULTI_KERNEL=3 bash experiments/device/fill_span_refit.sh 57 23 27 127 49
