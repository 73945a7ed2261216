#!/bin/bash
# test_rocket_run.sh ORK FIXTURES -- the whole engine through the mainline rocket uapi: on the
# simulator's rocket mode (`--device sim-rocket`: per-job BO lists, absolute PREP_BO deadlines,
# one fd per IOMMU domain) the greedy text equals the rknpu-mode simulator's and the CPU
# reference story, with the fused executor and both per-matmul baselines. (Several domains
# through rocket: tests/sim/test_rocket.c.)
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
VEC="$FIX/vectors/stories260K-quant.greedy.json"
[ -f "$MODEL" ] && [ -f "$VEC" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
want=$(grep -m1 '"text":' "$VEC" | sed -e 's/^ *"text": "//' -e 's/",\{0,1\} *$//')
for opts in "" "--npu-executor per-matmul" "--npu-executor per-matmul-mc"; do
    for dev in sim sim-rocket; do
        "$ORK" run -m "$MODEL" -p "Once upon a time" -n 48 --temp 0 -t 1 --device $dev --no-pack \
            $opts >"$tmp/out-$dev" 2>"$tmp/err-$dev"
        rc=$?
        check "$dev $opts: exit 0" '[ $rc -eq 0 ]'
    done
    check "sim-rocket $opts: the backend is named" 'grep -q "NPU (sim-rocket)" "$tmp/err-sim-rocket"'
    check "sim-rocket $opts: same text as sim" 'cmp -s "$tmp/out-sim" "$tmp/out-sim-rocket"'
    check "sim-rocket $opts: the reference story" \
        'grep -qF -- "Once upon a time$want" "$tmp/out-sim-rocket"'
done
exit $fail
