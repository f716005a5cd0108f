#!/usr/bin/env bash
# Prepared at stop 50 for the next H200 session (docs/rules.md, "The next GPU runs", 0a): fill 20 over set 44's
# best-found studies (spent since set 44 was scored; 76 shapes and 81 pairs by `--plan-only H200`), the fit of that
# (`experiments/fits/h200-s51.txt` without its span line) and the families it changes or newly holds back against the
# shipped eee2f777 (`changed_kernels.py --held-back`), span round 24 over them, the refit from the whole list and its
# one score on held-out set 45 (seed 2076). crossmeasure and the gate run resume; the two fits are kept under
# experiments/candidates/ and not made again. Where the call's limit stops a step, copy what came back
# (`h200-s51-prespan.yaml`, `h200-s51.yaml` to experiments/candidates/, the databases to db/) and run the same script.
# An empty family list (the fill changed nothing) leaves no span round and no refit: the shipped file stays.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s51*.yaml] --
# db/quack.sqlite db/bestfound44.sqlite db/bestfound44-large.sqlite [db/crossmeasure-s51-*.sqlite db/heldout45.sqlite]`,
# then run
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s51-h200-a.sh
set -u
bash experiments/device/fill_span_refit.sh 51 20 24 124 45
