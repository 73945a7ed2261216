// surface.mjs ORK MODEL -- every request field of issue 25 honoured (a test of its effect) or
// refused with a 400 naming it, and the llama-server / OpenAI surface: logprobs (chat and
// completions, streaming too), n > 1, several prompts, id_slot, n_predict 0, 64-bit seeds,
// special tokens in string prompts, created per response and ids unique across restarts,
// usage: null on non-final chunks, /apply-template, POST /props, GET /v1/models/{id},
// embeddings, and /slots save / restore / erase.
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, deadline, finish, startServer, post, get, postStream, sleep } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(100);
const P = 'Once upon a time';
const dir = mkdtempSync(join(tmpdir(), 'ork-slots-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const t_start = Date.now() / 1000;
const srv = await startServer(ork, model, ['-np', '2', '-t', '1', '--embeddings', '--props',
                                           '--slot-save-path', dir]);
const msgs = [{ role: 'user', content: 'Tell me a story.' }];

// --- unimplemented fields: 400 naming the field; neutral values pass (constrained output is
// honoured: tests/server/constrained.mjs; tool calls: tests/server/tools.mjs)
for (const [name, val] of [['functions', [{ name: 'f' }]],
                           ['function_call', 'auto'],
                           ['logit_bias', { 1: 5 }], ['mirostat', 2], ['typical_p', 0.5], ['echo', true],
                           ['samplers', ['top_k']]]) {
  const r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 2, [name]: val });
  check(`'${name}' refused with its name`, r.status === 400 && r.json?.error?.message?.includes(`'${name}'`), [r.status, r.text]);
}
let r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 2, response_format: { type: 'text' },
                                                  tools: [], tool_choice: 'none', mirostat: 0, typical_p: 1, frobnicate: 1 });
check('neutral values of those fields and unknown fields pass', r.status === 200, r.text);
r = await post(srv, '/completion', '{"prompt": "Once\\u0000 upon"}');
check('\\u0000 in a string: 400', r.status === 400 && /u0000/.test(r.json?.error?.message), r.text);

// --- logprobs
r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 });
let lp = r.json?.choices?.[0]?.logprobs?.content ?? [];
check('chat logprobs: one entry per token, 3 sorted alternatives, greedy token first', r.status === 200 &&
      lp.length === r.json.usage.completion_tokens && lp.every((e) => e.top_logprobs.length === 3 &&
      e.logprob <= 0 && e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob && e.top_logprobs[0].token === e.token &&
      Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6 && Array.isArray(e.bytes)) &&
      lp.map((e) => e.token).join('') === r.json.choices[0].message.content, r.json?.choices?.[0]);
const chatLp = lp;
let s = await postStream(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 });
const slp = s.events.flatMap((e) => e.choices?.[0]?.logprobs?.content ?? []);
check('chat logprobs streamed == not streamed', JSON.stringify(slp) === JSON.stringify(chatLp), [slp.length, chatLp.length]);
check('usage: null on non-final stream chunks', s.events.every((e) => e.usage === null), s.events.slice(0, 2));
r = await post(srv, '/v1/completions', { prompt: P, max_tokens: 6, temperature: 0, logprobs: 2 });
lp = r.json?.choices?.[0]?.logprobs;
check('completions logprobs: tokens, token_logprobs, top_logprobs, text_offset', lp?.tokens?.length === 6 &&
      lp.token_logprobs.length === 6 && lp.top_logprobs.every((m) => Object.keys(m).length === 2) &&
      lp.text_offset[0] === 0 && lp.tokens.join('') === r.json.choices[0].text, lp);
s = await postStream(srv, '/v1/completions', { prompt: P, max_tokens: 6, temperature: 0, logprobs: 2 });
check('completions logprobs streamed == not streamed',
      JSON.stringify(s.events.flatMap((e) => e.choices?.[0]?.logprobs?.token_logprobs ?? [])) === JSON.stringify(lp?.token_logprobs),
      s.events.length);
r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 2, top_logprobs: 2 });
check('top_logprobs without logprobs: 400', r.status === 400 && /top_logprobs/.test(r.text), r.text);
r = await post(srv, '/completion', { prompt: P, n_predict: 4, temperature: 0, n_probs: 32, return_tokens: true });
check('n_probs 32 (the maximum)', r.json?.completion_probabilities?.every((p, i) => p.top_logprobs.length === 32 &&
      p.id === r.json.tokens[i]), r.text.slice(0, 200));
r = await post(srv, '/completion', { prompt: P, n_predict: 2, n_probs: 33 });
check('n_probs 33: 400', r.status === 400, r.status);

// --- n > 1: choice c samples with seed + c
const one = async (seed) => (await post(srv, '/v1/completions', { prompt: P, max_tokens: 12, temperature: 1.5, seed })).json?.choices?.[0]?.text;
const [s7, s8] = [await one(7), await one(8)];
r = await post(srv, '/v1/completions', { prompt: P, max_tokens: 12, temperature: 1.5, seed: 7, n: 2 });
let ch = r.json?.choices ?? [];
check('n=2: two choices, choice 0 = seed 7, choice 1 = seed 8', ch.length === 2 && ch[0].index === 0 && ch[1].index === 1 &&
      ch[0].text === s7 && ch[1].text === s8 && s7 !== s8 && r.json.usage.completion_tokens === 24 &&
      r.json.usage.prompt_tokens === 5, [ch, s7, s8]);
s = await postStream(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 8, temperature: 1.5, seed: 3, n: 2 });
const byIdx = [0, 1].map((i) => s.events.filter((e) => e.choices?.[0]?.index === i).map((e) => e.choices[0].delta.content ?? '').join(''));
r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 8, temperature: 1.5, seed: 3, n: 2 });
check('n=2 streamed: both choices, each == not streamed', s.done && byIdx[0] === r.json?.choices?.[0]?.message?.content &&
      byIdx[1] === r.json?.choices?.[1]?.message?.content, [byIdx, r.json?.choices]);

// --- several prompts in one /completion: an array
const single = [];
for (const p of [P, 'The cat']) single.push((await post(srv, '/completion', { prompt: p, n_predict: 8, temperature: 0 })).json?.content);
r = await post(srv, '/completion', { prompt: [P, 'The cat'], n_predict: 8, temperature: 0 });
check('several prompts: an array of results, each == its own request', Array.isArray(r.json) && r.json.length === 2 &&
      r.json[0].index === 0 && r.json[1].index === 1 && r.json[0].content === single[0] && r.json[1].content === single[1], r.json);
r = await post(srv, '/v1/completions', { prompt: [P, 'The cat'], max_tokens: 8, temperature: 0 });
check('several prompts on /v1/completions: one choice each', r.json?.choices?.length === 2 &&
      r.json.choices[1].text === single[1], r.json?.choices);
r = await post(srv, '/completion', { prompt: ['a', [1, 2]], n_predict: 1 });
check('a string and token ids as separate prompts are fine', r.status === 200 && r.json.length === 2, r.text);
r = await post(srv, '/completion', { prompt: ['a', 5], n_predict: 1 });
check('string and ids mixed in one prompt: 400', r.status === 400, r.text);

// --- id_slot
r = await post(srv, '/completion', { prompt: P, n_predict: 2, id_slot: 1 });
check('id_slot 1 runs in slot 1', r.json?.id_slot === 1, r.json?.id_slot);
r = await post(srv, '/completion', { prompt: P, n_predict: 2, id_slot: 0 });
check('id_slot 0 runs in slot 0', r.json?.id_slot === 0, r.json?.id_slot);
r = await post(srv, '/completion', { prompt: P, n_predict: 2, id_slot: 5 });
check('id_slot outside the slots: 400', r.status === 400 && /id_slot/.test(r.text), r.text);

// --- n_predict 0: the prompt is evaluated, no token
r = await post(srv, '/completion', { prompt: 'Lily went to the park', n_predict: 0, cache_prompt: false });
check('n_predict 0: no tokens, prompt evaluated', r.json?.tokens_predicted === 0 && r.json?.content === '' &&
      r.json?.tokens_evaluated > 1 && r.json?.timings?.prompt_n === r.json?.tokens_evaluated, r.json);
r = await post(srv, '/v1/completions', { prompt: P, max_tokens: 0 });
check('max_tokens 0: no tokens', r.json?.usage?.completion_tokens === 0 && r.json?.choices?.[0]?.text === '', r.json);

// --- 64-bit seeds, exactly
for (const seed of ['18446744073709551614', '9007199254740993']) {
  const body = `{"prompt": "${P}", "n_predict": 8, "temperature": 1.5, "seed": ${seed}}`;
  const a = await post(srv, '/completion', body), b = await post(srv, '/completion', body);
  check(`seed ${seed} echoed exactly and replayed`, a.text.includes(`"seed":${seed}`) && a.json.content === b.json.content, a.text.slice(-300));
}
const near = async (seed) => (await post(srv, '/completion', `{"prompt": "${P}", "n_predict": 16, "temperature": 1.5, "seed": ${seed}}`)).json?.content;
check('seeds 2^53 and 2^53 + 1 differ (not rounded together)', (await near('9007199254740992')) !== (await near('9007199254740993')));

// --- special tokens in string prompts (llama-server parses them; parse_special false keeps them literal)
const ev = async (extra) => (await post(srv, '/completion', { prompt: '<s>Once', n_predict: 0, cache_prompt: false, ...extra })).json?.tokens_evaluated;
const [parsed, literal] = [await ev({}), await ev({ parse_special: false })];
check('special-token text parsed in a string prompt, literal with parse_special false', parsed === 3 && literal > parsed, { parsed, literal });

// --- created per response, ids unique
r = await post(srv, '/v1/completions', { prompt: P, max_tokens: 1 });
const created1 = r.json?.created, id1 = r.json?.id;
await sleep(1100);
r = await post(srv, '/v1/completions', { prompt: P, max_tokens: 1 });
check('created is per response', r.json?.created > created1 && created1 >= Math.floor(t_start), [created1, r.json?.created]);
check('ids differ between responses', r.json?.id !== id1 && /^cmpl-/.test(id1), [id1, r.json?.id]);

// --- /apply-template, /props POST, /v1/models/{id}
r = await post(srv, '/apply-template', { messages: msgs });
check('/apply-template renders the chat template', r.status === 200 && r.json?.prompt?.includes('Tell me a story.') &&
      r.json.prompt.includes('<|im_start|>assistant'), r.text);
r = await post(srv, '/props', {});
check('POST /props with --props', r.status === 200 && r.json?.success === true, r.text);
r = await get(srv, '/v1/models/stories260K.gguf');
check('GET /v1/models/{id}', r.status === 200 && r.json?.id === 'stories260K.gguf' && r.json?.object === 'model', r.text);
r = await get(srv, '/v1/models/gpt-9');
check('GET /v1/models/{other}: 404', r.status === 404 && r.json?.error?.type === 'not_found_error', r.text);

// --- embeddings
r = await post(srv, '/v1/embeddings', { input: ['a cat sat', 'a cat sat', 'the dog ran far'], model: 'x' });
const E = r.json?.data?.map((d) => d.embedding) ?? [];
const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
check('/v1/embeddings: equal prompts equal, different ones not, normalised', r.status === 200 && E.length === 3 &&
      JSON.stringify(E[0]) === JSON.stringify(E[1]) && JSON.stringify(E[0]) !== JSON.stringify(E[2]) &&
      Math.abs(norm(E[0]) - 1) < 1e-4 && E[0].length === 64 && r.json.object === 'list' &&
      r.json.data[2].index === 2 && r.json.usage.prompt_tokens > 0 && r.json.model === 'x', r.text.slice(0, 300));
r = await post(srv, '/v1/embeddings', { input: 'a cat sat', encoding_format: 'base64' });
const b64 = Buffer.from(r.json?.data?.[0]?.embedding ?? '', 'base64');
const f32 = Array.from(new Float32Array(b64.buffer, b64.byteOffset, b64.length / 4));
check('encoding_format base64 == float', f32.length === 64 && f32.every((x, i) => Math.abs(x - E[0][i]) < 1e-7), f32.length);
r = await post(srv, '/embedding', { content: 'a cat sat' });
check('/embedding (llama-server shape)', Array.isArray(r.json) && r.json[0].index === 0 &&
      r.json[0].embedding[0].every((x, i) => Math.abs(x - E[0][i]) < 1e-7), r.text.slice(0, 200));

// --- slots: save slot 0, restore into slot 1: the same continuation from the restored cache
const req = { prompt: 'Lily and Ben went to the', n_predict: 16, temperature: 0, id_slot: 0 };
const orig = (await post(srv, '/completion', req)).json;
r = await post(srv, '/slots/0?action=save', { filename: 'slot0.bin' });
check('/slots save', r.status === 200 && r.json?.n_saved > 0 && r.json?.n_written > 0 && existsSync(join(dir, 'slot0.bin')) &&
      r.json?.filename === 'slot0.bin' && typeof r.json?.timings?.save_ms === 'number', r.text);
await post(srv, '/completion', { prompt: 'Tom had a red ball', n_predict: 4, id_slot: 1 });
r = await post(srv, '/slots/1?action=restore', { filename: 'slot0.bin' });
check('/slots restore', r.status === 200 && r.json?.n_restored > 0 && r.json?.n_read > 0, r.text);
const again = (await post(srv, '/completion', { ...req, id_slot: 1 })).json;
check('restored slot: same continuation, prompt taken from the restored cache', again?.content === orig?.content &&
      again?.tokens_cached === again?.tokens_evaluated - 1 && again?.id_slot === 1, [again, orig?.content]);
r = await post(srv, '/slots/0?action=erase', {});
check('/slots erase', r.status === 200 && r.json?.n_erased > 0, r.text);
r = await post(srv, '/completion', { ...req, n_predict: 1 });
check('erased slot: nothing cached', r.json?.tokens_cached === 0 || r.json?.id_slot === 1, r.json);
r = await post(srv, '/slots/0?action=save', { filename: '../escape' });
check('/slots save: a path is refused', r.status === 400, r.text);
r = await post(srv, '/slots/0?action=restore', { filename: 'missing.bin' });
check('/slots restore of a missing file: an error, server goes on', r.status >= 400 && r.json?.error, r.text);
r = await post(srv, '/slots/7?action=erase', {});
check('/slots of a slot that does not exist: 400', r.status === 400, r.text);
await srv.stop();

// --- defaults: no --embeddings / --props / --slot-save-path; ids differ across restarts
const d = await startServer(ork, model, ['-t', '1']);
r = await post(d, '/v1/embeddings', { input: 'x' });
check('embeddings without --embeddings: 501', r.status === 501 && /--embeddings/.test(r.text), r.text);
r = await post(d, '/props', {});
check('POST /props without --props: 501', r.status === 501, r.text);
r = await post(d, '/slots/0?action=erase', {});
check('/slots actions without --slot-save-path: 501', r.status === 501, r.text);
r = await post(d, '/v1/completions', { prompt: P, max_tokens: 1 });
check('ids unique across restarts', r.json?.id && r.json.id !== id1, [id1, r.json?.id]);
await d.stop();
finish();
