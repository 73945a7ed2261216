// tools.mjs ORK MODEL -- OpenAI tool calls on /v1/chat/completions: with tool_choice "required"
// or a named function the reply carries tool_calls whose arguments parse as JSON and have the
// function's required parameters (finish_reason "tool_calls"), streamed deltas reassemble to a
// call; tool_choice "none" gives plain content; bad tools are 400 naming the field; the tool
// list, an assistant's tool_calls and a role "tool" result are rendered into the prompt.
import { check, deadline, finish, startServer, post, postStream } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(100);
const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);
const C = '/v1/chat/completions';
const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer' } },
                required: ['city', 'days'] } } };
const clock = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {}, additionalProperties: false } } };
const msgs = [{ role: 'user', content: 'What is the weather in Paris?' }];
const base = { messages: msgs, tools: [weather, clock], max_tokens: 1000, temperature: 0.8, seed: 7 };

function callsOk(name, choice, want) {
  const calls = choice?.message?.tool_calls ?? [];
  check(`${name}: finish_reason tool_calls`, choice?.finish_reason === 'tool_calls', choice);
  check(`${name}: has a call`, calls.length >= 1, choice);
  for (const c of calls) {
    let args = null;
    try { args = JSON.parse(c.function.arguments); } catch { /* checked below */ }
    check(`${name}: call shape`, typeof c.id === 'string' && c.id.length > 0 && c.type === 'function', c);
    check(`${name}: arguments parse as a JSON object`, args && typeof args === 'object', c.function);
    if (want) check(`${name}: named function`, c.function.name === want, c.function);
    if (c.function.name === 'get_weather' && args)
      check(`${name}: required parameters present`, typeof args.city === 'string' && Number.isInteger(args.days), args);
  }
}

for (const seed of [1, 2, 3]) {
  const r = await post(srv, C, { ...base, seed, tool_choice: 'required' });
  check(`required seed ${seed}: 200`, r.status === 200, r.text);
  callsOk(`required seed ${seed}`, r.json?.choices?.[0]);
}
{
  const r = await post(srv, C, { ...base, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  check('named: 200', r.status === 200, r.text);
  callsOk('named', r.json?.choices?.[0], 'get_weather');
  const one = await post(srv, C, { ...base, tool_choice: 'required', parallel_tool_calls: false });
  check('parallel_tool_calls false: one call', one.json?.choices?.[0]?.message?.tool_calls?.length === 1, one.json);
}
{
  const r = await post(srv, C, { ...base, tool_choice: 'none', max_tokens: 8 });
  const m = r.json?.choices?.[0]?.message;
  check('none: plain content', r.status === 200 && typeof m?.content === 'string' && !m.tool_calls, r.json);
}
{ // streaming: tool_calls deltas reassemble to the non-streamed call (same seed)
  const body = { ...base, seed: 11, tool_choice: { type: 'function', function: { name: 'get_weather' } } };
  const plain = await post(srv, C, body);
  const s = await postStream(srv, C, body);
  const acc = [];
  let fin = null;
  for (const e of s.events) {
    const ch = e.choices?.[0];
    if (!ch) continue;
    if (ch.finish_reason) fin = ch.finish_reason;
    for (const d of ch.delta?.tool_calls ?? []) {
      acc[d.index] ??= { id: '', name: '', arguments: '' };
      if (d.id) acc[d.index].id = d.id;
      if (d.function?.name) acc[d.index].name += d.function.name;
      if (d.function?.arguments) acc[d.index].arguments += d.function.arguments;
    }
  }
  const want = plain.json?.choices?.[0]?.message?.tool_calls?.[0]?.function;
  // "tool_calls", or "length" when the limit cut a call (both ways alike)
  check('stream: finish_reason as not streamed, and [DONE]', fin === plain.json?.choices?.[0]?.finish_reason &&
        s.done, s.events.slice(-2));
  check('stream: deltas reassemble to the call', acc.length >= 1 && acc[0].name === want?.name &&
        acc[0].arguments === want?.arguments, { acc, want });
}
// bad tools: 400 naming the field
const bad = [
  [{ type: 'function', function: { parameters: { type: 'object' } } }, 'tools\'[0].function.name'],
  [{ type: 'function', function: { name: 'f', parameters: 'string' } }, 'tools\'[0].function.parameters'],
  [{ type: 'function', function: { name: 'f', parameters: { type: 'nonsense' } } }, 'tools\'[0].function.parameters'],
  [{ type: 'function', function: { name: 'bad name' } }, 'tools\'[0].function.name'],
  [{ type: 'retrieval' }, 'tools\'[0].type'],
];
for (const [tool, field] of bad) {
  const r = await post(srv, C, { messages: msgs, tools: [tool], tool_choice: 'required', max_tokens: 4 });
  check(`bad tool ${JSON.stringify(tool).slice(0, 60)}: 400 naming ${field}`, r.status === 400 &&
        r.json?.error?.message?.includes(field), r.text);
}
{
  const r = await post(srv, C, { messages: msgs, tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } });
  check('unknown named function: 400', r.status === 400 && /tool_choice/.test(r.json?.error?.message), r.text);
  const g = await post(srv, C, { ...base, tool_choice: 'required', response_format: { type: 'json_object' } });
  check('forced call with response_format: 400', g.status === 400, g.text);
  const cmp = await post(srv, '/v1/completions', { prompt: 'x', tools: [weather] });
  check('tools on /v1/completions: 400', cmp.status === 400 && /tools/.test(cmp.json?.error?.message), cmp.text);
}
{ // the tool list, assistant tool_calls and tool results in the prompt
  const hist = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Oslo","days":1}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp":-3}' },
  ];
  const r = await post(srv, '/apply-template', { messages: hist, tools: [weather] });
  const p = r.json?.prompt ?? '';
  check('template: 200', r.status === 200, r.text);
  check('template: tools in the system turn', p.startsWith('<|im_start|>system\nBe brief.\n\n# Tools') &&
        p.includes('<tools>\n{"type":"function","function":{"name":"get_weather"'), p);
  check('template: assistant tool call', p.includes('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Oslo","days":1}}\n</tool_call><|im_end|>'), p);
  check('template: tool result as a user turn', p.includes('<|im_start|>user\n<tool_response>\n{"temp":-3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'), p);
  const f = await post(srv, C, { messages: hist, tools: [weather], max_tokens: 8 });
  check('tool result round-trip: a final message', f.status === 200 && f.json?.choices?.[0]?.message, f.text);
}
finish();
