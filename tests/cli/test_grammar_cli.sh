#!/bin/bash
# test_grammar_cli.sh ORK FIXTURES -- constrained output on the command line: --grammar,
# --grammar-file and --json-schema restrict what `ork run` generates (sampled at temperature 1,
# several seeds, so an unconstrained run would wander off), and bad grammars, schemas and files
# are usage or runtime errors that name what was wrong.
ORK="$1"; FIX="$2"
MODEL="$FIX/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "SKIP: fixtures not found"; exit 77; }
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() { "$ORK" run -m "$MODEL" -p "Once upon a time" --no-echo -t 1 --temp 1 "$@"; }

for seed in 1 2 3; do
    out=$(run -n 16 --seed $seed --grammar 'root ::= ("yes" | "no") "."' 2>/dev/null)
    check "grammar, seed $seed: '$out' is yes. or no." '[ "$out" = "yes." ] || [ "$out" = "no." ]'
done
printf 'root ::= "<" [a-c]+ ">"\n' >"$tmp/g.gbnf"
out=$(run -n 12 --seed 4 --grammar-file "$tmp/g.gbnf" 2>/dev/null)
check "grammar file: '$out' matches <[a-c]+> or its prefix" '[[ "$out" =~ ^\<[a-c]*\>?$ ]]'
schema='{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}'
# the converted grammar allows JSON whitespace between tokens, so a short run may stop early:
# the text without whitespace is then a prefix of one of the two valid objects
prefix_of_valid() {
    local c; c=$(tr -d ' \n\t' <<<"$1")
    [ -n "$c" ] && { [[ '{"ok":true}' == "$c"* ]] || [[ '{"ok":false}' == "$c"* ]]; }
}
for seed in 1 2; do
    out=$(run -n 128 --seed $seed --json-schema "$schema" 2>/dev/null)
    check "json schema, seed $seed: JSON with a boolean ok (or its start)" 'prefix_of_valid "$out"'
done
run -n 4 --grammar 'root ::= [' >/dev/null 2>"$tmp/e1"; rc=$?
check "bad grammar: exit 1 with line:column" '[ $rc -eq 1 ] && grep -q "grammar: 1:" "$tmp/e1"'
run -n 4 --json-schema '{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}' \
    >/dev/null 2>"$tmp/e2"; rc=$?
check "schema keyword it cannot honour: exit 1 naming it" '[ $rc -eq 1 ] && grep -q pattern "$tmp/e2"'
run -n 4 --grammar-file "$tmp/nope.gbnf" >/dev/null 2>"$tmp/e3"; rc=$?
check "missing grammar file: exit 1 naming it" '[ $rc -eq 1 ] && grep -q nope.gbnf "$tmp/e3"'
run -n 4 --grammar 'root ::= "a"' --json-schema '{}' >/dev/null 2>"$tmp/e4"; rc=$?
check "two constraints: usage error" '[ $rc -eq 2 ]'
exit $fail
