#!/usr/bin/env bash
# How the shipped "topoformer-peak" weights are trained (issue 25): orders proven
# minimum-peak by the best-first search, imitated by their likelihood, then REINFORCE.
#
#   bash benchmarks/train_topoformer_peak.sh RUN_DIR [DATA_DIR]
#
# JOBS (default: all cores but one) processes build the data and the features;
# DEVICE (default cuda if torch sees one, else cpu) trains.  Every step resumes:
# run it again after an interruption.  IMITATION and EPOCHS set the schedule.
set -euo pipefail
RUN=${1:?usage: train_topoformer_peak.sh RUN_DIR [DATA_DIR]}
DATA=${2:-$RUN/data}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
DEVICE=${DEVICE:-$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')}
IMITATION=${IMITATION:-10}
EPOCHS=${EPOCHS:-10}
PY=${PYTHON:-python3}

# 1. data from proofs: small graphs (almost all proven), and larger ones for reach
$PY -m mtpp train data --out "$DATA/peak-100-250" --teacher-count 2048 --teacher-nodes 100 250 \
    --teacher-time-limit 3 --jobs "$JOBS" --seed 1
$PY -m mtpp train data --out "$DATA/peak-300-500" --teacher-count 384 --teacher-nodes 300 500 \
    --teacher-time-limit 5 --jobs "$JOBS" --seed 2
# 2. imitation of the proven orders, then REINFORCE on fresh graphs (Topoformer Eq. 9-10)
$PY -m mtpp train topoformer --objective peak --teacher exact \
    --teacher-data "$DATA/peak-100-250" --teacher-data "$DATA/peak-300-500" --max-gap 0.005 \
    --imitation-epochs "$IMITATION" --epochs "$EPOCHS" --graphs-per-epoch 2432 --batch 16 \
    --nodes 100 250 --validation 64 --dim 128 --layers 4 --lr 1e-3 --reinforce-lr 2e-5 \
    --device "$DEVICE" --jobs "$JOBS" --threads 4 --out "$RUN"
