#!/bin/bash
# test_program_hash.sh ORK FIXTURES -- the NPU programs the executor builds and the greedy text
# stay the same across refactors: for fixture models of each architecture, on the simulator,
# with the fused executor (O whole), its fused-split-o variant (the O projection in two halves
# by heads: the fused executor's programs until the O projection became one submit, kept
# byte for byte) and the per-matmul baseline, the regcmd programs printed by
# ORK_DEBUG=regs (every register write, address and task of every program, in submit order)
# and the generated text are hashed and compared with tests/cli/program_hashes.txt.
#
# The hashes were recorded from the tree before the layout change that introduced this test;
# a change that alters a program on purpose (a new register, another tiling) updates the file
# in the same commit and says why. base=P/H: the first P programs (every matrix's M = 1 and
# M = 64 plans, which the executor makes before its row-sized plans and those above 64 rows)
# hash to H, the regs hash recorded before the row-sized plans existed: those plans are
# unchanged byte for byte. programs= and regs= changed when the default npu_max_m became 128
# (the 128-row plans are made after every other plan; base= and text= stayed). `test_program_hash.sh ORK FIXTURES --print` prints the
# current lines in the file's format.
ORK="$1"; FIX="$2"; MODE="${3:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WANT="$HERE/program_hashes.txt"
[ -d "$FIX/models" ] || { echo "SKIP: fixtures not found"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
# Real-size shapes (multi-core splits, K-split O halves, N-sliced LM heads): one-layer synthetic
# models; `ork gguf synth` writes the same bytes for the same options.
"$ORK" gguf synth --arch qwen2 --preset 0.5b --layers 1 -q -o "$tmp/synth-qwen2-0.5b-l1.gguf" &&
"$ORK" gguf synth --arch qwen3 --preset 1.7b --layers 1 -q -o "$tmp/synth-qwen3-1.7b-l1.gguf" ||
    { echo "FAIL ork gguf synth"; exit 1; }
for model in stories260K.gguf stories260K-Q8_0.gguf stories260K-qwen2-bias.gguf \
             stories260K-qwen3.gguf synth-qwen2-0.5b-l1.gguf synth-qwen3-1.7b-l1.gguf; do
    path="$FIX/models/$model"
    case $model in synth-*) path="$tmp/$model" ;; esac
    [ -f "$path" ] || { echo "SKIP: $model not found"; exit 77; }
    for exe in fused fused-split-o per-matmul; do
        ORK_DEBUG=regs "$ORK" run -m "$path" -p "Once upon a time" -n 6 \
            --temp 0 -t 1 --device sim --no-pack --npu-executor "$exe" \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc -ne 0 ]; then
            echo "FAIL $model $exe: exit $rc"; tail -5 "$tmp/err"; fail=1; continue
        fi
        progs=$(grep -c ' npu program ' "$tmp/err")
        ph=$(grep '^ork: info: ' "$tmp/err" | sha256sum | cut -c1-16)
        th=$(sha256sum <"$tmp/out" | cut -c1-16)
        # the info lines before program P+1: the M = 1 and M = max_m plans
        bp=$(grep -F -- "$model $exe " "$WANT" | sed -n 's/.* base=\([0-9]*\)\/.*/\1/p')
        bh=$(awk -v n="${bp:-0}" '/^ork: info: / { if ($0 ~ / npu program /) c++; if (c > n) exit; print }' \
             "$tmp/err" | sha256sum | cut -c1-16)
        line="$model $exe programs=$progs regs=$ph text=$th base=${bp:-0}/$bh"
        if [ "$MODE" = "--print" ]; then
            echo "$line"
        elif [ "$progs" -lt 1 ]; then
            echo "FAIL $model $exe: no program was printed"; fail=1
        elif grep -qxF -- "$line" "$WANT"; then
            echo "ok   $line"
        else
            echo "FAIL $line"
            echo "     want $(grep -F -- "$model $exe " "$WANT")"
            fail=1
        fi
    done
done
exit $fail
