#!/usr/bin/env bash
# test_synth.sh -- black-box checks of `ork gguf synth`: usage errors, a Qwen2.5-0.5B-shaped model
# cut to one layer with the byte-level fallback vocabulary, read back by the independent reader
# ../shared/tools/gguf_dump.py (when present) and by ork (info, run), and the same seed giving
# the same bytes (a different seed different ones); a Qwen3-0.6B-shaped Q4_K model cut to two
# layers scores a text with the same bits whether its matrices are interleaved for the CPU
# kernels (the default where the CPU has them) or kept in the GGUF row layout (--no-repack).
# usage: bash test_synth.sh ORK_BINARY FIXTURES_DIR
set -u
ORK=$1
FIX=$2
DUMP="$FIX/../tools/gguf_dump.py"
fail=0
# The files are ~90 MB each: prefer a RAM-backed directory when there is one.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=$(mktemp -d -p /dev/shm); else tmp=$(mktemp -d); fi
trap 'rm -rf "$tmp"' EXIT

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

out=$("$ORK" gguf synth --help); rc=$?
check "--help exits 0" test $rc -eq 0
check "--help lists the qwen3 1.7b preset" grep -Eq "qwen3 +1\.7b .*Qwen3-1\.7B" <<<"$out"
"$ORK" gguf >/dev/null 2>&1; check "gguf without subcommand: exit 2" test $? -eq 2
"$ORK" gguf bogus >/dev/null 2>&1; check "unknown subcommand: exit 2" test $? -eq 2
"$ORK" gguf synth --preset 0.5b -o "$tmp/x.gguf" >/dev/null 2>&1
check "missing --arch: exit 2" test $? -eq 2
"$ORK" gguf synth --arch qwen2 --preset 0.5b --type q6_k -o "$tmp/x.gguf" >/dev/null 2>&1
check "bad --type: exit 2" test $? -eq 2
"$ORK" gguf synth --arch qwen2 --preset 99b -o "$tmp/x.gguf" >/dev/null 2>&1
check "unknown preset: exit 2" test $? -eq 2
"$ORK" gguf synth --arch gpt2 --preset 0.5b -o "$tmp/x.gguf" >/dev/null 2>&1
check "unknown arch: exit 2" test $? -eq 2
"$ORK" gguf synth --arch qwen2 --preset 0.5b --layers 0 -o "$tmp/x.gguf" >/dev/null 2>&1
check "--layers 0: exit 2" test $? -eq 2
"$ORK" gguf synth --arch qwen2 --preset 0.5b --layers 1 -o /nonexistent-dir/x.gguf >/dev/null 2>&1
check "unwritable output: exit 1" test $? -eq 1
check "no partial file" test ! -e "$tmp/x.gguf"

synth() {   # synth OUT SEED
    "$ORK" gguf synth --arch qwen2 --preset 0.5b --layers 1 --type q4_0 --seed "$2" -o "$1" -q
}
synth "$tmp/a.gguf" 5; rc=$?
check "synth qwen2 0.5b --layers 1: exit 0" test $rc -eq 0
ha=$(sha256sum <"$tmp/a.gguf")
synth "$tmp/b.gguf" 5; hb=$(sha256sum <"$tmp/b.gguf"); rm -f "$tmp/b.gguf"
synth "$tmp/b.gguf" 6; hc=$(sha256sum <"$tmp/b.gguf"); rm -f "$tmp/b.gguf"
check "same seed: same file" test "$ha" = "$hb"
check "other seed: other file" test "$ha" != "$hc"

# The independent reader sees the published shapes (Qwen2.5-0.5B: dim 896, 14/2 heads, ffn 4864,
# vocab 151936, tied, q/k/v biases).
if [ -f "$DUMP" ] && command -v python3 >/dev/null; then
    d=$(python3 "$DUMP" "$tmp/a.gguf" 2>&1); rc=$?
    check "gguf_dump.py reads it" test $rc -eq 0
    check "gguf_dump: GGUF v3, 14 tensors" grep -Eq "^GGUF v3, [0-9]+ kv, 14 tensors" <<<"$d"
    check "gguf_dump: architecture" grep -q "general.architecture (str) = 'qwen2'" <<<"$d"
    check "gguf_dump: embedding_length" grep -q "qwen2.embedding_length (u32) = 896" <<<"$d"
    check "gguf_dump: head_count_kv" grep -q "qwen2.attention.head_count_kv (u32) = 2" <<<"$d"
    check "gguf_dump: tokens" grep -Eq "tokenizer.ggml.tokens \[str x 151936\]" <<<"$d"
    check "gguf_dump: token_embd" grep -Eq "T token_embd.weight +Q4_0 +\[896, 151936\]" <<<"$d"
    check "gguf_dump: ffn_down" grep -Eq "T blk.0.ffn_down.weight +Q4_0 +\[4864, 896\]" <<<"$d"
    check "gguf_dump: k bias" grep -Eq "T blk.0.attn_k.bias +F32 +\[128\]" <<<"$d"
    check "gguf_dump: tied (no output.weight)" bash -c '! grep -q "T output.weight" <<<"$1"' _ "$d"
else
    echo "skip gguf_dump.py checks (not found at $DUMP)"
fi

out=$("$ORK" info "$tmp/a.gguf" 2>&1); rc=$?
check "ork info reads it" test $rc -eq 0
out=$("$ORK" run -m "$tmp/a.gguf" -p "Hello" -n 6 --seed 1 -t 2 2>&1); rc=$?
check "ork run: exit 0" test $rc -eq 0
check "ork run: generated 6 tokens" grep -Eq "generation: 6 tokens" <<<"$out"
[ $fail -eq 0 ] || echo "$out"

# Q4_K interleaved (x16k.c) against the row layout: the kernels compute the same integers and
# f32 steps, so every chunk's perplexity prints the same digits.
rm -f "$tmp/a.gguf"
"$ORK" gguf synth --arch qwen3 --preset 0.6b --layers 2 --type q4_k --seed 3 -o "$tmp/k.gguf" -q
check "synth qwen3 0.6b --type q4_k --layers 2: exit 0" test $? -eq 0
for i in $(seq 40); do echo "The quick brown fox $i jumps over the lazy dog, twice $((i * 7)) times."; done >"$tmp/text.txt"
px=$(ORK_DEBUG=model "$ORK" perplexity -m "$tmp/k.gguf" -f "$tmp/text.txt" -c 128 --chunks 2 -t 2 2>"$tmp/err"); rc=$?
check "perplexity, default layout: exit 0" test $rc -eq 0
pr=$("$ORK" perplexity -m "$tmp/k.gguf" -f "$tmp/text.txt" -c 128 --chunks 2 -t 2 --no-repack 2>/dev/null)
check "perplexity: some PPL printed" grep -q "PPL = " <<<"$px"
check "Q4_K interleaved = row layout, digit for digit" test "$px" = "$pr"
# the interleaved kernels are x86-64 AVX2 and up (docs/kernels.md "Interleaved weights")
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    check "Q4_K matrices were interleaved" grep -Eq "model: [1-9][0-9]* matrices interleaved" "$tmp/err"
else
    echo "skip: this CPU has no interleaved kernels (x86-64 AVX2); the layouts above were the same"
fi
exit $fail
