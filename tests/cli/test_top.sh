#!/bin/bash
# test_top.sh -- `ork top`: per-core NPU load parsed from a load file in the driver's format
# (spec §12.1, including the "%2.d" empty-digits quirk for 0), per-CPU columns from /proc/stat,
# --csv rows, --count, and the clear error (suggesting --load-file) when no load file exists.
ORK="$1"
set -u
[ -r /proc/stat ] || { echo "SKIP: no /proc/stat"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAIL: $1"; fail=1; fi; }

printf 'NPU load:  Core0: 37%%, Core1:   %%, Core2: 100%%,\n' > "$dir/load"
out=$("$ORK" top --load-file "$dir/load" --interval 20 --count 2 --csv)
check '[ $? -eq 0 ]'
ncpu=$(grep -c "^cpu[0-9]" /proc/stat)
check '[ "$(echo "$out" | wc -l)" -eq 3 ]'
check '[[ "$(echo "$out" | head -1)" == time_ms,npu0,npu1,npu2,cpu0* ]]'
row=$(echo "$out" | sed -n 2p)
check '[[ "$row" == 20,37,0,100,* ]]'
check '[ "$(echo "$row" | tr "," "\n" | wc -l)" -eq $((4 + ncpu)) ]'
# a changed file is re-read at every sample
printf 'NPU load:  Core0:  5%%, Core1: 64%%, Core2:   %%,\n' > "$dir/load"
out=$("$ORK" top --load-file "$dir/load" --interval 10 --count 1)
check '[[ "$out" == *"core0   5%"*"core1  64%"*"core2   0%"*"| CPU 0:"* ]]'
# errors: a missing file names --load-file; bad values are usage errors
err=$("$ORK" top --load-file "$dir/none" --count 1 2>&1)
check '[ $? -eq 1 ]'
check '[[ "$err" == *"$dir/none"* ]]'
printf 'garbage\n' > "$dir/bad"
"$ORK" top --load-file "$dir/bad" --count 1 >/dev/null 2>&1
check '[ $? -eq 1 ]'
if [ ! -r /sys/kernel/debug/rknpu/load ] && [ ! -r /proc/rknpu/load ]; then
    err=$("$ORK" top --count 1 2>&1)
    check '[ $? -eq 1 ]'
    check '[[ "$err" == *"--load-file"* ]]'
fi
"$ORK" top --interval 0 >/dev/null 2>&1
check '[ $? -eq 2 ]'
"$ORK" top --bogus >/dev/null 2>&1
check '[ $? -eq 2 ]'
"$ORK" top --help | grep -q -- "--load-file"
check '[ $? -eq 0 ]'
exit $fail
