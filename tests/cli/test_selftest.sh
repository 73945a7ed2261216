#!/bin/bash
# test_selftest.sh -- `ork selftest`: the quick sweep passes on the simulator with one line per
# case and a summary; the default device falls back to the simulator with a note when no NPU is
# present; bad options are usage errors; --calibrate on the sim writes a file holding the default
# table (the twin test test_twin_calibrate checks it constant by constant); the waits are
# bounded (--npu-wait-ms, --blocking-submits). Usage: test_selftest.sh ORK_BINARY FIXTURES_DIR
set -u
ORK=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then echo "ok   $d"; else echo "FAIL $d"; fail=1; fi
}

"$ORK" selftest --device sim --quick > "$TMP/out" 2> "$TMP/err"
rc=$?
check "quick sweep on sim exits 0" test $rc -eq 0
check "device line" grep -q '^device: sim' "$TMP/out"
check "int8 cases bit-exact" test "$(grep -c '^int8 .* bit-exact ' "$TMP/out")" -ge 3
check "fp16 cases within tolerance" test "$(grep -c '^fp16 .* ok   max rel err ' "$TMP/out")" -ge 3
check "every case line has a time" test "$(grep -c ' ms$' "$TMP/out")" -eq "$(grep -c '^\(int8\|fp16\) ' "$TMP/out")"
check "summary all passed" grep -q '^selftest: \([0-9]*\)/\1 passed on sim' "$TMP/out"
check "no FAIL lines" bash -c "! grep -q 'FAIL\|ERROR' '$TMP/out'"

# The ladder: one verdict line per form, the one-job form not confirmed without a capability.
for f in discovery per-core multi-core chain async multi-domain layer; do
    check "ladder: $f passes" grep -q "^form  $f  *pass " "$TMP/out"
done
check "ladder: one-job not confirmed by default" grep -q '^form  one-job  *not-confirmed ' "$TMP/out"
check "ladder summary" grep -q '^ladder: 0 of [0-9]* steps failed on sim' "$TMP/out"
"$ORK" selftest --device sim-rocket --quick > "$TMP/ro" 2>&1
check "sim-rocket: selftest passes" test $? -eq 0
check "sim-rocket: summary" grep -q '^selftest: \([0-9]*\)/\1 passed on sim-rocket' "$TMP/ro"
"$ORK" selftest --device sim --confirm-forms "$TMP/caps.json" --json --blocking-submits > "$TMP/json" 2> /dev/null
check "--json: a report" grep -q '"format": "ork-selftest"' "$TMP/json"
check "--json: one-job tested" grep -q '"name": "one-job", "verdict": "pass"' "$TMP/json"
check "--confirm-forms records it" grep -q '"one_job_0x7":[[:space:]]*"confirmed"' "$TMP/caps.json"
"$ORK" selftest --device sim --quick --capabilities "$TMP/caps.json" --npu-wait-ms 250 > "$TMP/cap" 2>&1
check "--capabilities: one-job runs" grep -q '^form  one-job  *pass ' "$TMP/cap"

# Bounded waits: discovery says how jobs are waited for; --npu-wait-ms sets the bound (the
# --capabilities run above), --blocking-submits the old blocking form (the --json run); bad
# values are usage errors.
check "discovery: waits bounded by default" grep -q '^form  discovery .*waits: bounded at 1000 ms (NONBLOCK + doorbell)' "$TMP/out"
check "--npu-wait-ms: the bound" grep -q 'waits: bounded at 250 ms' "$TMP/cap"
check "--blocking-submits: said" grep -q 'waits: blocking, bounded by the kernel' "$TMP/json"
check "sim-rocket: PREP_BO deadlines" grep -q 'waits: blocking, bounded by the kernel (PREP_BO deadlines)' "$TMP/ro"
"$ORK" selftest --device sim --npu-wait-ms 0 > /dev/null 2>&1
check "--npu-wait-ms 0: exit 2" test $? -eq 2

# Default device: the board's NPU if present, else the simulator with a note.
if [ ! -e /dev/dri/card1 ] && [ ! -e /dev/accel/accel0 ]; then
    "$ORK" selftest --quick > "$TMP/out2" 2> "$TMP/err2"
    check "auto falls back to sim" test $? -eq 0
    check "fallback note" grep -q 'note: .*running on the simulator' "$TMP/err2"
    "$ORK" selftest --device rknpu --quick > /dev/null 2> "$TMP/err3"
    check "explicit rknpu without a board fails" test $? -eq 1
fi

# --calibrate on the simulator: measured lines, "not measured" lines, the file.
"$ORK" selftest --calibrate --device sim -o "$TMP/cal.json" > "$TMP/cal" 2> "$TMP/calerr"
check "calibrate on sim exits 0" test $? -eq 0
check "calibrate: six NPU constants measured" test "$(grep -c '^  measured  *npu_' "$TMP/cal")" -eq 6
check "calibrate: launch gives back the default" grep -q '^  measured  *npu_launch_ns  *55000 .*(was 55000)' "$TMP/cal"
check "calibrate: CPU constants not measured on sim" grep -q '^  not measured  cpu_bw_all .*no A76' "$TMP/cal"
check "calibrate: file format" grep -q '"format":.*"ork-twin-calibration"' "$TMP/cal.json"
check "calibrate: 3-core bandwidth in the file" grep -q '"npu_bw_all":[[:space:]]*28500000000,' "$TMP/cal.json"
check "calibrate: source names the device" grep -q '"source":.*--device sim' "$TMP/cal.json"
"$ORK" selftest -o "$TMP/x.json" > /dev/null 2> "$TMP/err5"
check "-o without --calibrate is a usage error" test $? -eq 2

"$ORK" selftest --device bogus > /dev/null 2> "$TMP/err4"
check "bad device is a usage error" test $? -eq 2
check "bad device message" grep -q "invalid value 'bogus' for --device" "$TMP/err4"
"$ORK" selftest --frobnicate > /dev/null 2>&1
check "unknown option is a usage error" test $? -eq 2
check "--help" bash -c "'$ORK' selftest --help | grep -q 'usage: ork selftest'"
exit $fail
