#!/usr/bin/env bash
# How the shipped "topoformer-peak" weights are trained (issue 25): orders proven
# minimum-peak by the best-first search, imitated by their likelihood (padded batches
# on a GPU), then fine-tuned with larger graphs' best-found orders; each stage keeps
# the policy that decodes best on validation graphs larger than its data.
#
#   bash benchmarks/train_topoformer_peak.sh RUN_DIR [DATA_DIR]
#
# JOBS (default: all cores but one) processes build the data and the features;
# DEVICE (default cuda if torch sees one, else cpu) trains.  Every step resumes: run it
# again after an interruption (or build the data sets first, elsewhere, and bring
# them; a stage whose weights.pt exists is skipped).  IMITATION sets each stage's
# epochs, TIME_LIMIT caps each stage's training seconds.
set -euo pipefail
RUN=${1:?usage: train_topoformer_peak.sh RUN_DIR [DATA_DIR]}
DATA=${2:-$RUN/data}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
DEVICE=${DEVICE:-$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')}
IMITATION=${IMITATION:-200}
TIME_LIMIT=${TIME_LIMIT:-3600}
PY=${PYTHON:-python3}
echo "training topoformer-peak at commit $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo '?') into $RUN"

# 1. data: graphs of 100-400 ops with orders proven minimum-peak (or within 0.5%), and
#    500-900-op graphs with the best order mtpp.schedule finds in 6 s (median 7% above
#    its bound there, which is weak at that size)
$PY -m mtpp train data --out "$DATA/peak-100-250" --teacher-count 3072 --teacher-nodes 100 250 \
    --teacher-time-limit 3 --jobs "$JOBS" --seed 11
$PY -m mtpp train data --out "$DATA/peak-250-400" --teacher-count 512 --teacher-nodes 250 400 \
    --teacher-time-limit 4 --jobs "$JOBS" --seed 12
$PY -m mtpp train data --out "$DATA/peak-500-900" --teacher-count 192 --teacher-nodes 500 900 \
    --teacher-time-limit 6 --jobs "$JOBS" --seed 13
SMALL=(--teacher-data "$DATA/peak-100-250" --teacher-data "$DATA/peak-250-400")
COMMON=(--objective peak --teacher exact --imitation-epochs "$IMITATION" --epochs "$IMITATION"
    --graphs-per-epoch 3584 --batch 16 --dim 128 --layers 4 --dropout 0.1 --reinforce-lr 2e-5 --device "$DEVICE"
    --jobs "$JOBS" --threads 4 --time-limit "$TIME_LIMIT")
# 2. imitation of the proven orders from a random start; validation on 200-600 ops
[ -f "$RUN/base/weights.pt" ] || $PY -m mtpp train topoformer "${COMMON[@]}" "${SMALL[@]}" \
    --max-gap 0.005 --nodes 200 600 --validation 64 --lr 1e-3 --out "$RUN/base"
# 3. fine-tuning with the larger graphs too; validation on 300-1500 ops
$PY -m mtpp train topoformer "${COMMON[@]}" "${SMALL[@]}" --teacher-data "$DATA/peak-500-900" \
    --max-gap 0.12 --nodes 300 1500 --validation 48 --lr 3e-4 --init "$RUN/base/weights.pt" --out "$RUN"
