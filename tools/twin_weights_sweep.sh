#!/usr/bin/env bash
# twin_weights_sweep.sh -- decode (tg N) of a model on the board twin (modelled RK3588 figures,
# docs/twin.md) for NPU weight settings, one run at a time: prints one line per run with the
# setting, the decompressor rate, the bits per weight of the load report, the modelled tok/s,
# the ratio to the batch's int8 run (the first setting must be int8) and whether the DCOMP
# fallback fired (docs/dcomp.md "Fallback"). Every command is echoed with a "$ " prefix.
# TRACE=1 in the environment adds --trace OUTDIR/NAME.trace.json to every run; BASE_TPS=X
# takes X as the int8 tok/s of the ratios (else the first run's).
# usage: tools/twin_weights_sweep.sh ORK MODEL.gguf OUTDIR N SETTING...
#   SETTING = WEIGHTS[@GBPS][+FLAGS], e.g. int8 dcomp:15@8 dcomp:31@16 w4a8 w4a8+rotate
#   FLAGS: rotate (--npu-weights-rotate), force (--npu-weights-force), int8=SPEC
#   (--npu-weights-int8 SPEC, e.g. w4a8+int8=output,down:0..3), joined by '+'
set -u
ORK=$1 MODEL=$2 OUT=$3 N=$4
shift 4
mkdir -p "$OUT"
base=${BASE_TPS:-}     # BASE_TPS: the batch's int8 tok/s when the first setting is not int8
for s in "$@"; do
    w=${s%%[@+]*}
    rest=${s#"$w"}
    gbps=""
    flags=()
    case $rest in @*) gbps=${rest#@}; gbps=${gbps%%+*} ;; esac
    case $rest in *+*) IFS=+ read -r -a fl <<<"${rest#*+}"
                       for f in "${fl[@]}"; do
                           case $f in *=*) flags+=("--npu-weights-${f%%=*}" "${f#*=}") ;;
                                      *) flags+=("--npu-weights-$f") ;; esac
                       done ;; esac
    args=(bench -m "$MODEL" --device sim --sim-timing only --no-pack -t 1 -r 1 -p 0 -n "$N"
          -o json --npu-weights "$w" "${flags[@]}")
    [ -n "$gbps" ] && args+=(--sim-dcomp-gbps "$gbps")
    name=$(basename "$MODEL" .gguf)_$(tr ':@+,=.' '__-_-_' <<<"$s")
    # TRACE=1: the run's modelled timeline too (tools/twin_trace_summary.py reads it)
    [ "${TRACE:-0}" = 1 ] && args+=(--trace "$OUT/$name.trace.json")
    echo "\$ $ORK ${args[*]} > $OUT/$name.json 2> $OUT/$name.err"
    "$ORK" "${args[@]}" >"$OUT/$name.json" 2>"$OUT/$name.err" || { echo "FAILED: $s"; continue; }
    tps=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.4f" % r["avg_ts"])' "$OUT/$name.json")
    bpw=$(grep -o '[0-9.]* bits per weight' "$OUT/$name.err" | head -1 | cut -d' ' -f1)
    fb=$(grep -c 'DCOMP cannot win' "$OUT/$name.err")
    [ -z "$base" ] && base=$tps
    ratio=$(python3 -c "print('%.3f' % ($tps / $base))")
    echo "$s gbps=${gbps:-table} bpw=${bpw:-8} tok/s=$tps ratio=${ratio}x fallback=$fb"
done
