#!/usr/bin/env bash
# jaxrank evaluate: trec_eval's options, measure names and output format.
set -euo pipefail

jaxrank evaluate --example --format table -q -m map -m ndcg_cut.10 -m P.5,10 -m recip_rank
QRELS_RUN=$(python -c "from jaxrank import cli; print(*cli.example_paths())")
# shellcheck disable=SC2086
jaxrank evaluate $QRELS_RUN                          # trec_eval's default ("official") measures
# shellcheck disable=SC2086
jaxrank evaluate -q -c -M10 -l2 -m map -m bpref $QRELS_RUN       # per query, -c, -M, -l
# shellcheck disable=SC2086
jaxrank evaluate --ties average -m recip_rank --format json $QRELS_RUN  # tie-averaged RR
jaxrank evaluate --help | tail -n 45                 # every measure with its definition
