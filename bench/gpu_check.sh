#!/usr/bin/env bash
# GPU check, one call: three real-architecture VLMs (Qwen2.5-VL-7B, Gemma-3-12B, SmolVLM2-2.2B
# sizes, random bf16 weights, nothing downloaded) answer the judge's attempt+success questions;
# prints per-call latency as JSON (and writes it to $OUT/gpu_check.json when $OUT is set).
# Uses the vllm backend when vLLM imports, else the transformers backend, and says which.
#   bash bench/gpu_check.sh            # on a GPU node
#   bash bench/gpu_check.sh --tiny     # the same script end to end on CPU, test sizes
#   bash bench/gpu_check.sh --production [--tiny]   # rc-judge-v1.yaml itself: its processors,
#        shares and frames; prompt tokens, start-up, memory, KV capacity, judgments/hour, p50,
#        cost a judgment (bench/gpu_production.py)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ]; then PY=.venv/bin/python; fi
out=${OUT:-.}/gpu_check.json
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
  transformers.__version__, "cuda", torch.cuda.is_available())' >&2
exec "$PY" -m bench.gpu_check --out "$out" "$@"
