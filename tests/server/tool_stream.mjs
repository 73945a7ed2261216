// tool_stream.mjs ORK MODEL -- streamed tool calls on /v1/chat/completions go out as OpenAI
// streams them: per call a first tool_calls delta with index, id, type and function.name (empty
// arguments), then function.arguments fragments; text before a call streams as content first.
// The deltas reassemble to exactly the non-streamed reply (same seed): content, every call's
// id, name and arguments, finish_reason.
import { check, deadline, finish, startServer, post, postStream } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(100);
const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);
const C = '/v1/chat/completions';
const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 40 }, days: { type: 'integer' } },
                required: ['city', 'days'] } } };
const clock = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };
const msgs = [{ role: 'user', content: 'What is the weather in Paris?' }];

// Reassemble a stream: content, calls by index, the order of events, the shape of each delta.
function reassemble(events) {
  const r = { content: '', calls: [], finish: null, shapeOk: true, fragments: 0, order: [] };
  for (const e of events) {
    const ch = e.choices?.[0];
    if (!ch) continue;
    if (ch.finish_reason) r.finish = ch.finish_reason;
    if (ch.delta?.content) { r.content += ch.delta.content; r.order.push('content'); }
    for (const d of ch.delta?.tool_calls ?? []) {
      const first = r.calls[d.index] === undefined;
      if (first) {
        // the first delta of a call: id, type, name, empty arguments
        r.shapeOk &&= typeof d.id === 'string' && d.type === 'function' &&
                      typeof d.function?.name === 'string' && d.function.arguments === '';
        r.calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
        r.order.push(`call${d.index}`);
      } else {
        // later deltas: argument fragments only
        r.shapeOk &&= d.id === undefined && d.function?.name === undefined &&
                      typeof d.function?.arguments === 'string' && d.function.arguments.length > 0;
        r.calls[d.index].function.arguments += d.function.arguments;
        r.fragments++;
      }
    }
  }
  return r;
}

// Calls without their ids (ids differ between two requests), and the ids' shape.
const noIds = (cs) => JSON.stringify((cs ?? []).map((c) => ({ ...c, id: typeof c.id === 'string' && c.id.startsWith('call_') })));

let fragments = 0, calls = 0;
for (const [name, extra] of [
  ['named, one call', { tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false, seed: 11 }],
  ['required seed 1', { tool_choice: 'required', seed: 1 }],
  ['required seed 2', { tool_choice: 'required', seed: 2, max_tokens: 120 }],   // cut inside a call
  ['required seed 3', { tool_choice: 'required', seed: 3 }],
]) {
  const body = { messages: msgs, tools: [weather, clock], max_tokens: 250, temperature: 0.8, ...extra };
  const plain = await post(srv, C, body);
  const want = plain.json?.choices?.[0];
  const s = await postStream(srv, C, body);
  const r = reassemble(s.events);
  check(`${name}: 200 and a call`, plain.status === 200 && want?.message?.tool_calls?.length >= 1, plain.text);
  check(`${name}: stream ends with [DONE]`, s.status === 200 && s.done, s.rest);
  check(`${name}: first delta of a call has id/type/name, then argument fragments`, r.shapeOk, s.events.slice(1, 4));
  check(`${name}: calls reassemble to the non-streamed ones`,
        noIds(r.calls) === noIds(want?.message?.tool_calls), { got: r.calls, want: want?.message?.tool_calls });
  check(`${name}: same finish_reason`, r.finish === want?.finish_reason, [r.finish, want?.finish_reason]);
  check(`${name}: no content`, r.content === '' && want?.message?.content === null, [r.content, want?.message?.content]);
  fragments += r.fragments;
  calls += r.calls.length;
}
// progressive: the arguments went out in pieces as they were written, not in one delta per call
check('arguments streamed in fragments', fragments > calls, { fragments, calls });

{ // text before a call streams as content, then the call (a grammar makes the model write both)
  const lit = (s) => JSON.stringify(s);
  const args = '{"city": "Oslo", "days": 2}';
  const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": ' + args + '}\n</tool_call>';
  const body = { messages: msgs, tools: [weather], tool_choice: 'auto', max_tokens: 200,
                 grammar: `root ::= ${lit(text)}` };
  const plain = await post(srv, C, body);
  const m = plain.json?.choices?.[0]?.message;
  check('content then call: non-streamed', plain.status === 200 && m?.content === 'Let me check.\n' &&
        m?.tool_calls?.[0]?.function?.arguments === args && plain.json.choices[0].finish_reason === 'tool_calls', plain.text);
  const s = await postStream(srv, C, body);
  const r = reassemble(s.events);
  check('content then call: content streamed before the call', r.content === 'Let me check.\n' &&
        r.order[0] === 'content' && r.order.includes('call0') && r.order.indexOf('call0') > r.order.lastIndexOf('content'), r.order);
  check('content then call: call reassembles', noIds(r.calls) === noIds(m?.tool_calls) &&
        r.finish === 'tool_calls', r.calls);
  // no call after all: "<tool" held back, then released as content
  const t2 = 'I think <tool_box> is <tool';
  const b2 = { messages: msgs, tools: [weather], max_tokens: 200, grammar: `root ::= ${lit(t2)}` };
  const p2 = await post(srv, C, b2);
  const r2 = reassemble((await postStream(srv, C, b2)).events);
  check('no call: all content, streamed == non-streamed', p2.json?.choices?.[0]?.message?.content === t2 &&
        r2.content === t2 && r2.calls.length === 0 && r2.finish === 'stop', [r2.content, p2.text]);
}
finish();
