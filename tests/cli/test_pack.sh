#!/usr/bin/env bash
# test_pack.sh -- black-box checks of `ork pack` and of NPU packs on first use: usage errors;
# build, --check, keep, --force; a pack made stale by touching the model is explained and
# rebuilt; a pack of the previous format version is explained and rebuilt; a killed build
# (SIGKILL mid-write) leaves no pack that loads; --device probes the backend and places the
# weights into its IOMMU domains; `ork run --device sim`
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

# --npu-caps reaches the device the pack is built on: an unreadable record fails, naming it
out=$("$ORK" pack -q --force --npu-caps "$tmp/no-such-caps.json" "$tmp/m.gguf" 2>&1)
check "--npu-caps: unreadable record is an error" test $? -eq 1
check "--npu-caps: the error names the file" grep -q "no-such-caps.json" <<<"$out"
"$ORK" pack --check "$tmp/m.gguf" >/dev/null; check "--npu-caps failure left the pack valid" test $? -eq 0

touch -d "2001-01-01" "$tmp/m.gguf"
out=$("$ORK" pack --check "$tmp/m.gguf" 2>&1); check "stale: --check fails" test $? -eq 1
check "stale explained" grep -q "is stale" <<<"$out"
out=$("$ORK" pack -q "$tmp/m.gguf" 2>&1); check "stale pack rebuilt" grep -q "built (stale before)" <<<"$out"

# a pack of the previous format version (2: one O projection per layer) is explained and
# rebuilt in the current one (which holds the O projection whole or as two halves by heads, as
# the executor plan asks)
"$ORK" pack -q --force "$tmp/m.gguf" >/dev/null 2>&1
printf '\x02\x00\x00\x00' | dd of="$tmp/m.orkpack" bs=1 seek=8 conv=notrunc 2>/dev/null
out=$("$ORK" pack --check "$tmp/m.gguf" 2>&1); check "v2 pack: --check fails" test $? -eq 1
check "v2 pack explained" grep -q "format version 2 (one O projection" <<<"$out"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device sim >/dev/null 2>"$tmp/err"
check "v2 pack: run rebuilds it" grep -q "format version 2.*rebuilding it" "$tmp/err"
"$ORK" pack --check "$tmp/m.gguf" >/dev/null 2>&1; check "rebuilt pack valid" test $? -eq 0
check "rebuilt pack has the O projection" grep -q "blk.0.attn_output" "$tmp/m.orkpack"

# run on the simulator builds a missing pack and matches the CPU text
rm -f "$tmp/m.orkpack"
cpu=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 24 --temp 0 2>/dev/null)
sim=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 24 --temp 0 --device sim 2>"$tmp/err")
check "run --device sim builds the pack" test -s "$tmp/m.orkpack"
check "progress bar on stderr" grep -q "packing NPU weights" "$tmp/err"
check "sim text == cpu text" test "$cpu" = "$sim"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device bogus >/dev/null 2>&1
check "bad --device: exit 2" test $? -eq 2

# --device D: the backend is probed first (an unusable one is an error naming it, nothing is
# built), then the pack's weights are placed into D's IOMMU domains; a model that cannot fit
# is refused. The pack's bytes are the same for every backend.
rm -f "$tmp/m.orkpack"
"$ORK" pack -q --device cpu "$tmp/m.gguf" >/dev/null 2>&1; check "--device cpu: exit 2" test $? -eq 2
"$ORK" pack -q --device bogus "$tmp/m.gguf" >/dev/null 2>&1; check "--device bogus: exit 2" test $? -eq 2
for d in rknpu rocket; do
    if ! "$ORK" devices | grep -qE "^$d +ok"; then
        out=$("$ORK" pack -q --device $d "$tmp/m.gguf" 2>&1); check "--device $d absent: exit 1" test $? -eq 1
        check "--device $d absent: says why" grep -q "device $d is not usable: no $d device found" <<<"$out"
        check "--device $d absent: nothing built" test ! -e "$tmp/m.orkpack"
    fi
done
out=$("$ORK" pack -q --device sim "$tmp/m.gguf" 2>&1); check "--device sim: exit 0" test $? -eq 0
check "--device sim: built" grep -q "built (missing before)" <<<"$out"
check "--device sim: placement printed" grep -qE "^placement on sim: [0-9]+ matrices, .* at least 1 IOMMU domain of 3900.00 MiB \(sim offers 16\)" <<<"$out"
cp "$tmp/m.orkpack" "$tmp/m_sim.orkpack"
out=$("$ORK" pack -q --force --device sim-rocket "$tmp/m.gguf" 2>&1); check "--device sim-rocket: exit 0" test $? -eq 0
check "--device sim-rocket: placement" grep -q "^placement on sim-rocket: " <<<"$out"
check "the pack is the same for rknpu and rocket" cmp -s "$tmp/m.orkpack" "$tmp/m_sim.orkpack"
out=$("$ORK" pack -q --device sim --npu-domain-bytes 700000 "$tmp/m.gguf" 2>&1)
check "small domains: several" grep -qE "at least [2-9] IOMMU domains of 0.67 MiB" <<<"$out"
out=$("$ORK" pack -q --check --device sim --npu-domain-bytes 100000 "$tmp/m.gguf" 2>&1)
check "a layer above a domain: exit 1" test $? -eq 1
check "a layer above a domain: explained" grep -q "layer 0 needs .* more than one IOMMU domain" <<<"$out"
"$ORK" pack -q --device sim --npu-domain-bytes 0 "$tmp/m.gguf" >/dev/null 2>&1
check "--npu-domain-bytes 0: exit 2" test $? -eq 2

# round trip on every weight type the engine reads: a tiny model of each (tests/cli/gguf_tiny.py;
# dim 256 so the 256-weight K-quant blocks fit) packs, checks valid, and runs on the simulator
# from the pack with the text of the in-memory quantisation (--no-pack). Q8_0/Q4_0/Q4_K are
# read into memory and interleaved by 16 rows for the CPU on x86-64: the packer must not see
# that layout ("row 0 column 0 is not finite" before).
if command -v python3 >/dev/null 2>&1; then
    here=$(cd "$(dirname "$0")" && pwd)
    for t in f32 f16 bf16 q8_0 q4_0 q4_k q6_k; do
        if ! python3 "$here/gguf_tiny.py" "$t" "$MODEL" "$tmp/t_$t.gguf"; then
            check "$t: tiny model written" false
            continue
        fi
        out=$("$ORK" pack -q "$tmp/t_$t.gguf" 2>&1); check "$t: pack builds" test $? -eq 0
        check "$t: built message" grep -q "built (missing before)" <<<"$out"
        "$ORK" pack --check "$tmp/t_$t.gguf" >/dev/null 2>&1; check "$t: --check valid" test $? -eq 0
        a=$("$ORK" run -m "$tmp/t_$t.gguf" -p "Once" -n 8 --temp 0 --device sim 2>"$tmp/err")
        check "$t: run from the pack" test $? -eq 0
        check "$t: the pack is used, not rebuilt" test "$(grep -c 'building' "$tmp/err")" -eq 0
        b=$("$ORK" run -m "$tmp/t_$t.gguf" -p "Once" -n 8 --temp 0 --device sim --no-pack 2>/dev/null)
        check "$t: pack text == in-memory text" test "$a" = "$b"
    done
    # --pack FILE: a pack elsewhere is read (and built there), none beside the model
    cp "$tmp/t_q8_0.gguf" "$tmp/p.gguf"
    a=$("$ORK" run -m "$tmp/p.gguf" -p "Once" -n 8 --temp 0 --device sim --pack "$tmp/other.orkpack" 2>/dev/null)
    check "--pack FILE builds that file" test -s "$tmp/other.orkpack"
    check "--pack FILE: nothing beside the model" test ! -e "$tmp/p.orkpack"
    "$ORK" pack --check "$tmp/p.gguf" -o "$tmp/other.orkpack" >/dev/null 2>&1
    check "--pack FILE: valid for the model" test $? -eq 0
    b=$("$ORK" run -m "$tmp/p.gguf" -p "Once" -n 8 --temp 0 --device sim --pack "$tmp/other.orkpack" 2>"$tmp/err")
    check "--pack FILE: reused" test "$(grep -c 'building' "$tmp/err")" -eq 0
    check "--pack FILE: same text" test "$a" = "$b"
    out=$("$ORK" bench -m "$tmp/p.gguf" -p 4 -n 2 -r 1 --device sim --pack "$tmp/other.orkpack" 2>&1)
    check "bench --pack FILE" test $? -eq 0
    "$ORK" run -m "$tmp/p.gguf" -p x --pack >/dev/null 2>&1
    check "--pack without a value: exit 2" test $? -eq 2
    # a tensor the packer cannot quantise is named: a non-finite weight in blk.0.ffn_down
    python3 - "$tmp/t_f32.gguf" "$tmp/nan.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
# gguf_tiny.py writes blk.0.ffn_down.weight (f32, 256 x 512) last, ending the file
struct.pack_into("<f", b, len(b) - 256 * 512 * 4, float("nan"))
open(sys.argv[2], "wb").write(b)
PY
    out=$("$ORK" pack -q "$tmp/nan.gguf" 2>&1); check "non-finite weight: exit 1" test $? -eq 1
    check "non-finite weight: the tensor is named" grep -q "blk.0.ffn_down" <<<"$out"
else
    echo "skip weight-type round trips (no python3)"
fi

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
