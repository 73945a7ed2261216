// openai_tools.mjs ORK MODEL NPM_PREFIX -- tool calls through the official `openai` npm client
// against `ork serve`: tool_choice "required" gives a tool call whose arguments validate
// against the tool's schema; the role "tool" result sent back gets a final message; a streamed
// request (iterated by hand, and through the client's own stream helper, which assembles the
// tool-call deltas itself) gives the same call as the non-streamed one.
import { createRequire } from 'node:module';
import { check, deadline, finish, startServer } from './harness.mjs';

const [ork, model, prefix] = process.argv.slice(2);
deadline(80);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');

const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);
const client = new OpenAI({ baseURL: srv.base + '/v1', apiKey: 'sk-no-key-required', maxRetries: 0,
                            timeout: 30000 });
const schema = { type: 'object', properties: { city: { type: 'string', maxLength: 16 },
                 days: { type: 'integer' }, unit: { enum: ['C', 'F'] } }, required: ['city', 'days', 'unit'],
                 additionalProperties: false };
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: schema } }];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

// The arguments against the schema above, by hand (no validator package needed).
function validArgs(text) {
  let a;
  try { a = JSON.parse(text); } catch { return false; }
  return a && typeof a === 'object' && !Array.isArray(a) &&
    Object.keys(a).every((k) => k in schema.properties) &&
    typeof a.city === 'string' && [...a.city].length <= 16 && Number.isInteger(a.days) &&
    ['C', 'F'].includes(a.unit);
}

const req = { model: 'stories', messages, tools, tool_choice: 'required', parallel_tool_calls: false,
              max_tokens: 300, temperature: 0.7, seed: 5 };
const r = await client.chat.completions.create(req);
const choice = r.choices[0];
const call = choice.message.tool_calls?.[0];
check('required: one tool call, finish_reason tool_calls', choice.finish_reason === 'tool_calls' &&
      choice.message.tool_calls?.length === 1 && call.type === 'function' && call.function.name === 'get_weather' &&
      typeof call.id === 'string' && call.id.length > 0, choice);
check('required: arguments validate against the schema', validArgs(call?.function?.arguments), call?.function);

// the tool's result goes back; the model answers with a message
const followup = await client.chat.completions.create({ model: 'stories', tools, max_tokens: 16, temperature: 0,
  messages: [...messages, choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21, "unit": "C"}' }] });
const fm = followup.choices[0].message;
check('tool result: a final assistant message', fm.role === 'assistant' && typeof fm.content === 'string' &&
      fm.content.length > 0 && !fm.tool_calls?.length, fm);

// streamed, iterated by hand
const stream = await client.chat.completions.create({ ...req, stream: true });
const acc = [];
let finishReason = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  const c = chunk.choices[0];
  if (!c) continue;
  if (c.finish_reason) finishReason = c.finish_reason;
  for (const d of c.delta?.tool_calls ?? []) {
    acc[d.index] ??= { id: d.id, name: d.function?.name, arguments: '' };
    acc[d.index].arguments += d.function?.arguments ?? '';
  }
}
check('streamed: the deltas reassemble to the non-streamed call', acc.length === 1 &&
      acc[0].name === call?.function?.name && acc[0].arguments === call?.function?.arguments &&
      finishReason === 'tool_calls' && chunks > 3, { acc, chunks });

// streamed, through the client's stream helper (it accumulates tool-call deltas itself)
const helper = client.beta.chat.completions.stream(req);
const final = await helper.finalChatCompletion();
const hc = final.choices[0].message.tool_calls?.[0];
check('stream helper: the assembled call equals the non-streamed one', hc?.function?.name === call?.function?.name &&
      hc?.function?.arguments === call?.function?.arguments && final.choices[0].finish_reason === 'tool_calls',
      final.choices[0]);
check('stream helper: arguments validate', validArgs(hc?.function?.arguments), hc);
finish();
