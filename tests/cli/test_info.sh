#!/usr/bin/env bash
# test_info.sh -- black-box checks of `ork info`: help, a tiny GGUF built here, missing and corrupt
# files, and (when ../shared/fixtures is present) the facts of stories260K.gguf as printed by
# the independent reader /work/shared/tools/gguf_dump.py.
# usage: bash test_info.sh ORK_BINARY FIXTURES_DIR   (exit 77 = skipped: no fixtures)
set -u
ORK=$1
FIX=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {   # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# --help: usage on stdout, exit 0
out=$("$ORK" info --help); rc=$?
check "--help exits 0" test $rc -eq 0
check "--help prints usage" grep -q "usage: ork info" <<<"$out"

# no argument / unknown option: usage error (2)
"$ORK" info >/dev/null 2>&1; rc=$?
check "no file: exit 2" test $rc -eq 2
"$ORK" info --bogus x.gguf >/dev/null 2>&1; rc=$?
check "unknown option: exit 2" test $rc -eq 2

# a minimal valid GGUF v3: magic, version 3, 0 tensors, 1 kv (general.architecture = "tiny")
printf 'GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >"$tmp/tiny.gguf"
printf '\x14\x00\x00\x00\x00\x00\x00\x00general.architecture\x08\x00\x00\x00' >>"$tmp/tiny.gguf"
printf '\x04\x00\x00\x00\x00\x00\x00\x00tiny' >>"$tmp/tiny.gguf"
out=$("$ORK" info "$tmp/tiny.gguf" 2>&1); rc=$?
check "tiny file: exit 0" test $rc -eq 0
check "tiny file: version 3" grep -Eq "^version: +3$" <<<"$out"
check "tiny file: architecture" grep -Eq "general.architecture +\(str\) = 'tiny'" <<<"$out"
check "tiny file: 0 tensors" grep -Eq "^tensors: +0 " <<<"$out"

# missing file: exit 1, message names the file
err=$("$ORK" info "$tmp/missing.gguf" 2>&1 >/dev/null); rc=$?
check "missing file: exit 1" test $rc -eq 1
check "missing file: message names it" grep -q "missing.gguf" <<<"$err"

# corrupt files: exit 1 and the reader's message
printf 'GGUX\x03\x00\x00\x00' >"$tmp/badmagic.gguf"
err=$("$ORK" info "$tmp/badmagic.gguf" 2>&1 >/dev/null); rc=$?
check "bad magic: exit 1" test $rc -eq 1
check "bad magic: message" grep -q "bad magic" <<<"$err"
head -c 60 "$tmp/tiny.gguf" >"$tmp/trunc.gguf"
err=$("$ORK" info "$tmp/trunc.gguf" 2>&1 >/dev/null); rc=$?
check "truncated: exit 1" test $rc -eq 1
check "truncated: message names the key" grep -q "general.architecture" <<<"$err"

# the generated files of the fuzz seed corpus: valid_* print (exit 0), bad_* are refused with a
# reader message (exit 1); nothing crashes (the fuzz-found files are replayed by fuzz/replay_gguf)
corpus="$(dirname "$0")/../fuzz/corpus/gguf"
bad_corpus=0
for f in "$corpus"/valid_* "$corpus"/bad_*; do
    [ -f "$f" ] || continue
    "$ORK" info "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
    case "$(basename "$f")" in
    valid_*) [ $rc -eq 0 ] || { echo "  $f: exit $rc"; bad_corpus=1; } ;;
    bad_*) { [ $rc -eq 1 ] && grep -q "gguf: " "$tmp/err"; } || { echo "  $f: exit $rc"; bad_corpus=1; } ;;
    esac
done
check "corpus files: valid print, corrupt refused, no crash" test $bad_corpus -eq 0

model="$FIX/models/stories260K.gguf"
if [ ! -r "$model" ]; then
    echo "SKIP: fixture $model not found (needs ../shared/fixtures)"
    [ $fail -eq 0 ] && exit 77
    exit 1
fi

out=$("$ORK" info "$model" 2>&1); rc=$?
check "fixture: exit 0" test $rc -eq 0
check "fixture: version 3" grep -Eq "^version: +3$" <<<"$out"
check "fixture: 48 tensors" grep -Eq "^tensors: +48 " <<<"$out"
check "fixture: 19 keys" grep -q "^metadata: 19 keys" <<<"$out"
check "fixture: data offset" grep -Eq "^data offset: +14176$" <<<"$out"
check "fixture: block_count" grep -Eq "llama.block_count +\(u32\) = 5$" <<<"$out"
check "fixture: tokens abbreviated" grep -Eq "tokenizer.ggml.tokens +\[str x 512\] = \['<unk>', '<s>', '</s>',.*, \.\.\.\]$" <<<"$out"
check "fixture: token_embd row" grep -Eq "token_embd.weight +F32 +\[64, 512\] +0 +131072$" <<<"$out"
check "fixture: last tensor" grep -Eq "blk.4.ffn_norm.weight +F32 +\[64\] +1170944 +256$" <<<"$out"
check "fixture: per-type summary" grep -Eq "^  F32 +48 " <<<"$out"
n_rows=$(grep -Ec "^ +[0-9]+  [a-z0-9_.]+ +F32 +\[" <<<"$out")
check "fixture: 48 tensor rows" test "$n_rows" -eq 48

all=$("$ORK" info --all "$model" 2>&1); rc=$?
check "--all: exit 0" test $rc -eq 0
check "--all: last token printed" grep -q "\[str x 512\] = \[.*'<0x00>'.*, '[^']*'\]$" <<<"$all"
check "--all: no ellipsis in tokens" bash -c '! grep "tokenizer.ggml.tokens" <<<"$1" | grep -q "\.\.\.\]"' _ "$all"

exit $fail
