#!/bin/bash
# test_top.sh -- `ork top`: per-core NPU load parsed from a load file in the driver's format
# (spec §12.1, including the "%2.d" empty-digits quirk for 0), per-CPU columns from /proc/stat,
# --csv rows, --count, and the clear error (suggesting --load-file) when no load file exists; the
# simulator's per-process load file found by default, marked stale when unchanged or orphaned,
# written while an ork bench runs on the sim and removed when a run ends.
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
check '[ "$(echo "$row" | tr "," "\n" | wc -l)" -eq $((5 + ncpu)) ]'
check '[[ "$(echo "$out" | head -1)" == *,npu_stale ]]'
check '[[ "$row" == *,0 ]]'
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
    mkdir -p "$dir/xdg"
    err=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 2>&1)
    check '[ $? -eq 1 ]'
    check '[[ "$err" == *"--load-file"* ]]'
    check '[[ "$err" == *"$dir/xdg/ork/sim-load.PID"* ]]'
    # the simulator's load file: found by default, stale once unchanged or its writer gone
    mkdir -p "$dir/xdg/ork"
    printf 'NPU load:  Core0: 12%%, Core1:   %%, Core2:   %%,\n' > "$dir/xdg/ork/sim-load.$$"
    out=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 --interval 10)
    check '[ $? -eq 0 ]'
    check '[[ "$out" == *"from $dir/xdg/ork/sim-load.$$"* ]]'
    check '[[ "$out" == *"core0  12%"* && "$out" != *stale* ]]'
    touch -d "-1 minute" "$dir/xdg/ork/sim-load.$$"
    out=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 --interval 10)
    check '[[ "$out" == *"(stale: unchanged for "* ]]'
    out=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 --interval 10 --csv)
    check '[[ "$(echo "$out" | sed -n 2p)" == *,1 ]]'
    rm -f "$dir/xdg/ork/sim-load.$$"
    bash -c 'exit 0' & dead=$!; wait $dead
    printf 'NPU load:  Core0: 12%%, Core1:   %%, Core2:   %%,\n' > "$dir/xdg/ork/sim-load.$dead"
    out=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 --interval 10)
    check '[[ "$out" == *"(stale: its writer exited)"* ]]'
    rm -f "$dir/xdg/ork/sim-load.$dead"
    # a run on the simulator writes it while it runs and removes it at the end
    MODEL="${2:-}/models/stories260K.gguf"
    if [ -f "$MODEL" ]; then
        cp "$MODEL" "$dir/m.gguf"
        XDG_RUNTIME_DIR="$dir/xdg" "$ORK" bench -m "$dir/m.gguf" -p 16 -n 64 -r 40 \
            --device sim --sim-timing paced >/dev/null 2>&1 &
        bp=$!
        for _ in $(seq 1 300); do
            [ -e "$dir/xdg/ork/sim-load.$bp" ] && break
            sleep 0.02
        done
        check '[ -e "$dir/xdg/ork/sim-load.$bp" ]'
        out=$(XDG_RUNTIME_DIR="$dir/xdg" "$ORK" top --count 1 --interval 10)
        check '[[ "$out" == *"from $dir/xdg/ork/sim-load.$bp"* ]]'
        kill $bp 2>/dev/null; wait $bp 2>/dev/null
        XDG_RUNTIME_DIR="$dir/xdg" "$ORK" run -m "$dir/m.gguf" -p x -n 2 --device sim >/dev/null 2>&1 &
        rp=$!; wait $rp
        check '[ $? -eq 0 ] && [ ! -e "$dir/xdg/ork/sim-load.$rp" ]'
    fi
fi
"$ORK" top --interval 0 >/dev/null 2>&1
check '[ $? -eq 2 ]'
"$ORK" top --bogus >/dev/null 2>&1
check '[ $? -eq 2 ]'
"$ORK" top --help | grep -q -- "--load-file"
check '[ $? -eq 0 ]'
exit $fail
