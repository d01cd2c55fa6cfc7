#!/usr/bin/env bash
# How the shipped "topoformer-peak" weights are trained (issue 25): orders proven
# minimum-peak by the best-first search, imitated by their likelihood (padded batches
# on a GPU), the policy kept that decodes best on larger validation graphs.
#
#   bash benchmarks/train_topoformer_peak.sh RUN_DIR [DATA_DIR]
#
# JOBS (default: all cores but one) processes build the data and the features;
# DEVICE (default cuda if torch sees one, else cpu) trains.  Every step resumes: run it
# again after an interruption (or build the data sets first, elsewhere, and bring
# them).  IMITATION and EPOCHS set the schedule, TIME_LIMIT caps the training's seconds,
# DROPOUT regularises.
set -euo pipefail
RUN=${1:?usage: train_topoformer_peak.sh RUN_DIR [DATA_DIR]}
DATA=${2:-$RUN/data}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
DEVICE=${DEVICE:-$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')}
IMITATION=${IMITATION:-200}
EPOCHS=${EPOCHS:-$IMITATION}
TIME_LIMIT=${TIME_LIMIT:-3600}
DROPOUT=${DROPOUT:-0}
PY=${PYTHON:-python3}

# 1. data from proofs: small graphs (almost all proven), and larger ones for reach
$PY -m mtpp train data --out "$DATA/peak-100-250" --teacher-count 3072 --teacher-nodes 100 250 \
    --teacher-time-limit 3 --jobs "$JOBS" --seed 11
$PY -m mtpp train data --out "$DATA/peak-250-400" --teacher-count 512 --teacher-nodes 250 400 \
    --teacher-time-limit 4 --jobs "$JOBS" --seed 12
# 2. imitation of the proven orders (then REINFORCE on fresh graphs where EPOCHS > IMITATION);
#    validation on 200-600-op graphs, beyond the data's sizes
$PY -m mtpp train topoformer --objective peak --teacher exact \
    --teacher-data "$DATA/peak-100-250" --teacher-data "$DATA/peak-250-400" --max-gap 0.005 \
    --imitation-epochs "$IMITATION" --epochs "$EPOCHS" --graphs-per-epoch 3584 --batch 16 \
    --nodes 200 600 --validation 64 --dim 128 --layers 4 --dropout "$DROPOUT" --lr 1e-3 --reinforce-lr 2e-5 \
    --device "$DEVICE" --jobs "$JOBS" --threads 4 --time-limit "$TIME_LIMIT" --out "$RUN"
