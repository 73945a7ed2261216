#!/bin/bash
# test_run.sh ORK FIXTURES -- `ork run` black-box: greedy output of stories260K is the reference
# story (fixtures/vectors/stories260K-quant.greedy.json, text of the 48 greedy tokens), speed on
# stderr, usage errors exit 2, runtime errors exit 1 with a message.
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
VEC="$FIX/vectors/stories260K-quant.greedy.json"
[ -f "$MODEL" ] && [ -f "$VEC" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The reference continuation text, pulled out of the vector file with sed (one "text" per model;
# the first one is stories260K.gguf's).
want=$(grep -m1 '"text":' "$VEC" | sed -e 's/^ *"text": "//' -e 's/",\{0,1\} *$//')
[ -n "$want" ] || { echo "FAIL cannot read the reference text"; exit 1; }

"$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 -t 2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "run exits 0" '[ $rc -eq 0 ]'
check "greedy text is the reference story" 'grep -qF -- "Once upon a time$want" "$tmp/out"'
check "speed line on stderr" 'grep -qE "^prompt: 5 tokens, .* tok/s\) \| generation: 48 tokens" "$tmp/err"'

# ORK_DEBUG=phases: one line per kind of batch when the session ends (5 prompt rows in one
# batch, 47 decode steps after it), the phases adding up to the total; ORK_DEBUG=model lines
# show without any other setting; no debug flag, no info lines. Same text either way.
ORK_DEBUG=phases,model "$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 -t 2 \
    >"$tmp/outp" 2>"$tmp/errp"
check "phases: same text" 'cmp -s "$tmp/out" "$tmp/outp"'
check "phases: prompt batch line" \
    'grep -qE "^ork: info: phases \(batch\): 1 batches, 5 rows; per row " "$tmp/errp"'
check "phases: decode line" \
    'grep -qE "^ork: info: phases \(decode\): 47 batches, 47 rows; per row " "$tmp/errp"'
check "phases: matmul + attention + other = total" \
    'grep "phases (decode)" "$tmp/errp" | sed "s/.*per row //; s/[a-z:,]//g" |
     awk "{ d = \$1 - \$2 - \$3 - \$4; exit !(\$2 > 0 && d < 0.002 && d > -0.002) }"'
check "ORK_DEBUG=model lines show" 'grep -q "^ork: info: model: llama, 5 layers" "$tmp/errp"'
check "no debug flag: no info lines" '! grep -q "ork: info:" "$tmp/err"'

# same through a prompt file, batch 2, F16 KV cache: the greedy text is unchanged
printf 'Once upon a time' >"$tmp/prompt.txt"
"$ORK" run -m "$MODEL" -f "$tmp/prompt.txt" -n 48 --temp 0 -b 2 --kv-type f16 >"$tmp/out2" 2>/dev/null
check "prompt file, batch 2, f16 kv" 'grep -qF -- "$want" "$tmp/out2"'

# the model file mapped (--mmap) or read into memory (--no-mmap, the CPU default): same text
"$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 --mmap >"$tmp/outm" 2>/dev/null
"$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 --no-mmap >"$tmp/outr" 2>/dev/null
check "--mmap and --no-mmap: the reference text" \
    'grep -qF -- "$want" "$tmp/outm" && cmp -s "$tmp/outm" "$tmp/outr"'
# a file larger than the memory: --no-mmap refuses it with a message; the default maps it
# (sparse, so it takes no disk), and the reader then names what is wrong with it
truncate -s 1T "$tmp/huge.gguf"
"$ORK" run -m "$tmp/huge.gguf" -p x --no-mmap >/dev/null 2>"$tmp/eh1"; rc=$?
check "--no-mmap of a file larger than memory exits 1" \
    '[ $rc -eq 1 ] && grep -q "into memory: .* MiB available; map it instead (--mmap)" "$tmp/eh1"'
"$ORK" run -m "$tmp/huge.gguf" -p x >/dev/null 2>"$tmp/eh2"; rc=$?
check "default load maps a file larger than memory" '[ $rc -eq 1 ] && grep -q "bad magic" "$tmp/eh2"'
"$ORK" run --help >"$tmp/help" 2>&1
check "--help lists --mmap and --no-mmap" 'grep -q -- "--mmap " "$tmp/help" && grep -q -- "--no-mmap" "$tmp/help"'

# --stop cuts the text before the stop string
"$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 --stop "Lily" >"$tmp/out3" 2>/dev/null
check "--stop" 'grep -qF "girl named " "$tmp/out3" && ! grep -q "Lily" "$tmp/out3"'

# sampling with a seed is reproducible
"$ORK" run -m "$MODEL" -p "Once" -n 24 --temp 0.9 --seed 7 >"$tmp/s1" 2>/dev/null
"$ORK" run -m "$MODEL" -p "Once" -n 24 --temp 0.9 --seed 7 >"$tmp/s2" 2>/dev/null
check "seeded sampling is reproducible" 'cmp -s "$tmp/s1" "$tmp/s2" && [ -s "$tmp/s1" ]'

# context overflow is an error with a message, not a crash
"$ORK" run -m "$MODEL" -p "Once upon a time there was a dog" -c 4 --temp 0 >/dev/null 2>"$tmp/err4"
rc=$?
check "prompt longer than -c exits 1" '[ $rc -eq 1 ] && grep -q "context full" "$tmp/err4"'

# usage errors exit 2
"$ORK" run -m "$MODEL" -p x --temp abc >/dev/null 2>"$tmp/e1"; rc=$?
check "bad --temp exits 2" '[ $rc -eq 2 ] && grep -q "invalid value .abc. for --temp" "$tmp/e1"'
"$ORK" run -m "$MODEL" -p x --bogus >/dev/null 2>"$tmp/e2"; rc=$?
check "unknown option exits 2" '[ $rc -eq 2 ] && grep -q "unknown option" "$tmp/e2"'
"$ORK" run -p x >/dev/null 2>"$tmp/e3"; rc=$?
check "missing -m exits 2" '[ $rc -eq 2 ] && grep -q -- "-m MODEL" "$tmp/e3"'
"$ORK" run -m "$MODEL" -p x --kv-type q4 >/dev/null 2>&1; rc=$?
check "bad --kv-type exits 2" '[ $rc -eq 2 ]'
"$ORK" run -m "$MODEL" -p x -n >/dev/null 2>&1; rc=$?
check "missing value exits 2" '[ $rc -eq 2 ]'

# runtime errors exit 1 and name the problem
"$ORK" run -m "$tmp/nope.gguf" -p x >/dev/null 2>"$tmp/e4"; rc=$?
check "missing model exits 1" '[ $rc -eq 1 ] && grep -q "nope.gguf" "$tmp/e4"'
"$ORK" run -m "$MODEL" -f "$tmp/nope.txt" >/dev/null 2>"$tmp/e5"; rc=$?
check "missing prompt file exits 1" '[ $rc -eq 1 ] && grep -q "nope.txt" "$tmp/e5"'

"$ORK" run --help >"$tmp/h" 2>&1; rc=$?
check "--help exits 0" '[ $rc -eq 0 ] && grep -q "usage: ork run" "$tmp/h"'
exit $fail
