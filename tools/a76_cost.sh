#!/usr/bin/env bash
# tools/a76_cost.sh -- the Cortex-A76 cost table of the NEON kernels, from the compiled loops.
#
# Each kernel's source file is cross-compiled to assembly with the build's compiler and flags
# (aarch64-linux-gnu-gcc -std=c11 -O2, as cmake/toolchain-aarch64.cmake; clang
# --target=aarch64-linux-gnu -O2 when ORK_A76_CC=clang), the kernel's hot loop is cut out of
# its function (the innermost loop holding the most of the kernel's work instruction -- sdot
# for the integer kernels, fmla / fmul for the f32 attention and RoPE ones: from the label a
# backward branch goes to, to that branch), and llvm-mca runs it (the model: below).
# Per kernel it prints the modelled cycles per 32-weight block (of one weight row, against all
# the X rows of a call), the implied GB/s of weights per core at 2.4 GHz, the same at the
# instruction-issue bound, and for the M > 1 tiles the share of the sdot issue bound.
#
# The work of one loop iteration is counted from its sdot instructions, each of which is 16
# multiply-adds (4 rows x 4 elements; ARM ARM, SDOT (by element)): a 32-weight block of one row
# against one X row is 2 sdot for Q8_0 / Q4_0 and 2.125 for Q4_K (64 quant sdot and 4 min sdot
# per 4 rows and 256 weights); for Q6_K 2 + 0.5 / (X rows) (64 quant sdot per X row and 16 that
# sign-extend the scales, shared by the X rows, per 4 rows and 256 weights); the tool checks
# that the count comes out whole (or in quarters).
# The f32 kernels count 4-lane instructions: attention scores 8 fmla per 32 key elements and
# query, the weighted sum 8 fmul per 32 value elements and weight vector, RoPE 16 fmul per 32
# elements (16 pairs); their "block" is 32 elements of one KV row (or of the rotated row).
#
# Issue bound (per iteration): the largest of ASIMD instructions / 2, loads and stores / 2,
# integer instructions / 3 and all instructions / 4: the A76 decodes 4 instructions a cycle and
# issues to two ASIMD pipelines (V0, V1), two load/store pipelines (L0, L1) and three integer
# ones (S0, S1, M) (Arm Cortex-A76 Software Optimization Guide, 2.1 "Pipeline overview"). It
# ignores instructions that only one V pipeline runs. Work bound (the "op bound" columns): the
# work instructions / 2 (both V pipelines run SDOT, FMLA and FMUL, one per cycle each; same
# guide, 3.x "ASIMD integer instructions", "ASIMD floating-point instructions").
#
# The model: LLVM has no Cortex-A76 scheduling model; -mcpu=cortex-a76 runs on its Cortex-A57
# model in every Debian LLVM (14, 16, 19). LLVM 19 (Debian 12: `apt-get install llvm-19`) has a
# Neoverse N1 model, and the Neoverse N1 is the A76's infrastructure twin (the same pipelines,
# widths and instruction latencies: Arm Neoverse N1 Software Optimization Guide 2.1 and 3.x
# against the Cortex-A76 guide's), so the tool takes llvm-mca-19 -mcpu=neoverse-n1 when it is
# installed, and falls back to the A57 model (-mcpu=cortex-a76: 3-wide dispatch, the same two
# FP/ASIMD pipelines, longer FP latencies; lower bounds here) otherwise. The table's header
# names the model used. ORK_A76_MCA and ORK_A76_MCPU override both choices.
#
# Usage: tools/a76_cost.sh [--tsv FILE] [--md] [--i8mm [--i8mm-mcpu CPU]]
#   --tsv FILE   also write the table as tab-separated values (tools/a76_cost.tsv: the twin's CPU
#                cost model reads it; docs/kernels.md "A76 cost table" describes the columns)
#   --md         print the table as Markdown (default: aligned text)
#   --i8mm       instead, the table of the smmla tiles (neon-i8mm path) beside the sdot tiles
#                they replace, on a model of a core that has i8mm (the A76 has none): LLVM's
#                Neoverse N2 (--i8mm-mcpu, default neoverse-n2); smmla is 32 multiply-adds
#                (2 X rows x 2 weight rows x 8 elements), 1 per 32-weight block and X row;
#                docs/kernels.md "i8mm tiles". Never write these rows into tools/a76_cost.tsv.
# Needs: aarch64-linux-gnu-gcc (or clang; scripts/setup-deps --aarch64) and llvm-mca: llvm-19
# for the Neoverse N1 model (`apt-get install llvm-19`), else the llvm of setup-deps (A57).
set -euo pipefail
cd "$(dirname "$0")/.."

TSV=""
MD=0
I8MM=0
I8MM_MCPU=neoverse-n2
while [ $# -gt 0 ]; do
    case "$1" in
    --tsv) TSV=$2; shift 2 ;;
    --md) MD=1; shift ;;
    --i8mm) I8MM=1; shift ;;
    --i8mm-mcpu) I8MM_MCPU=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "a76_cost: unknown argument $1" >&2; exit 2 ;;
    esac
done

CLOCK_GHZ=2.4               # the RK3588's A76 cores (Rockchip RK3588 datasheet: up to 2.4 GHz)
MCA_ITER=200                # llvm-mca iterations of each loop (steady state)

# llvm-mca and its -mcpu: the newest llvm-mca with a Neoverse N1 model (see the top), else any.
mca_model() {
    "$1" -mtriple=aarch64-linux-gnu -mcpu="$2" -iterations=1 <(printf 'add x0, x0, x1\n') 2>/dev/null |
        awk '/^\[[0-9.]+\] +- /{ print $3; exit }'
}
MCA=${ORK_A76_MCA:-}
MCPU=${ORK_A76_MCPU:-}
if [ -z "$MCA" ]; then
    for c in llvm-mca-21 llvm-mca-20 llvm-mca-19 llvm-mca llvm-mca-16 llvm-mca-15 llvm-mca-14; do
        command -v "$c" >/dev/null || continue
        [ -n "$MCA" ] || MCA=$c
        case "$(mca_model "$c" neoverse-n1)" in N1*) MCA=$c; break ;; esac
    done
fi
[ -n "$MCA" ] || { echo "a76_cost: llvm-mca missing (apt-get install llvm-19)" >&2; exit 1; }
if [ -z "$MCPU" ]; then
    case "$(mca_model "$MCA" neoverse-n1)" in N1*) MCPU=neoverse-n1 ;; *) MCPU=cortex-a76 ;; esac
fi

CCKIND=${ORK_A76_CC:-gcc}
if [ "$CCKIND" = clang ]; then
    CC=(clang --target=aarch64-linux-gnu)
else
    command -v aarch64-linux-gnu-gcc >/dev/null ||
        { echo "a76_cost: aarch64-linux-gnu-gcc missing (scripts/setup-deps --aarch64)" >&2; exit 1; }
    CC=(aarch64-linux-gnu-gcc)
fi
CFLAGS=(-std=c11 -O2 -DNDEBUG -Iinclude -Isrc/kernels -S)

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# kernel table: label | type | kind | source | function | X rows | work op | work ops per
# 32-weight block and X row | weight bytes per 32-weight block (GGUF block sizes: Q8_0 34 B / 32,
# Q4_0 18 B / 32, Q4_K 144 B / 256, Q6_K 210 B / 256; KV rows F32 128 B, F16 64 B per 32 elements)
KERNELS='
x16 Q8_0 decode, 4 streams|Q8_0|decode|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g4m1|1|sdot|2|34
x16 Q8_0 decode, 1 stream|Q8_0|decode|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m1|1|sdot|2|34
x16 Q8_0 tile, 6 X rows|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m6|6|sdot|2|34
x16 Q8_0 tile, 4 X rows|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m4|4|sdot|2|34
x16 Q8_0 tile, 2 X rows|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m2|2|sdot|2|34
x16 Q4_0 decode, 4 streams|Q4_0|decode|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g4m1|1|sdot|2|18
x16 Q4_0 decode, 1 stream|Q4_0|decode|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m1|1|sdot|2|18
x16 Q4_0 tile, 6 X rows|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m6|6|sdot|2|18
x16 Q4_0 tile, 4 X rows|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m4|4|sdot|2|18
x16 Q4_0 tile, 2 X rows|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m2|2|sdot|2|18
x16 Q4_K decode, 4 streams|Q4_K|decode|src/kernels/arm/rows16_q4_k_neon.c|xkn_g4m1|1|sdot|2.125|18
x16 Q4_K decode, 1 stream|Q4_K|decode|src/kernels/arm/rows16_q4_k_neon.c|xkn_g1m1|1|sdot|2.125|18
x16 Q4_K tile, 4 X rows|Q4_K|tile|src/kernels/arm/rows16_q4_k_neon.c|xkn_g1m4|4|sdot|2.125|18
x16 Q6_K decode, 4 streams|Q6_K|decode|src/kernels/arm/rows16_q6_k_neon.c|x6n_g4m1|1|sdot|2.5|26.25
x16 Q6_K decode, 1 stream|Q6_K|decode|src/kernels/arm/rows16_q6_k_neon.c|x6n_g1m1|1|sdot|2.5|26.25
x16 Q6_K tile, 6 X rows|Q6_K|tile|src/kernels/arm/rows16_q6_k_neon.c|x6n_g1m6|6|sdot|2.083333|26.25
x16 Q6_K tile, 4 X rows|Q6_K|tile|src/kernels/arm/rows16_q6_k_neon.c|x6n_g1m4|4|sdot|2.125|26.25
x16 Q6_K tile, 2 X rows|Q6_K|tile|src/kernels/arm/rows16_q6_k_neon.c|x6n_g1m2|2|sdot|2.25|26.25
rows Q8_0/Q4_0 one-row dot|Q8_0|decode|src/kernels/arm/qdot_neon.c|q8_blocks_neon_dot|1|sdot|2|34
attn scores, one F32 row (ork_vec_dot)|F32|attn|src/kernels/arm/dot_neon.c|acc_step_neon|1|fmla|8|128
attn scores, 4 F32 keys x 2 queries|F32|attn|src/kernels/arm/kv_rows_neon.c|kvn_dot_f32_q2|2|fmla|8|128
attn scores, 4 F16 keys x 2 queries|F16|attn|src/kernels/arm/kv_rows_neon.c|kvn_dot_f16_q2|2|fmla|8|64
attn scores, 4 F32 keys x 1 query|F32|attn|src/kernels/arm/kv_rows_neon.c|kvn_dot_f32_q1|1|fmla|8|128
attn values, F32 rows x 2 weights|F32|attn|src/kernels/arm/kv_rows_neon.c|kvn_mad_f32_q2|2|fmul|8|128
attn values, F16 rows x 2 weights|F16|attn|src/kernels/arm/kv_rows_neon.c|kvn_mad_f16_q2|2|fmul|8|64
attn values, F32 rows x 1 weight|F32|attn|src/kernels/arm/kv_rows_neon.c|kvn_mad_f32_q1|1|fmul|8|128
RoPE NEOX pairs|F32|rope|src/kernels/arm/ops_neon.c|rope_neox_neon|1|fmul|16|128
RoPE normal pairs|F32|rope|src/kernels/arm/ops_neon.c|rope_norm_neon|1|fmul|16|128
'

# The i8mm section (--i8mm): the smmla tiles the neon-i8mm path runs (even X row counts: an odd
# one pairs its last row with itself) and, on the same model, the dotprod path's sdot tiles.
I8MM_KERNELS='
x16 Q8_0 tile, 6 X rows, smmla|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_i8mm.c|xi_q8_m6|6|smmla|1|34
x16 Q8_0 tile, 4 X rows, smmla|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_i8mm.c|xi_q8_m4|4|smmla|1|34
x16 Q8_0 tile, 6 X rows, sdot|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m6|6|sdot|2|34
x16 Q8_0 tile, 4 X rows, sdot|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m4|4|sdot|2|34
x16 Q8_0 tile, 2 X rows, sdot|Q8_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q8_g1m2|2|sdot|2|34
x16 Q4_0 tile, 6 X rows, smmla|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_i8mm.c|xi_q4_m6|6|smmla|1|18
x16 Q4_0 tile, 4 X rows, smmla|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_i8mm.c|xi_q4_m4|4|smmla|1|18
x16 Q4_0 tile, 2 X rows, smmla|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_i8mm.c|xi_q4_m2|2|smmla|1|18
x16 Q4_0 tile, 6 X rows, sdot|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m6|6|sdot|2|18
x16 Q4_0 tile, 4 X rows, sdot|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m4|4|sdot|2|18
x16 Q4_0 tile, 2 X rows, sdot|Q4_0|tile|src/kernels/arm/rows16_q8_0_q4_0_neon.c|xn_q4_g1m2|2|sdot|2|18
'
if [ $I8MM -eq 1 ]; then
    KERNELS=$I8MM_KERNELS
    MCPU=$I8MM_MCPU
    [ -z "$TSV" ] || [ "$(basename "$TSV")" != a76_cost.tsv ] ||
        { echo "a76_cost: --i8mm rows do not go into a76_cost.tsv (the twin reads it)" >&2; exit 2; }
fi

# Branch mnemonics (GCC writes b.ne as bne).
BRANCH_RE='^(b|b\.[a-z]+|b(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|cbz|cbnz|tbz|tbnz)$'

# The innermost loop of function $2 in assembly file $1 with the most $3 (the work
# instruction): its instructions.
extract_loop() {
    awk -v fn="$2" -v OP="$3" -v BR="$BRANCH_RE" '
        $0 ~ "^" fn ":" { on = 1; next }
        on && $0 ~ "^\t\\.size\t" fn "," { on = 0 }
        !on { next }
        /^\.L[A-Za-z0-9_]+:/ { sub(":.*", ""); lab[$0] = n; next }
        /^[ \t]*(\/\/|#|\.)/ { next }          # comments, #APP markers, directives
        /^\t[a-z]/ {
            line = $0; sub(/\t*\/\/.*/, "", line); ins[n] = line
            op = $1
            if (op ~ BR) br[n] = $NF
            n++
        }
        END {
            best = -1
            for (ik in br) {
                i = ik + 0; t = br[ik]
                if (!(t in lab) || lab[t] > i) continue
                s = lab[t]; e = i
                inner = 1                       # no other backward branch inside
                for (j in br) if (j + 0 > s && j + 0 < e && (br[j] in lab) && lab[br[j]] <= j + 0 && lab[br[j]] >= s) inner = 0
                if (!inner) continue
                k = 0
                for (j = s; j <= e; j++) if (ins[j] ~ "^\t" OP "[ \t]") k++
                if (k > best || (k == best && e - s < bl)) { best = k; bs = s; be = e; bl = e - s }
            }
            if (best < 0) exit 1
            for (j = bs; j <= be; j++) print ins[j]
        }' "$1"
}

# Instruction classes of a loop on stdin: "total work vec mem int" (work: the $1 instructions).
classify() {
    awk -v OP="$1" -v BR="$BRANCH_RE" '
        { op = $1; tot++
          if (op == OP) sd++
          if (op ~ /^(ld|st)/) mem++
          else if (op ~ BR || op == "ret") br++
          else if ($0 ~ /[ \t,]v[0-9]+\./ || $2 ~ /^[qdsbh][0-9]+,?$/) vec++
          else intg++ }
        END { printf "%d %d %d %d %d\n", tot, sd, vec, mem, intg + br }'
}

mca_cycles() {
    "$MCA" -mtriple=aarch64-linux-gnu -mcpu="$MCPU" -iterations="$MCA_ITER" -timeline=false \
        -instruction-info=false -resource-pressure=false "$1" 2>/dev/null |
        awk -v it="$MCA_ITER" '/^Total Cycles:/ { printf "%.2f\n", $3 / it }'
}

model=$(mca_model "$MCA" "$MCPU")
case "$model" in
A57*) model_note="LLVM's Cortex-A57 model (LLVM has no Cortex-A76 model; llvm-19 adds Neoverse N1)" ;;
N1*) model_note="LLVM's Neoverse N1 model, the A76's twin core (LLVM has no Cortex-A76 model)" ;;
N2*) model_note="LLVM's Neoverse N2 model, a core with i8mm (the A76 has none)" ;;
*) model_note="unit names ${model%Unit*}" ;;
esac
mca_ver=$("$MCA" --version 2>/dev/null | awk '/LLVM version/ { print $NF; exit }')
cc_ver=$("${CC[@]}" --version | head -1)

declare -A asm_of
rows=()
while IFS='|' read -r label type kind src fn mx wop spb bpb; do
    [ -n "$label" ] || continue
    if [ -z "${asm_of[$src]:-}" ]; then
        out="$TMP/$(basename "$src" .c).s"
        "${CC[@]}" "${CFLAGS[@]}" -o "$out" "$src"
        asm_of[$src]=$out
    fi
    loop="$TMP/$fn.loop.s"
    extract_loop "${asm_of[$src]}" "$fn" "$wop" > "$loop" ||
        { echo "a76_cost: no $wop loop in $fn" >&2; exit 1; }
    read -r tot sd vec mem intg < <(classify "$wop" < "$loop")
    cyc=$(mca_cycles "$loop")
    rows+=("$(awk -v label="$label" -v type="$type" -v kind="$kind" -v mx="$mx" -v spb="$spb" -v wop="$wop" \
        -v bpb="$bpb" -v tot="$tot" -v sd="$sd" -v vec="$vec" -v mem="$mem" -v intg="$intg" \
        -v cyc="$cyc" -v ghz="$CLOCK_GHZ" -v fn="$fn" 'BEGIN {
        wb = sd / (spb * mx)                    # 32-blocks (of one row) per iteration
        if (wb < 0.24 || (4 * wb - int(4 * wb + 0.5)) ^ 2 > 1e-4) {
            printf "a76_cost: %s: %d %s is not a whole number of blocks\n", fn, sd, wop > "/dev/stderr"; exit 1 }
        wb = int(4 * wb + 0.5) / 4
        iss = vec / 2; if (mem / 2 > iss) iss = mem / 2; if (intg / 3 > iss) iss = intg / 3
        if (tot / 4 > iss) iss = tot / 4
        cpb = cyc / wb; ipb = iss / wb
        gbs = bpb / cpb * ghz; igbs = bpb / ipb * ghz
        gops = (kind == "rope" ? 3 : 2) * 32 * mx / cpb * ghz   # RoPE: 4 mul + 2 add per pair
        sdpct = kind != "decode" ? sprintf("%.0f", 100 * (sd / 2) / cyc) : "-"
        sdipct = kind != "decode" ? sprintf("%.0f", 100 * (sd / 2) / iss) : "-"
        printf "%s\t%s\t%s\t%s\t%d\t%g\t%d\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%s\t%s\n",
            label, type, kind, fn, mx, wb, tot, wop, sd, cyc, cpb, ipb, gbs, igbs, gops, sdpct, sdipct }')")
done <<< "$KERNELS"

hdr="kernel	type	kind	function	x_rows	blocks_per_iter	insns_per_iter	op	op_per_iter	mca_cycles_per_iter	mca_cycles_per_block	issue_cycles_per_block	mca_gbps	issue_gbps	mca_gops	pct_op_bound_mca	pct_op_bound_issue"
if [ -n "$TSV" ]; then
    {
        echo "# A76 cost table of the NEON kernels (tools/a76_cost.sh; docs/kernels.md \"A76 cost table\")"
        echo "# compiler: $cc_ver -O2; llvm-mca $mca_ver -mcpu=$MCPU ($model_note); clock ${CLOCK_GHZ} GHz"
        echo "# block = 32 weights of one row (attn: 32 elements of one KV row; rope: of the row) against all x_rows X rows (queries, weight vectors) of a call; gbps = weight (KV) bytes per second of one core; op = the work instruction counted, pct_op_bound = its issue bound (op / 2 per cycle) against the cycles"
        echo "$hdr"
        printf '%s\n' "${rows[@]}"
    } > "$TSV"
fi

title="A76 cost"
[ $I8MM -eq 0 ] || title="i8mm tiles (not an A76 figure)"
echo "$title: $cc_ver -O2; llvm-mca $mca_ver -mcpu=$MCPU: $model_note; ${CLOCK_GHZ} GHz"
if [ $MD -eq 1 ]; then
    echo
    echo "| kernel | X rows | cycles / block (mca) | GB/s / core (mca) | cycles / block (issue bound) | GB/s / core (issue bound) | GOP/s (mca) | % of op bound (mca / issue) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}" | awk -F'\t' '{ printf "| %s | %d | %.2f | %.1f | %.2f | %.1f | %.1f | %s / %s |\n", $1, $5, $11, $13, $12, $14, $15, $16, $17 }'
else
    { echo "$hdr"; printf '%s\n' "${rows[@]}"; } | column -t -s $'\t'
fi
