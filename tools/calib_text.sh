#!/usr/bin/env bash
# calib_text.sh -- a calibration text for --npu-weights-calib written by the model itself on the
# CPU (F32), so that it is in the model's domain without being the text perplexity is measured
# on: 12 seeds x 3 prompts (none of them ppl_text.txt's opening), 200 tokens each at
# temperature 1.0 (docs/bench-log/2026-12-gptq.md used it for the fixtures).
# Usage: tools/calib_text.sh ORK MODEL.gguf OUT.txt
set -euo pipefail
ork=$1 model=$2 out=$3
: > "$out"
for seed in 1 2 3 4 5 6 7 8 9 10 11 12; do
    for prompt in "The dog" "Tom and Sue" "A little bird"; do
        "$ork" run -m "$model" -p "$prompt" -n 200 --temp 1.0 --seed "$seed" 2>/dev/null >> "$out"
        echo >> "$out"
    done
done
wc -c "$out"
