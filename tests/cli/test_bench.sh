#!/usr/bin/env bash
# test_bench.sh -- black-box checks of `ork bench`: usage errors (exit 2), the markdown table on
# stories260K (header + one pp and one tg row, -p/-n/-t lists giving every combination), JSON
# that python3 parses with the documented fields, CSV rows, --membw (bandwidth table, and
# the roofline columns when a model is given) and --peak (compute peaks, and the pp share of them).
# usage: bash test_bench.sh ORK_BINARY FIXTURES_DIR   (exit 77 = skipped: no fixtures)
set -u
ORK=$1
FIX=$2
MODEL="$FIX/models/stories260K.gguf"
fail=0

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

out=$("$ORK" bench --help); rc=$?
check "--help exits 0" test $rc -eq 0
check "--help prints usage" grep -q "usage: ork bench" <<<"$out"
for args in "" "-m" "-m x.gguf -p" "-m x.gguf -p abc" "-m x.gguf -p 8,,4" "-m x.gguf -t 0" \
            "-m x.gguf -r 0" "-m x.gguf -o xml" "-m x.gguf --bogus" "-m x.gguf -n -1" \
            "--membw --membw-mb 0" "-m x.gguf --spin-us -1" "-m x.gguf --spin-us 100001"; do
    # shellcheck disable=SC2086
    "$ORK" bench $args >/dev/null 2>&1; rc=$?
    check "bad args '$args': exit 2" test $rc -eq 2
done
"$ORK" bench -m "$FIX/does-not-exist.gguf" -p 8 -n 4 -r 1 >/dev/null 2>&1; rc=$?
check "missing model: exit 1" test $rc -eq 1

# Bandwidth alone (small arrays keep it quick).
out=$("$ORK" bench --membw --membw-mb 16 -t 1 2>/dev/null); rc=$?
check "--membw: exit 0" test $rc -eq 0
check "--membw: table with triad and read" grep -Eq "^\| best of [0-9]+ \| 1 \| 16 \|( [0-9.]+ \|){5}$" <<<"$out"

if [ ! -f "$MODEL" ]; then
    echo "SKIP: $MODEL not found (needs ../shared/fixtures)"
    [ $fail -eq 0 ] && exit 77 || exit 1
fi

out=$("$ORK" bench -m "$MODEL" -p 8 -n 4 -r 2 -t 1 2>"${TMPDIR:-/tmp}/ork_bench_err.$$"); rc=$?
err=$(cat "${TMPDIR:-/tmp}/ork_bench_err.$$"); rm -f "${TMPDIR:-/tmp}/ork_bench_err.$$"
check "md: exit 0" test $rc -eq 0
check "md: header" grep -q "^| model | size | params | backend | kernels | threads | test | t/s |$" <<<"$out"
check "md: two rows" test "$(grep -Ec '^\| llama .* \| CPU \| [a-z0-9]+ \| 1 \| (pp8|tg4) \| [0-9.]+ ± [0-9.]+ \|$' <<<"$out")" -eq 2
check "md: pp8 row" grep -Eq "\| pp8 \|" <<<"$out"
check "md: tg4 row" grep -Eq "\| tg4 \|" <<<"$out"
check "stderr names the kernel path" grep -Eq "kernels path: [a-z0-9]+" <<<"$err"

# Lists: comma lists and repeated flags; every combination runs (2 p x 1 n x 2 t = 6 rows).
out=$("$ORK" bench -m "$MODEL" -p 4,8 -n 2 -t 1 -t 2 -r 1 2>/dev/null); rc=$?
check "lists: exit 0" test $rc -eq 0
check "lists: 6 rows" test "$(grep -Ec '\| (pp4|pp8|tg2) \|' <<<"$out")" -eq 6
check "lists: threads 2 present" grep -Eq "\| 2 \| tg2 \|" <<<"$out"

if command -v python3 >/dev/null; then
    out=$("$ORK" bench -m "$MODEL" -p 8 -n 4 -r 2 -t 1 -o json 2>/dev/null); rc=$?
    check "json: exit 0" test $rc -eq 0
    check "json: parses, two results with the fields" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
r = d["results"]
assert len(r) == 2, r
assert {x["test"] for x in r} == {"pp8", "tg4"}
for x in r:
    assert x["threads"] == 1 and x["repetitions"] == 2 and len(x["samples_ts"]) == 2
    assert x["avg_ts"] > 0 and x["stddev_ts"] >= 0 and x["n_params"] > 0 and x["size_bytes"] > 0
    assert x["backend"] == "CPU" and x["kernels"]
assert d["membw"] == []
' "$out"
    out=$("$ORK" bench -m "$MODEL" -p 0 -n 4 -r 1 -t 1 --membw --membw-mb 16 -o json 2>/dev/null)
    check "json + membw: roofline fields" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert len(d["results"]) == 1 and d["results"][0]["test"] == "tg4"
assert d["results"][0]["roofline_ts"] > 0 and d["results"][0]["roofline_pct"] > 0
assert len(d["membw"]) == 1 and d["membw"][0]["read_gbps"] > 0 and d["membw"][0]["triad_gbps"] > 0
' "$out"
fi

out=$("$ORK" bench -m "$MODEL" -p 8 -n 0 -r 1 -t 1 -o csv 2>/dev/null); rc=$?
check "csv: exit 0" test $rc -eq 0
check "csv: header + one row" test "$(wc -l <<<"$out")" -eq 2
check "csv: header" grep -q "^model,model_path,size_bytes,n_params,backend,kernels,threads,test," <<<"$out"

out=$("$ORK" bench -m "$MODEL" -p 0 -n 4 -r 1 -t 1 --membw --membw-mb 16 2>/dev/null); rc=$?
check "md + membw: exit 0" test $rc -eq 0
check "md + membw: roofline table" grep -Eq "^\| llama .* \| 1 \| tg4 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+% \|$" <<<"$out"
out=$("$ORK" bench -m "$MODEL" -p 8 -n 4 -r 1 -t 2 --spin-us 0 2>/dev/null); rc=$?
check "--spin-us 0: exit 0, two rows" test $rc -eq 0 -a "$(grep -c '^| llama' <<<"$out")" -eq 2
out=$("$ORK" bench --peak -t 1 2>/dev/null); rc=$?
check "--peak: exit 0" test $rc -eq 0
check "--peak: compute peak table" grep -Eq "^\| measured \| 1 \| [^|]+ \| [0-9.]+ \| [^|]+ \| [0-9.]+ \|$" <<<"$out"
out=$("$ORK" bench -m "$MODEL" -p 8 -n 0 -r 1 -t 1 --peak -o json 2>/dev/null); rc=$?
check "json + peak: exit 0" test $rc -eq 0
check "json + peak: pp share of the peaks, ops per token within 2 x params" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert len(d["peak"]) == 1 and d["peak"][0]["threads"] == 1, d["peak"]
k = d["peak"][0]
assert k["f32_insn"] and k["int8_insn"] and k["f32_gflops"] >= 0 and k["int8_gops"] >= 0
r = d["results"][0]
assert r["test"] == "pp8" and r["gops"] > 0
per_token = r["gops"] * 1e9 / r["avg_ts"]
assert 0 < per_token <= 2 * r["n_params"], per_token
if k["f32_gflops"] > 0:
    assert abs(r["f32_peak_pct"] - 100 * r["gops"] / k["f32_gflops"]) < 1e-3 * r["f32_peak_pct"] + 1e-9
' "$out"
QMODEL="$FIX/models/stories260K-Q8_0.gguf"
if [ -f "$QMODEL" ]; then
    out=$("$ORK" bench -m "$QMODEL" -p 8 -n 4 -r 1 -t 1 --no-act-quant 2>/dev/null); rc=$?
    check "--no-act-quant on Q8_0: exit 0" test $rc -eq 0
    check "--no-act-quant on Q8_0: two rows" test "$(grep -c '| Q8_0\|Q8_0 |' <<<"$out")" -ge 2
fi
[ $fail -eq 0 ] || echo "$out"
exit $fail
