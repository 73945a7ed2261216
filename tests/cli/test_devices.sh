#!/usr/bin/env bash
# test_devices.sh -- `ork devices`: every backend listed with a status, the simulators ok with
# their cores and domains, the reason printed for a backend that is absent, JSON form, usage
# errors; and the device vocabulary shared by run/bench/perplexity: every name is accepted,
# `auto` (the default) on a machine without an NPU prints exactly what `cpu` prints.
# usage: bash test_devices.sh ORK_BINARY FIXTURES_DIR
set -u
ORK=$1
FIX=$2
fail=0
check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

out=$("$ORK" devices); check "devices: exit 0" test $? -eq 0
for b in rknpu rocket sim sim-rocket; do
    check "devices: $b listed" grep -qE "^$b +(ok|absent|permission denied|unusable)" <<<"$out"
done
check "devices: sim ok with 3 cores" grep -qE "^sim +ok +\(simulator\) +[0-9.]+ +3 " <<<"$out"
check "devices: what auto picks" grep -q "^--device auto" <<<"$out"
if grep -qE "^rknpu +absent" <<<"$out"; then
    check "devices: absent rknpu says where it looked" grep -q "no rknpu device found" <<<"$out"
fi
json=$("$ORK" devices --json); check "devices --json: exit 0" test $? -eq 0
check "devices --json: four backends" test "$(grep -o '"backend"' <<<"$json" | wc -l)" -eq 4
check "devices --json: auto named" grep -q '"auto":"' <<<"$json"
"$ORK" devices --bogus >/dev/null 2>&1; check "devices: unknown option exit 2" test $? -eq 2
"$ORK" devices --help | grep -q "rocket"; check "devices --help" test $? -eq 0

MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: $MODEL not found"; exit $fail; }
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=$(mktemp -d -p /dev/shm); else tmp=$(mktemp -d); fi
trap 'rm -rf "$tmp"' EXIT
cp "$MODEL" "$tmp/m.gguf"
if grep -q "^--device auto uses: the CPU" <<<"$out"; then
    cpu=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device cpu 2>"$tmp/e1")
    dflt=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 2>"$tmp/e2")
    auto=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device auto 2>"$tmp/e3")
    check "no NPU: default == cpu text" test "$cpu" = "$dflt"
    check "no NPU: auto == cpu text" test "$cpu" = "$auto"
    check "no NPU: auto quiet (stderr has the speed line only)" \
        test "$(grep -vc '^prompt:' "$tmp/e3")" -eq 0
    "$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device npu >/dev/null 2>"$tmp/e4"
    check "no NPU: --device npu exit 1" test $? -eq 1
    check "no NPU: --device npu names it" grep -q "no RK3588 NPU found" "$tmp/e4"
    "$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device rknpu >/dev/null 2>"$tmp/e5"
    check "no NPU: --device rknpu exit 1, not a usage error" test $? -eq 1
    "$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device auto -v >/dev/null 2>"$tmp/e6"
    check "auto -v says it fell back" grep -q "device auto: no NPU found" "$tmp/e6"
fi
sim=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device sim 2>/dev/null)
simr=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device sim-rocket 2>/dev/null)
check "sim-rocket text == sim text" test -n "$sim" -a "$sim" = "$simr"
simw=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device sim \
       --npu-wait-ms 50 2>/dev/null)
check "--npu-wait-ms: same text" test -n "$sim" -a "$sim" = "$simw"
simb=$("$ORK" run -m "$tmp/m.gguf" -p "Once upon a time" -n 16 --temp 0 --device sim \
       --blocking-submits 2>/dev/null)
check "--blocking-submits: same text" test -n "$sim" -a "$sim" = "$simb"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device sim --npu-wait-ms 0 >/dev/null 2>"$tmp/e8"
check "--npu-wait-ms 0: exit 2" test $? -eq 2
check "--npu-wait-ms 0: named" grep -q -- "--npu-wait-ms" "$tmp/e8"
"$ORK" run -m "$tmp/m.gguf" -p x -n 1 --device bogus >/dev/null 2>"$tmp/e7"
check "bad device: exit 2" test $? -eq 2
check "bad device: lists the names" grep -q "auto, cpu, npu, rknpu, rocket, sim or sim-rocket" "$tmp/e7"
"$ORK" perplexity -m "$tmp/m.gguf" -f /dev/null --device bogus >/dev/null 2>&1
check "perplexity: bad device exit 2" test $? -eq 2
"$ORK" bench -m "$tmp/m.gguf" -p 4 -n 2 -r 1 --device sim-rocket >/dev/null 2>&1
check "bench --device sim-rocket" test $? -eq 0
exit $fail
