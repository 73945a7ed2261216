#!/usr/bin/env bash
# test_twin.sh -- the board twin in the engine and in `ork bench` (docs/twin.md "In the engine"):
# modelled figures identical across two runs and across -t 1 / -t 2 (sim and CPU --twin); a
# calibration that doubles npu_bw_core lowers the modelled NPU time; a bad calibration file is
# refused naming the file; the per-matmul baselines are slower than the fused executor on a
# one-layer synthetic model; every CPU phase the forward runs appears with nonzero time; the
# trace is valid JSON with NPU and A76 tracks; spinning per-core workers are charged their
# hand-offs and polls. No host timing is asserted.
# usage: bash test_twin.sh ORK_BINARY FIXTURES_DIR   (exit 77 = skipped: no fixtures)
set -u
ORK=$1
FIX=$2
MODEL="$FIX/models/stories260K.gguf"
QWEN2="$FIX/models/stories260K-qwen2-bias.gguf"
QWEN3="$FIX/models/stories260K-qwen3.gguf"
[ -f "$MODEL" ] && [ -f "$QWEN2" ] && [ -f "$QWEN3" ] || { echo "skip: fixtures absent"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# The modelled part of a bench JSON: per result its test, t/s samples and twin object.
modelled() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    print(r["test"], r["modelled"], r["samples_ts"], json.dumps(r["twin"], sort_keys=True))
' "$1"
}

bench() {   # bench OUT.json ARGS...: a small bench, JSON on OUT
    local out=$1; shift
    "$ORK" bench -p 16 -n 8 -r 2 -o json --no-pack "$@" >"$out" 2>"$out.err"
}

# determinism: sim, two runs and two thread counts
check "sim bench t=1" bench "$tmp/a.json" -m "$MODEL" --device sim -t 1
check "sim bench t=1 again" bench "$tmp/b.json" -m "$MODEL" --device sim -t 1
check "sim bench t=2" bench "$tmp/c.json" -m "$MODEL" --device sim -t 2
modelled "$tmp/a.json" >"$tmp/a.txt" && modelled "$tmp/b.json" >"$tmp/b.txt" &&
    modelled "$tmp/c.json" >"$tmp/c.txt"
check "sim: results are modelled" grep -q "^pp16 True" "$tmp/a.txt"
check "sim: two runs give identical modelled numbers" cmp -s "$tmp/a.txt" "$tmp/b.txt"
check "sim: -t 1 and -t 2 give identical modelled numbers" cmp -s "$tmp/a.txt" "$tmp/c.txt"

# CPU-only on the twin
check "cpu --twin t=1" bench "$tmp/d.json" -m "$MODEL" --device cpu --twin -t 1
check "cpu --twin t=2" bench "$tmp/e.json" -m "$MODEL" --device cpu --twin -t 2
modelled "$tmp/d.json" >"$tmp/d.txt" && modelled "$tmp/e.json" >"$tmp/e.txt"
check "cpu --twin: -t 1 and -t 2 identical" cmp -s "$tmp/d.txt" "$tmp/e.txt"
check "cpu --twin: matmuls charged" grep -q '"cpu_matmul"' "$tmp/d.txt"
check "cpu --twin: LM head charged" grep -q '"lm_head"' "$tmp/d.txt"
check "cpu --twin: no NPU time" python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert "npu_matmul" not in r["twin"]["phase_ms_per_token"], r
    assert max(r["twin"]["npu_busy_pct"]) == 0, r
' "$tmp/d.json"
"$ORK" bench -m "$MODEL" -p 16 -n 0 -r 1 -o json >"$tmp/plain.json" 2>/dev/null
check "cpu without --twin: host figures, no twin" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert "twin" not in r and "modelled" not in r, r
' "$tmp/plain.json"

# phases of the forward: each one the model's forward runs appears with nonzero time
phases() {  # phases JSON TEST NAME...: every named phase > 0 in that test
    python3 -c '
import json, sys
want = sys.argv[3:]
for r in json.load(open(sys.argv[1]))["results"]:
    if r["test"] != sys.argv[2]:
        continue
    ph = r["twin"]["phase_ms_per_token"]
    missing = [p for p in want if ph.get(p, 0) <= 0]
    assert not missing, missing
    assert r["twin"]["ms_per_token"] > 0
    sys.exit(0)
sys.exit(1)
' "$@"
}
npu_phases="embed rmsnorm quant dequant rope kv_append attention silu_mul residual gather ioctl
            cache_sync npu_matmul"
check "qwen2 sim bench" bench "$tmp/q2.json" -m "$QWEN2" --device sim -t 1
check "qwen3 sim bench" bench "$tmp/q3.json" -m "$QWEN3" --device sim -t 1
# shellcheck disable=SC2086
check "sim tg phases (qwen2: with bias and sampling)" phases "$tmp/q2.json" tg8 $npu_phases bias sample
# shellcheck disable=SC2086
check "sim pp phases (qwen3)" phases "$tmp/q3.json" pp16 $npu_phases
# the split O's first half runs on libork's worker: its wake-up is charged
check "qwen2 sim bench, fused-split-o" bench "$tmp/q2s.json" -m "$QWEN2" --device sim -t 1 \
    --npu-executor fused-split-o
check "sim tg phases (fused-split-o: the worker's wake)" phases "$tmp/q2s.json" tg8 wake npu_matmul
check "cpu --twin qwen3" bench "$tmp/q3c.json" -m "$QWEN3" --device cpu --twin -t 1
check "cpu --twin tg phases" phases "$tmp/q3c.json" tg8 embed rmsnorm rope kv_append attention \
    silu_mul residual cpu_matmul lm_head sample

# calibration: npu_bw_core doubled -> less modelled NPU time; a bad file names itself
npu_ms() {
    python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["test"] == "tg8":
        print(r["twin"]["phase_ms_per_token"]["npu_matmul"])
' "$1"
}
printf '{"format": "ork-twin-calibration", "version": 1, "source": "test", "constants": {"npu_bw_core": 2.2e10}}\n' \
    >"$tmp/bw2.json"
check "sim bench with --sim-calibration" bench "$tmp/f.json" -m "$MODEL" --device sim -t 1 \
    --sim-calibration "$tmp/bw2.json"
base=$(npu_ms "$tmp/a.json"); fast=$(npu_ms "$tmp/f.json")
check "doubled npu_bw_core: NPU time $base -> $fast ms/token (lower)" \
    python3 -c "import sys; sys.exit(0 if float('$fast') < float('$base') else 1)"
printf '{"format": "ork-twin-calibration", "version": 1, "constants": {"npu_bw_core": -1}}\n' \
    >"$tmp/bad.json"
"$ORK" bench -m "$MODEL" -p 8 -n 0 -r 1 --device sim --no-pack --sim-calibration "$tmp/bad.json" \
    >/dev/null 2>"$tmp/bad.err"; rc=$?
check "bad calibration: exit 1" test $rc -eq 1
check "bad calibration: names the file and the key" grep -q "bad.json.*npu_bw_core" "$tmp/bad.err"
"$ORK" run -m "$MODEL" -p hi -n 1 --device sim --no-pack --sim-calibration "$tmp/none.json" \
    >/dev/null 2>"$tmp/none.err"; rc=$?
check "missing calibration (run): exit 1 naming the file" \
    bash -c "test $rc -eq 1 && grep -q none.json '$tmp/none.err'"

# baselines: per-matmul and per-matmul-mc slower than fused on a one-layer synthetic model
"$ORK" gguf synth --arch qwen3 --preset 1.7b --layers 1 -q -o "$tmp/l1.gguf" ||
    { echo "FAIL ork gguf synth"; exit 1; }
tg_ms() {   # tg_ms EXECUTOR [ARGS]: modelled decode ms/token
    local ex=$1; shift
    "$ORK" bench -m "$tmp/l1.gguf" -p 0 -n 4 -r 1 -t 1 -o json --device sim --sim-timing only \
        --no-pack --npu-executor "$ex" "$@" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["twin"]["ms_per_token"])'
}
fused=$(tg_ms fused); pm=$(tg_ms per-matmul); mc=$(tg_ms per-matmul-mc)
floor=$(tg_ms per-matmul --twin-host-floor)
echo "     modelled decode ms/token: fused $fused, per-matmul $pm, per-matmul-mc $mc, per-matmul + host floor $floor"
check "per-matmul slower than fused" python3 -c "import sys; sys.exit(0 if $pm > $fused else 1)"
check "per-matmul-mc between fused and per-matmul" \
    python3 -c "import sys; sys.exit(0 if $fused < $mc < $pm else 1)"
check "host floor adds time" python3 -c "import sys; sys.exit(0 if $floor > $pm else 1)"

# libork's spinning per-core workers (docs/twin.md "Spinning workers"): with a spin, every
# multi-core run's hand-offs are charged as line transfers (8 per run: the post, two per
# worker, each worker's done, the submitter's last poll) and the polls as busy A76 time; the
# wake-ups they replace are gone; without one they are charged as before
spin_json() {   # spin_json US: the twin object of a 1-layer decode at --npu-spin-us US
    "$ORK" bench -m "$tmp/l1.gguf" -p 0 -n 4 -r 1 -t 1 -o json --device sim --sim-timing only \
        --no-pack --npu-spin-us "$1" 2>/dev/null |
        python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["results"][0]["twin"]))'
}
spin_json 0 >"$tmp/spin0.json"; spin_json 1000 >"$tmp/spin1.json"
check "spin: hand-offs charged as line transfers, polls as busy cores, fewer wakes" python3 -c '
import json, sys
off, on = (json.load(open(f)) for f in sys.argv[1:3])
po, pn = off["phase_ms_per_token"], on["phase_ms_per_token"]
line_ms = 60e-6                      # cpu_line_transfer_ns, the default table
runs = 5                             # QKV, O, gate_up, down, LM head: all split over 3 cores
want = runs * 8 * line_ms
assert abs(pn.get("handoff", 0) - want) < 1e-9, (pn.get("handoff"), want)
assert pn.get("spin", 0) > 0 and "spin" not in po, (pn, po)
assert sum(on["cpu_busy_pct"]) > sum(off["cpu_busy_pct"]), (on["cpu_busy_pct"], off["cpu_busy_pct"])
assert pn.get("wake", 0) < po["wake"] - runs * 2 * 0.025, (pn.get("wake"), po["wake"])
assert on["ms_per_token"] < off["ms_per_token"], (on["ms_per_token"], off["ms_per_token"])
' "$tmp/spin0.json" "$tmp/spin1.json"
"$ORK" bench -m "$MODEL" -p 0 -n 1 -r 1 --device sim --npu-spin-us 100001 >/dev/null \
    2>"$tmp/spin.err"; rc=$?
check "spin above the bound: exit 2 naming the option" \
    bash -c "test $rc -eq 2 && grep -q npu-spin-us '$tmp/spin.err'"

# the modelled timeline
"$ORK" bench -m "$MODEL" -p 0 -n 4 -r 1 --device sim --no-pack --trace "$tmp/t.json" \
    >/dev/null 2>&1
check "trace: valid JSON with NPU and A76 tracks, several steps" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
assert any(e["pid"] == 1 for e in x) and any(e["pid"] == 2 for e in x)
assert sum(1 for e in x if e["name"] == "embed") == 4, "one embed per decode step"
ts = [e["ts"] for e in x if e["name"] == "embed"]
assert ts == sorted(ts) and len(set(ts)) == 4, ts
' "$tmp/t.json"

# run --profile prints the modelled split
"$ORK" run -m "$MODEL" -p hi -n 4 --temp 0 --device sim --no-pack --profile >/dev/null \
    2>"$tmp/run.err"
check "run --profile: twin line" grep -q "^twin (modelled):" "$tmp/run.err"
check "run --profile: samplings charged" grep -q " 4 samplings" "$tmp/run.err"

exit $fail
