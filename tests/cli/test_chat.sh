#!/bin/bash
# test_chat.sh ORK FIXTURES -- `ork chat` with piped input: answers two turns without crashing,
# keeps the KV cache between turns (the second turn reuses the first turn's tokens), /reset
# starts over, EOF and /exit end the session.
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K-qwen3.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

printf 'Hello there.\nTell me about the park.\n' |
    "$ORK" chat -m "$MODEL" -v --temp 0 -n 24 -c 512 -t 2 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "two turns exit 0" '[ $rc -eq 0 ]'
check "turn 1 reported" 'grep -q "^chat: turn 1: .* 0 reused from the cache" "$tmp/err"'
reused=$(sed -n 's/^chat: turn 2: \([0-9]*\) prompt tokens, \([0-9]*\) reused.*/\2/p' "$tmp/err")
check "turn 2 reuses the cache (reused=$reused)" '[ -n "$reused" ] && [ "$reused" -gt 20 ]'
check "replies printed" '[ $(grep -c . "$tmp/out") -ge 2 ]'
check "no-template note" 'grep -q "ChatML" "$tmp/err"'

printf 'Hi.\n/reset\nHi.\n/exit\nnever read\n' |
    "$ORK" chat -m "$MODEL" -v --temp 0 -n 8 -c 256 --system "You tell stories." >"$tmp/out2" 2>"$tmp/err2"
rc=$?
check "/reset and /exit exit 0" '[ $rc -eq 0 ]'
check "/reset clears the cache" 'grep -q "conversation reset" "$tmp/err2" && grep -q "^chat: turn 2: .* 0 reused" "$tmp/err2"'
check "/exit stops reading" '! grep -q "turn 3" "$tmp/err2"'

printf 'Hello\n' | "$ORK" chat -m "$MODEL" --template nosuch >/dev/null 2>"$tmp/e1"; rc=$?
check "bad --template exits 2" '[ $rc -eq 2 ] && grep -q "nosuch" "$tmp/e1"'
printf 'a long message that does not fit\n' | "$ORK" chat -m "$MODEL" -c 8 >/dev/null 2>"$tmp/e2"; rc=$?
check "overlong turn reports context full" '[ $rc -eq 0 ] && grep -q "context full" "$tmp/e2"'
"$ORK" chat --help >"$tmp/h"; rc=$?
check "--help" '[ $rc -eq 0 ] && grep -q "usage: ork chat" "$tmp/h"'
exit $fail
