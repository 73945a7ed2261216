// constrained.mjs ORK MODEL -- constrained output on every generation endpoint: for a table of
// JSON schemas from simple to nested, the output of /v1/chat/completions (response_format
// json_schema, streamed and not), /v1/completions and /completion (json_schema) parses as JSON
// and validates against the schema (a small validator written here for the keywords used);
// response_format json_object gives an object; a GBNF "grammar" is followed; bad grammars and
// schemas are 400 naming what was wrong.
import { check, deadline, finish, startServer, post, postStream } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(100);
const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);
const msgs = [{ role: 'user', content: 'Tell me about a cat.' }];

// Validate v against the schema subset the table uses; returns '' or what is wrong.
function invalid(v, s, path = '$') {
  if (s.enum) return s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)) ? '' : `${path} not in enum`;
  if (s.const !== undefined) return JSON.stringify(s.const) === JSON.stringify(v) ? '' : `${path} != const`;
  if (s.anyOf) return s.anyOf.some((a) => !invalid(v, a, path)) ? '' : `${path} matches no anyOf`;
  const t = s.type;
  const is = { object: (x) => x && typeof x === 'object' && !Array.isArray(x), array: Array.isArray,
               string: (x) => typeof x === 'string', integer: Number.isInteger,
               number: (x) => typeof x === 'number', boolean: (x) => typeof x === 'boolean',
               null: (x) => x === null };
  if (t && !is[t](v)) return `${path} is not ${t}`;
  if (t === 'string') {
    if (s.maxLength !== undefined && [...v].length > s.maxLength) return `${path} too long`;
    if (s.minLength !== undefined && [...v].length < s.minLength) return `${path} too short`;
    if (s.format === 'date' && !/^\d{4}-\d\d-\d\d$/.test(v)) return `${path} not a date`;
    if (s.format === 'uuid' && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) return `${path} not a uuid`;
  }
  if (t === 'array') {
    if (s.minItems !== undefined && v.length < s.minItems) return `${path} has too few items`;
    if (s.maxItems !== undefined && v.length > s.maxItems) return `${path} has too many items`;
    for (let i = 0; i < v.length; i++) { const e = s.items ? invalid(v[i], s.items, `${path}[${i}]`) : ''; if (e) return e; }
  }
  if (t === 'object' && s.properties) {
    for (const k of s.required ?? []) if (!(k in v)) return `${path} lacks required '${k}'`;
    for (const k of Object.keys(v)) {
      if (!(k in s.properties)) return `${path} has extra key '${k}'`;
      const e = invalid(v[k], s.properties[k], `${path}.${k}`);
      if (e) return e;
    }
  }
  return '';
}

function parsed(text) {
  try { return { ok: true, v: JSON.parse(text) }; } catch (e) { return { ok: false, err: String(e) }; }
}

const name = { type: 'string', minLength: 1, maxLength: 8 };
const schemas = [
  { type: 'boolean' },
  { enum: ['red', 'green', 'blue'] },
  { type: 'integer' },
  { type: 'object', properties: { name, age: { type: 'integer' } }, required: ['name', 'age'] },
  { type: 'object', properties: { ok: { type: 'boolean' }, tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 3 },
                                  nick: name }, required: ['ok', 'tags'] },
  { type: 'object', properties: { user: { type: 'object', properties: { id: { type: 'string', format: 'uuid' },
                                                                        born: { type: 'string', format: 'date' } },
                                          required: ['id', 'born'] },
                                  score: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
    required: ['user', 'score'] },
];

for (const [i, schema] of schemas.entries()) {
  for (const [what, path, body, text] of [
    ['chat', '/v1/chat/completions', { messages: msgs, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } },
     (j) => j.choices?.[0]?.message?.content],
    ['completions', '/v1/completions', { prompt: 'Once upon a time', response_format: { type: 'json_schema', json_schema: { schema } } },
     (j) => j.choices?.[0]?.text],
    ['completion', '/completion', { prompt: 'Once upon a time', json_schema: schema }, (j) => j.content],
  ]) {
    for (const seed of [1, 2]) {
      const r = await post(srv, path, { ...body, max_tokens: 400, n_predict: 400, temperature: 1, seed });
      const out = r.status === 200 ? text(r.json) : undefined;
      const p = out !== undefined ? parsed(out) : { ok: false };
      const bad = p.ok ? invalid(p.v, schema) : 'not JSON';
      check(`schema ${i} on ${what} (seed ${seed}): output parses and validates`, r.status === 200 && p.ok && !bad,
            [r.status, out ?? r.text, bad]);
    }
  }
}

// streamed chat: the deltas reassemble to valid JSON
{
  const schema = schemas[3];
  const s = await postStream(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 400, temperature: 1, seed: 3,
                                                            response_format: { type: 'json_schema', json_schema: { schema } } });
  const out = s.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
  const p = parsed(out);
  check('streamed chat under a schema: parses and validates', s.done && p.ok && !invalid(p.v, schema), out);
}

// json_object mode: a JSON object (greedy, so the length stays bounded on this model)
{
  const r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 400, temperature: 0,
                                                      response_format: { type: 'json_object' } });
  const out = r.json?.choices?.[0]?.message?.content;
  const p = out !== undefined ? parsed(out) : { ok: false };
  check('response_format json_object: an object', r.status === 200 &&
        (r.json.choices[0].finish_reason === 'length' || (p.ok && p.v && typeof p.v === 'object' && !Array.isArray(p.v))),
        [r.status, out]);
  check('response_format json_object: starts an object', typeof out === 'string' && out.startsWith('{'), out);
}

// a GBNF grammar on /completion and the OpenAI endpoints
for (const [path, extra] of [['/completion', { prompt: 'Once upon a time' }], ['/v1/completions', { prompt: 'Once upon a time' }],
                             ['/v1/chat/completions', { messages: msgs }]]) {
  const r = await post(srv, path, { ...extra, max_tokens: 64, temperature: 1, seed: 5,
                                    grammar: 'root ::= "Tom " ("ran" | "sat") " " [0-9]{1,2} " times."' });
  const out = r.json?.content ?? r.json?.choices?.[0]?.text ?? r.json?.choices?.[0]?.message?.content;
  check(`grammar on ${path}: output follows it`, r.status === 200 && /^Tom (ran|sat) [0-9]{1,2} times\.$/.test(out ?? ''), [r.status, out]);
}

// errors: 400 naming the field and what was wrong
for (const [body, want] of [
  [{ grammar: 'root ::= "a' }, /'grammar'.*1:10: unterminated string literal/],
  [{ grammar: 'root ::= foo' }, /'grammar'.*rule 'foo' is used but not defined/],
  [{ json_schema: { type: 'string', pattern: '^a' } }, /'json_schema'.*'pattern' is not supported/],
  [{ response_format: { type: 'json_schema' } }, /'response_format'.*needs 'json_schema'/],
  [{ response_format: { type: 'yaml' } }, /'response_format'.type must be/],
  [{ grammar: 'root ::= "a"', json_schema: { type: 'integer' } }, /only one of/],
]) {
  const r = await post(srv, '/completion', { prompt: 'Once', n_predict: 4, ...body });
  check(`400 for ${JSON.stringify(body)}`, r.status === 400 && want.test(r.json?.error?.message ?? ''), [r.status, r.text]);
}
// neutral values still pass
const r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 2, response_format: { type: 'text' }, grammar: '', json_schema: null });
check('response_format text, empty grammar, null json_schema: unconstrained', r.status === 200, r.text);

finish();
