#!/bin/bash
# test_perplexity.sh ORK FIXTURES -- `ork perplexity` on ppl_text.txt with context 64 matches
# llama.cpp's perplexity tool (fixtures README: 2.2833 +/- 0.1535 for the F32 model, 8 chunks;
# 2.2843 for Q8_0).
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
TEXT="$FIX/vectors/ppl_text.txt"
[ -f "$MODEL" ] && [ -f "$TEXT" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

near() {  # near VALUE WANT TOL
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= t) }'
}

for b in 64 16; do
    "$ORK" perplexity -m "$MODEL" -f "$TEXT" -c 64 -b $b -t 2 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    check "exit 0 (batch $b)" '[ $rc -eq 0 ]'
    ppl=$(sed -n 's/^PPL = \([0-9.]*\) +\/- \([0-9.]*\)$/\1/p' "$tmp/out")
    err=$(sed -n 's/^PPL = \([0-9.]*\) +\/- \([0-9.]*\)$/\2/p' "$tmp/out")
    echo "     PPL = $ppl +/- $err"
    check "PPL 2.2833 within 0.01 (batch $b)" 'near "$ppl" 2.2833 0.01'
    check "error 0.1535 within 0.01 (batch $b)" 'near "$err" 0.1535 0.01'
    check "8 chunks (batch $b)" 'grep -q "^\[1\].*\[8\][0-9.]*,$" "$tmp/out" && ! grep -q "\[9\]" "$tmp/out"'
done

# Q8_0 weights (reference 2.2843), with f32 and with quantized activations; F16 KV cache
Q8="$FIX/models/stories260K-Q8_0.gguf"
if [ -f "$Q8" ]; then
    for opt in "" "--no-act-quant" "--kv-type f16"; do
        "$ORK" perplexity -m "$Q8" -f "$TEXT" -c 64 $opt >"$tmp/q8" 2>/dev/null
        ppl=$(sed -n 's/^PPL = \([0-9.]*\) .*/\1/p' "$tmp/q8")
        echo "     Q8_0 $opt: PPL = $ppl"
        check "Q8_0 $opt PPL 2.2843 within 0.01" 'near "$ppl" 2.2843 0.01'
    done
fi

"$ORK" perplexity -m "$MODEL" -f "$TEXT" -c 1024 >/dev/null 2>"$tmp/e1"; rc=$?
check "too short a text exits 1 with a message" '[ $rc -eq 1 ] && grep -q "tokens" "$tmp/e1"'
"$ORK" perplexity -m "$MODEL" >/dev/null 2>&1; rc=$?
check "missing -f exits 2" '[ $rc -eq 2 ]'
"$ORK" perplexity -m "$MODEL" -f "$TEXT" -c x >/dev/null 2>&1; rc=$?
check "bad -c exits 2" '[ $rc -eq 2 ]'
"$ORK" perplexity --help >"$tmp/h"; rc=$?
check "--help" '[ $rc -eq 0 ] && grep -q "usage: ork perplexity" "$tmp/h"'
exit $fail
