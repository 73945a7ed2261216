#!/usr/bin/env bash
# test_pack.sh -- black-box checks of `ork pack` and of NPU packs on first use: usage errors;
# build, --check, keep, --force; a pack made stale by touching the model is explained and
# rebuilt; a pack of the previous format version is explained and rebuilt; a killed build (SIGKILL mid-write) leaves no pack that loads; `ork run --device sim`
# builds a missing pack itself and prints the same text as the CPU.
# usage: bash test_pack.sh ORK_BINARY FIXTURES_DIR
set -u
ORK=$1
FIX=$2
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: $MODEL not found"; exit 77; }
fail=0
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=$(mktemp -d -p /dev/shm); else tmp=$(mktemp -d); fi
trap 'rm -rf "$tmp"' EXIT

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

"$ORK" pack >/dev/null 2>&1; check "no model: exit 2" test $? -eq 2
"$ORK" pack --bogus x >/dev/null 2>&1; check "unknown option: exit 2" test $? -eq 2
out=$("$ORK" pack --help); check "--help exits 0" test $? -eq 0
check "help mentions the pack file" grep -q "orkpack" <<<"$out"

cp "$MODEL" "$tmp/m.gguf"
"$ORK" pack --check "$tmp/m.gguf" >/dev/null 2>&1; check "--check without a pack: exit 1" test $? -eq 1
out=$("$ORK" pack -q "$tmp/m.gguf" 2>&1); check "pack builds" test $? -eq 0
check "built message" grep -q "built (missing before)" <<<"$out"
check "pack file exists" test -s "$tmp/m.orkpack"
"$ORK" pack --check "$tmp/m.gguf" >/dev/null; check "--check: valid" test $? -eq 0
out=$("$ORK" pack -q "$tmp/m.gguf" 2>&1); check "valid pack kept" grep -q "valid, kept" <<<"$out"
out=$("$ORK" pack -q --force "$tmp/m.gguf" 2>&1); check "--force rebuilds" grep -q "built (ok before)" <<<"$out"

touch -d "2001-01-01" "$tmp/m.gguf"
out=$("$ORK" pack --check "$tmp/m.gguf" 2>&1); check "stale: --check fails" test $? -eq 1
check "stale explained" grep -q "is stale" <<<"$out"
out=$("$ORK" pack -q "$tmp/m.gguf" 2>&1); check "stale pack rebuilt" grep -q "built (stale before)" <<<"$out"

# a pack of the previous format version (2: one O projection per layer) is explained and
# rebuilt in the current one, which stores the O projection as two halves by heads
"$ORK" pack -q --force "$tmp/m.gguf" >/dev/null 2>&1
printf '\x02\x00\x00\x00' | dd of="$tmp/m.orkpack" bs=1 seek=8 conv=notrunc 2>/dev/null
out=$("$ORK" pack --check "$tmp/m.gguf" 2>&1); check "v2 pack: --check fails" test $? -eq 1
check "v2 pack explained" grep -q "format version 2 (one O projection" <<<"$out"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device sim >/dev/null 2>"$tmp/err"
check "v2 pack: run rebuilds it" grep -q "format version 2.*rebuilding it" "$tmp/err"
"$ORK" pack --check "$tmp/m.gguf" >/dev/null 2>&1; check "rebuilt pack valid" test $? -eq 0
check "rebuilt pack has the O halves" grep -q "attn_output.b" "$tmp/m.orkpack"

# run on the simulator builds a missing pack and matches the CPU text
rm -f "$tmp/m.orkpack"
cpu=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
sim=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 24 --temp 0 --device sim 2>"$tmp/err")
check "run --device sim builds the pack" test -s "$tmp/m.orkpack"
check "progress bar on stderr" grep -q "packing NPU weights" "$tmp/err"
check "sim text == cpu text" test "$cpu" = "$sim"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device bogus >/dev/null 2>&1
check "bad --device: exit 2" test $? -eq 2

# a build killed mid-write leaves no loadable pack: a bigger synthetic model so the build
# takes long enough to be interrupted
if "$ORK" gguf synth --arch qwen2 --preset 0.5b --layers 1 -q -o "$tmp/big.gguf" 2>/dev/null; then
    "$ORK" pack -q "$tmp/big.gguf" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
        ls "$tmp"/big.orkpack.tmp.* >/dev/null 2>&1 && break
        sleep 0.01
    done
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    check "killed build: no pack under the real name" test ! -e "$tmp/big.orkpack"
    "$ORK" pack --check "$tmp/big.gguf" >/dev/null 2>&1
    check "killed build: --check fails" test $? -eq 1
    rm -f "$tmp"/big.orkpack.tmp.*
else
    echo "skip killed-build check (gguf synth failed)"
fi

exit $fail
