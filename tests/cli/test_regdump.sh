#!/bin/bash
# test_regdump.sh -- `ork regdump`: decoding of the spec's §15.1 entries, flags for a target that
# does not match its register and for an unknown target (spec §2.2), and clear errors for bad
# files. Usage: test_regdump.sh ORK_BINARY FIXTURES_DIR
set -u
ORK=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then echo "ok   $d"; else echo "FAIL $d"; fail=1; fi
}
# le64 HEX16: print the 8 little-endian bytes of a 64-bit hex value
le64() {
    local h=$1 out="" i
    for ((i = 14; i >= 0; i -= 2)); do out+="\\x${h:$i:2}"; done
    printf "$out"
}

{
    le64 0201001f00201024   # (0x0201, 0x1024, 0x001f0020), spec §15.1
    le64 0201000000b11040   # CBUF_CON0 = 0xb1
    le64 0000000000000000   # null entry
    le64 0101000000370014   # PC REGISTER_AMOUNTS = 0x37
    le64 0041000000000000   # marker
    le64 00810000000d0008   # op-enable 0x0d
    le64 0201800000004010   # CNA target with a DPU register: mismatch
    le64 0301000000051024   # unknown target
} > "$TMP/prog.bin"

out=$("$ORK" regdump "$TMP/prog.bin")
rc=$?
check "exit status 0" test $rc -eq 0
check "DATA_SIZE1 decoded" grep -q 'CNA_DATA_SIZE1 = 0x001f0020 { DATAIN_CHANNEL_REAL=31 DATAIN_CHANNEL=32 }' <<<"$out"
check "CBUF_CON0 fields" grep -q 'CNA_CBUF_CON0 = 0x000000b1 {.*WEIGHT_BANK=11 DATA_BANK=1 }' <<<"$out"
check "null entry" grep -q '(null)' <<<"$out"
check "PC amount" grep -q 'PC_REGISTER_AMOUNTS = 0x00000037' <<<"$out"
check "marker" grep -q '0041 PC_MARKER' <<<"$out"
check "op-enable fields" grep -q 'PC_OPERATION_ENABLE = 0x0000000d {.*DPU=1 CORE=1 CNA=1 }' <<<"$out"
check "end of task line" grep -q -- '-- end of task' <<<"$out"
check "mismatch flagged" grep -q 'DPU_DATA_FORMAT = 0x80000000.*!! TARGET_REG_MISMATCH' <<<"$out"
check "unknown target flagged" grep -q '0301 .*!! UNKNOWN_TARGET' <<<"$out"
check "one line per entry" test "$(grep -c '^ *[0-9]\+  [0-9a-f]\{16\}  ' <<<"$out")" -eq 8
check "summary" grep -q '^8 entries, 2 flagged$' <<<"$out"
check "stdin" bash -c "'$ORK' regdump - < '$TMP/prog.bin' | grep -q '^8 entries'"

head -c 12 "$TMP/prog.bin" > "$TMP/odd.bin"
err=$("$ORK" regdump "$TMP/odd.bin" 2>&1 >/dev/null)
check "odd size fails" test $? -eq 1
check "odd size message" grep -q 'not a multiple of 8 bytes' <<<"$err"
err=$("$ORK" regdump "$TMP/missing.bin" 2>&1 >/dev/null)
check "missing file fails" test $? -eq 1
check "missing file message" grep -q "cannot open '$TMP/missing.bin'" <<<"$err"
: > "$TMP/empty.bin"
"$ORK" regdump "$TMP/empty.bin" >/dev/null 2>&1
check "empty file fails" test $? -eq 1
"$ORK" regdump >/dev/null 2>&1
check "no file is a usage error" test $? -eq 2
check "--help" bash -c "'$ORK' regdump --help | grep -q 'usage: ork regdump'"
exit $fail
