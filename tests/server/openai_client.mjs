// openai_client.mjs ORK MODEL NPM_PREFIX -- the official `openai` npm client against `ork serve`:
// a chat completion, a streamed chat completion (with usage), a text completion, the model
// list and models.retrieve, logprobs (chat, streamed too), n=2 and embeddings (the client asks
// for base64 and decodes it). The client validates response shapes and SSE framing itself.
import { createRequire } from 'node:module';
import { check, deadline, finish, startServer } from './harness.mjs';

const [ork, model, prefix] = process.argv.slice(2);
deadline(50);
const require = createRequire(prefix + '/node_modules/');
const OpenAI = require('openai');

const srv = await startServer(ork, model, ['-np', '2', '-t', '1', '--embeddings']);
const client = new OpenAI({ baseURL: srv.base + '/v1', apiKey: 'sk-no-key-required', maxRetries: 0,
                            timeout: 20000 });

const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const chat = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 24,
                                                     temperature: 0 });
const text = chat.choices[0].message.content;
check('chat completion', typeof text === 'string' && text.length > 0 && chat.choices[0].message.role ===
      'assistant' && chat.usage.completion_tokens === 24 && chat.choices[0].finish_reason === 'length', chat);

const stream = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 24,
                                                       temperature: 0, stream: true,
                                                       stream_options: { include_usage: true } });
let streamed = '', finishReason = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  const c = chunk.choices[0];
  if (!c) continue;
  streamed += c.delta?.content ?? '';
  if (c.finish_reason) finishReason = c.finish_reason;
}
check('streamed chat completion == non-streamed', streamed === text && chunks > 2, [streamed, text]);
check('streamed chat: finish_reason and usage', finishReason === 'length' && usage?.completion_tokens === 24,
      { finishReason, usage });

const cmpl = await client.completions.create({ model: 'stories', prompt: 'Once upon a time', max_tokens: 16,
                                               temperature: 0 });
check('text completion', typeof cmpl.choices[0].text === 'string' && cmpl.usage.completion_tokens === 16, cmpl);

const models = await client.models.list();
check('models.list', models.data.length === 1 && models.data[0].id === 'stories260K.gguf', models.data);

const m = await client.models.retrieve('stories260K.gguf');
check('models.retrieve', m.id === 'stories260K.gguf' && m.object === 'model', m);

const lp = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 8, temperature: 0,
                                                  logprobs: true, top_logprobs: 2 });
const content = lp.choices[0].logprobs?.content ?? [];
check('logprobs: one entry per token with 2 alternatives', content.length === 8 &&
      content.every((e) => e.top_logprobs.length === 2 && e.logprob <= 0) &&
      content.map((e) => e.token).join('') === lp.choices[0].message.content, lp.choices[0]);
const lps = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 8, temperature: 0,
                                                   logprobs: true, top_logprobs: 2, stream: true });
const streamedLp = [];
for await (const chunk of lps) streamedLp.push(...(chunk.choices[0]?.logprobs?.content ?? []));
check('streamed logprobs == not streamed', JSON.stringify(streamedLp) === JSON.stringify(content), streamedLp.length);

const two = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 8, temperature: 1.2,
                                                   seed: 5, n: 2 });
check('n=2: two choices', two.choices.length === 2 && two.choices[0].index === 0 && two.choices[1].index === 1 &&
      two.usage.completion_tokens === 16, two.choices);

const emb = await client.embeddings.create({ model: 'stories', input: ['a cat sat', 'a cat sat', 'the dog ran'] });
const [e0, e1, e2] = emb.data.map((d) => Array.from(d.embedding));
const norm = Math.sqrt(e0.reduce((a, x) => a + x * x, 0));
check('embeddings: equal inputs equal, different not, unit length', emb.data.length === 3 && e0.length === 64 &&
      JSON.stringify(e0) === JSON.stringify(e1) && JSON.stringify(e0) !== JSON.stringify(e2) &&
      Math.abs(norm - 1) < 1e-4, { n: emb.data.length, len: e0?.length, norm });

try {
  await client.chat.completions.create({ model: 'stories', messages: 'oops' });
  check('bad request raises BadRequestError', false);
} catch (e) {
  check('bad request raises BadRequestError', e.status === 400 && /messages/.test(e.message), e.message);
}

await srv.stop();
finish();
