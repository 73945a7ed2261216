#!/bin/bash
# bench_serve.sh ORK MODEL [CLIENTS...] -- aggregate tokens/s of `ork serve` with 1, 4 and 8
# concurrent streaming clients (default), batched decode vs one-at-a-time (--no-batch).
# Needs node (>= 18). Environment: N_PREDICT, REQS, THREADS, PROMPT, BASELINE, NPROBS
# (bench_serve.mjs; NPROBS=32 measures what n_probs on one client costs a concurrent one).
# Example: tools/bench_serve.sh build/ork ../shared/fixtures/models/stories260K.gguf
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ORK MODEL [CLIENTS...]" >&2; exit 2; }
command -v node >/dev/null || { echo "bench_serve: node is required" >&2; exit 1; }
exec node "$(dirname "$0")/bench_serve.mjs" "$@"
