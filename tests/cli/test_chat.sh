#!/bin/bash
# test_chat.sh ORK FIXTURES -- `ork chat` with piped input: answers two turns without crashing,
# keeps the KV cache between turns (the second turn reuses the first turn's tokens), /reset
# starts over, EOF and /exit end the session; slash commands (/help /clear /system /save) never
# reach the model; llama-cli spellings (-sys, --chat-template, -r, MODEL first, --opt=value);
# Ctrl-C stops a reply and keeps the session, Ctrl-C at the prompt quits.
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
check "--help" '[ $rc -eq 0 ] && grep -q "usage: ork chat" "$tmp/h" && grep -q "/save FILE" "$tmp/h"'

# slash commands: answered here, the model sees only the two real lines
printf '/help\nHi.\n/nosuch\n/clear\n/system Be brief.\nHi.\n/save %s\n/quit\nnever\n' "$tmp/c.json" |
    "$ORK" chat "$MODEL" -v --verbose-prompt --temp=0 -n 8 -c 256 -sys "You tell stories." \
    >"$tmp/o3" 2>"$tmp/e3"; rc=$?
check "slash commands exit 0" '[ $rc -eq 0 ]'
check "/help prints the commands" 'grep -q "^  /clear" "$tmp/o3"'
check "/help and /nosuch are not turns" '[ $(grep -c "^chat: turn " "$tmp/e3") -eq 2 ] && ! grep -q "/help\|/nosuch" <(grep -v "^chat: unknown command" "$tmp/e3")'
check "unknown /command reported" 'grep -q "unknown command .*/nosuch" "$tmp/e3"'
check "-sys reaches the prompt" 'grep -A1 "im_start|>system" "$tmp/e3" | grep -q "You tell stories."'
check "/clear resets the cache" 'grep -q "^chat: turn 2: .* 0 reused" "$tmp/e3"'
check "/system replaces the system message" '[ $(grep -c "Be brief." "$tmp/e3") -eq 1 ] && grep -q "^Be brief.<|im_end|>" "$tmp/e3"'
check "/save writes the messages" 'grep -q "\"messages\"" "$tmp/c.json" && [ $(grep -c "\"role\"" "$tmp/c.json") -eq 3 ]'

# -r / --reverse-prompt: a word of the free reply ends the reply before it
printf 'Hi.\n' | "$ORK" chat -m "$MODEL" --temp 0 -n 24 -c 256 >"$tmp/o4" 2>/dev/null
word=$(tr -c 'A-Za-z\n' ' ' <"$tmp/o4" | tr ' ' '\n' | awk 'length($0) >= 3' | sed -n 2p)
printf 'Hi.\n' | "$ORK" chat --model="$MODEL" -v --temp 0 -n 24 --ctx-size=256 -r "$word" >"$tmp/o5" 2>"$tmp/e5"; rc=$?
check "-r '$word' stops the reply" '[ $rc -eq 0 ] && [ -n "$word" ] && grep -q "(stop: stop)\|(stop: string)" "$tmp/e5" && ! grep -q "$word" "$tmp/o5"'
check "--model=FILE (chat)" '[ -s "$tmp/o5" ]'

"$ORK" run --model="$MODEL" --temp=0 --n-predict=4 -p "Once" >"$tmp/o6" 2>"$tmp/e6"; rc=$?
check "--opt=value (run)" '[ $rc -eq 0 ] && [ -s "$tmp/o6" ]'
"$ORK" chat "$MODEL" -ngl 99 </dev/null >/dev/null 2>"$tmp/e7"; rc=$?
check "unsupported flag named" '[ $rc -eq 2 ] && grep -q -- "-ngl is not supported" "$tmp/e7"'
"$ORK" chat "$MODEL" other.gguf </dev/null >/dev/null 2>"$tmp/e8"; rc=$?
check "second positional refused" '[ $rc -eq 2 ] && grep -q "other.gguf" "$tmp/e8"'

# Ctrl-C: the first stops the long reply, the next line is answered, Ctrl-C at the prompt quits
mkfifo "$tmp/in"
"$ORK" chat "$MODEL" -v --temp 0 -n -1 -c 2048 -t 1 <"$tmp/in" >"$tmp/o9" 2>"$tmp/e9" &
pid=$!
exec 3>"$tmp/in"
echo "Once upon a time" >&3
for _ in $(seq 200); do [ -s "$tmp/o9" ] && break; sleep 0.05; done
kill -INT $pid
echo "Hi." >&3
# the second reply runs to its end first (up to 120 s: a sanitizer build on a loaded machine);
# the input is closed before waiting, so a late Ctrl-C that stopped a reply ends at EOF, not in
# a hang
for _ in $(seq 2400); do grep -q "^chat: turn 2" "$tmp/e9" && break; sleep 0.05; done
kill -INT $pid
sleep 0.2
exec 3>&-
wait $pid; rc=$?
check "Ctrl-C stops the reply" 'grep -q "^chat: turn 1: .*(stop: callback)" "$tmp/e9" && grep -q "reply interrupted" "$tmp/e9"'
check "the next line is answered, reusing the cache" 'grep -q "^chat: turn 2: [0-9]* prompt tokens, [1-9]" "$tmp/e9"'
check "Ctrl-C at the prompt exits 0" '[ $rc -eq 0 ]'
exit $fail
