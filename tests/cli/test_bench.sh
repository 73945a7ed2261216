#!/usr/bin/env bash
# test_bench.sh -- black-box checks of `ork bench`: usage errors (exit 2), the markdown table on
# stories260K (header + one pp and one tg row, -p/-n/-t lists giving every combination), JSON
# that python3 parses with the documented fields, CSV rows, --membw (bandwidth table, and
# the roofline columns when a model is given: read GB/s before and after each tg test, the
# roofline from their mean), --peak (compute peaks, and the pp share of them), and on the
# simulator --parallel (sequences decoded together) and --verify (speculative verify steps).
# usage: bash test_bench.sh ORK_BINARY FIXTURES_DIR   (exit 77 = skipped: no fixtures)
set -u
ORK=$1
FIX=$2
MODEL="$FIX/models/stories260K.gguf"
fail=0
tmpd=$(mktemp -d); trap 'rm -rf "$tmpd"' EXIT

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

out=$("$ORK" bench --help); rc=$?
check "--help exits 0" test $rc -eq 0
check "--help prints usage" grep -q "usage: ork bench" <<<"$out"
for args in "" "-m" "-m x.gguf -p" "-m x.gguf -p abc" "-m x.gguf -p 8,,4" "-m x.gguf -t 0" \
            "-m x.gguf -r 0" "-m x.gguf -o xml" "-m x.gguf --bogus" "-m x.gguf -n -1" \
            "--membw --membw-mb 0" "-m x.gguf --spin-us -1" "-m x.gguf --spin-us 100001" \
            "-m x.gguf --kv-type f8" "-m x.gguf --kv-type"; do
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
    assert x["backend"] == "CPU" and x["kernels"] and x["load"] in ("read", "mmap") and isinstance(x["interleaved"], int) and x["interleaved"] >= 0
    assert x["type_k"] == "f32" and x["type_v"] == "f32"
assert d["membw"] == []
' "$out"
    out=$("$ORK" bench -m "$MODEL" -p 2 -n 4 -r 1 -t 1 --membw --membw-mb 16 -o json 2>/dev/null)
    check "json + membw: roofline fields from the reads before and after the tg test" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert len(d["results"]) == 2, d["results"]
pp, tg = sorted(d["results"], key=lambda x: x["test"])
assert pp["test"] == "pp2" and "roofline_ts" not in pp and "read_gbps_before" not in pp
assert tg["test"] == "tg4" and tg["read_insn"] and tg["read_runs"] > 0
assert tg["read_array_bytes"] == 16 << 20, tg["read_array_bytes"]
assert tg["read_gbps_before"] > 0 and tg["read_gbps_after"] > 0
mean = (tg["read_gbps_before"] + tg["read_gbps_after"]) / 2
assert abs(tg["read_gbps"] - mean) <= 1e-4 * mean, (tg["read_gbps"], mean)
roof = mean * 1e9 / tg["bytes_per_token"]
assert abs(tg["roofline_ts"] - roof) <= 1e-4 * roof, (tg["roofline_ts"], roof)
pct = 100 * tg["avg_ts"] / tg["roofline_ts"]
assert abs(tg["roofline_pct"] - pct) <= 1e-3 * pct, (tg["roofline_pct"], pct)
lo, hi = sorted((tg["read_gbps_before"], tg["read_gbps_after"]))
if abs(hi / lo - 1.25) > 1e-4:     # printed to 6 digits: skip the boundary itself
    assert tg["read_drift"] == (hi / lo > 1.25), (tg["read_drift"], lo, hi)
m = d["membw"]
assert len(m) == 1 and m[0]["read_gbps"] > 0 and m[0]["triad_gbps"] > 0 and m[0]["read_insn"]
' "$out"
    # Without --membw-mb the tg read array is the model bytes per token (at least 1 MiB).
    out=$("$ORK" bench -m "$MODEL" -p 0 -n 2 -r 1 -t 1 --membw -o json 2>/dev/null)
    check "json + membw: tg read array sized to the model" python3 -c '
import json, sys
tg = json.loads(sys.argv[1])["results"][0]
assert tg["read_array_bytes"] == max(tg["bytes_per_token"], 1 << 20), tg
' "$out"
fi

out=$("$ORK" bench -m "$MODEL" -p 8 -n 0 -r 1 -t 1 -o csv 2>/dev/null); rc=$?
check "csv: exit 0" test $rc -eq 0
check "csv: header + one row" test "$(wc -l <<<"$out")" -eq 2
check "csv: header" grep -q "^model,model_path,size_bytes,n_params,backend,kernels,type_k,type_v,threads,test," <<<"$out"
out=$("$ORK" bench -m "$MODEL" -p 0 -n 4 -r 1 -t 1 --membw --membw-mb 16 -o csv 2>/dev/null); rc=$?
check "csv + membw: exit 0" test $rc -eq 0
check "csv + membw: roofline columns" grep -q "bytes_per_token,read_array_bytes,read_gbps_before,read_gbps_after,roofline_ts,roofline_pct,modelled,host_avg_ts,twin_ms_per_token," <<<"$out"
check "csv + membw: tg row with the reads" grep -Eq ",tg4,0,4,1,[^,]+,[^,]+,[0-9]+,16777216,[0-9.e+]+,[0-9.e+]+,[0-9.e+]+,[0-9.e+]+,0,[0-9.e+]+,0," <<<"$out"
check "csv + membw: bandwidth rows" grep -Eq '^1,16777216,[0-9]+,"[^"]+"(,[0-9.e+]+){5}$' <<<"$out"

out=$("$ORK" bench -m "$MODEL" -p 0 -n 4 -r 1 -t 1 --membw --membw-mb 16 2>/dev/null); rc=$?
check "md + membw: exit 0" test $rc -eq 0
check "md + membw: roofline table" grep -Eq "^\| llama .* \| 1 \| tg4 \| [0-9.]+ \| 16 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+%( \(drift\))? \|$" <<<"$out"
check "md + membw: roofline header names before and after" grep -q "| read GB/s before | read GB/s after | roofline t/s |" <<<"$out"
out=$("$ORK" bench -m "$MODEL" -p 8 -n 4 -r 1 -t 2 --spin-us 0 2>/dev/null); rc=$?
check "--spin-us 0: exit 0, two rows" test $rc -eq 0 -a "$(grep -c '^| llama' <<<"$out")" -eq 2
err=$("$ORK" bench -m "$MODEL" -p 8 -n 4 -r 1 -t 1 --kv-type f16 2>&1 >/dev/null); rc=$?
said=0; grep -q "KV cache f16" <<<"$err" && said=1
check "--kv-type f16: exit 0, says so" test $rc -eq 0 -a $said -eq 1
out=$("$ORK" bench -m "$MODEL" -p 0 -n 2 -r 1 -t 1 --kv-type f16 -o csv 2>/dev/null); rc=$?
said=0; grep -q ",f16,f16,1,tg2," <<<"$out" && said=1
check "--kv-type f16: csv row says f16" test $rc -eq 0 -a $said -eq 1
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
# M > 1 decode tests on the simulator (the board twin): --parallel and --verify
out=$("$ORK" bench -m "$MODEL" --parallel 1,2,4 -n 4 -r 1 -t 1 --device sim --no-pack -o json \
      2>/dev/null); rc=$?
check "--parallel: exit 0" test $rc -eq 0
check "--parallel json: a row per N, aggregate = N x per-seq, more than 1 seq's, modelled" \
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert [r["n_parallel"] for r in d] == [1, 2, 4], d
for r in d:
    assert r["twin"] and r["n_gen"] == 4 and r["agg_ts"] > 0
    assert abs(r["agg_ts"] - r["n_parallel"] * r["seq_ts"]) < 1e-3 * r["agg_ts"]
    assert abs(r["scaling"] - r["agg_ts"] / d[0]["agg_ts"]) < 1e-3 * r["scaling"]
assert d[2]["agg_ts"] > d[1]["agg_ts"] > d[0]["agg_ts"]
' "$out"
out=$("$ORK" bench -m "$MODEL" --parallel 1,2 -n 2 -r 1 -t 1 --device sim --no-pack -o csv \
      2>/dev/null); rc=$?
check "--parallel csv: header and two rows" test $rc -eq 0 -a "$(grep -c '^"llama' <<<"$out")" -eq 2
out=$("$ORK" bench -m "$MODEL" --parallel 1,2 -n 2 -r 1 -t 1 --device sim --no-pack 2>/dev/null)
check "--parallel md: says modelled" grep -q "Modelled on the board twin" <<<"$out"
out=$("$ORK" bench -m "$MODEL" --verify 1,3,7 -p 16 -r 1 -t 1 --device sim --no-pack \
      --draft-model "$FIX/models/stories260K-Q8_0.gguf" --tau 1.5,2.7,4 \
      --trace "$tmpd/verify.json" -o json 2>/dev/null); rc=$?
check "--verify: exit 0" test $rc -eq 0
check "--verify json: per k, tau / (verify + k draft), nearly-free M" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["twin"] and d["pos"] == 16 and d["draft_ms"] > 0 and "CPU, twin" in d["draft"]
v = {r["k"]: r for r in d["verify"]}
assert sorted(v) == [1, 3, 7]
for r in d["verify"]:
    assert r["m"] == r["k"] + 1 and abs(r["ratio"] - r["ms"] / d["decode_ms"]) < 1e-3
assert abs(d["plain_ts"] - 1000 / d["decode_ms"]) < 1e-2 * d["plain_ts"]
for s in d["speculative"]:
    assert s["k"] + 1 >= s["tau"]
    best = max(s["tau"] * 1000 / (r["ms"] + r["k"] * d["draft_ms"])
               for r in d["verify"] if r["k"] + 1 >= s["tau"])
    assert abs(s["ts"] - best) < 1e-3 * best, (s, best)
free = [r["m"] for r in d["verify"] if r["ratio"] <= 1.1]
assert d["nearly_free_m"] >= 1 and (not free or d["nearly_free_m"] <= max(free))
' "$out"
check "--verify --trace: a timeline" test -s "$tmpd/verify.json"
out=$("$ORK" bench -m "$MODEL" --verify 1 -p 16 -r 1 -t 1 --device sim --no-pack \
      --draft-model "$FIX/models/stories260K-Q8_0.gguf" --draft-device sim -o json 2>/dev/null)
check "--draft-device sim: the draft's step on the sim" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["draft_ms"] > 0 and "sim, twin" in d["draft"], d["draft"]
' "$out"
"$ORK" bench -m "$MODEL" --verify 1 --draft-model "$MODEL" --draft-device gpu -r 1 >/dev/null \
    2>"$tmpd/dd.err"; rc=$?
check "--draft-device gpu: usage error naming it" test $rc -eq 2 -a -n "$(grep gpu "$tmpd/dd.err")"
"$ORK" bench -m "$MODEL" --parallel 1 --verify 1 -r 1 >/dev/null 2>&1; rc=$?
check "--parallel with --verify: usage error" test $rc -eq 2
"$ORK" bench -m "$MODEL" --verify 64 -r 1 >/dev/null 2>&1; rc=$?
check "--verify 64: usage error" test $rc -eq 2
"$ORK" bench -m "$MODEL" --npu-rows 3 -r 1 >/dev/null 2>&1; rc=$?
check "--npu-rows 3 (not a power of two): usage error" test $rc -eq 2
[ $fail -eq 0 ] || echo "$out"
exit $fail
