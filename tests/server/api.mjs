// api.mjs ORK MODEL -- `ork serve` black-box: the llama-server and OpenAI endpoints, streaming and
// not, against the independent reference of `ork run` (greedy and seeded sampling must give the
// same text through every API), plus tokenize/detokenize, stop strings, n_probs, prompt cache,
// and the information endpoints.
import { execFileSync } from 'node:child_process';
import { check, deadline, finish, startServer, post, get, postStream, metric } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(50);

const P = 'Once upon a time';
const N = 32;
function ork_run(args) {
  return execFileSync(ork, ['run', '-m', model, '-p', P, '-n', String(N), '--no-echo', '-t', '1', ...args],
                      { stdio: ['ignore', 'pipe', 'ignore'] }).toString().replace(/\n$/, '');
}
const ref = ork_run(['--temp', '0']);
const refSeeded = ork_run(['--temp', '0.9', '--seed', '7']);
check('reference text is not empty', ref.length > 20, ref);

const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);

// --- llama-server native API
let r = await post(srv, '/completion', { prompt: P, n_predict: N, temperature: 0 });
check('/completion 200', r.status === 200, r.text);
check('/completion greedy content == ork run --temp 0', r.json?.content === ref, [r.json?.content, ref]);
check('/completion stop fields', r.json?.stop === true && r.json?.stop_type === 'limit' &&
      r.json?.tokens_predicted === N, r.json);
const tm = r.json?.timings ?? {};
check('/completion timings', tm.prompt_n === 5 && tm.predicted_n === N && tm.prompt_ms >= 0 &&
      tm.predicted_ms > 0 && tm.predicted_per_second > 0 && 'prompt_per_second' in tm, tm);

r = await post(srv, '/completion', { prompt: P, n_predict: N, temperature: 0.9, seed: 7 });
check('/completion seeded sampling == ork run --temp 0.9 --seed 7', r.json?.content === refSeeded,
      [r.json?.content, refSeeded]);

r = await post(srv, '/completion', { prompt: P, n_predict: N, temperature: 0 });
check('prompt cache: second request reuses the prefix', r.json?.tokens_cached === 4 &&
      r.json?.timings?.prompt_n === 1 && r.json?.content === ref, r.json);
r = await post(srv, '/completion', { prompt: P, n_predict: N, temperature: 0, cache_prompt: false });
check('cache_prompt false evaluates the whole prompt', r.json?.tokens_cached === 0 &&
      r.json?.content === ref, r.json);

let s = await postStream(srv, '/completion', { prompt: P, n_predict: N, temperature: 0 });
const streamed = s.events.filter((e) => !e.stop).map((e) => e.content).join('');
const last = s.events[s.events.length - 1] ?? {};
check('/completion stream: concatenated content == reference', streamed === ref, [streamed, ref]);
check('/completion stream: content-type', (s.headers.get('content-type') ?? '').startsWith('text/event-stream'));
check('/completion stream: final event has stop and timings', last.stop === true &&
      last.timings?.predicted_n === N && last.stop_type === 'limit', last);
check('/completion stream: token ids in events',
      s.events.filter((e) => !e.stop).reduce((n, e) => n + e.tokens.length, 0) === N);

r = await post(srv, '/completion', { prompt: P, n_predict: N, temperature: 0, stop: ['Lily'] });
check('stop string: text ends before it', r.json?.stop_type === 'word' && r.json?.stopping_word === 'Lily' &&
      ref.startsWith(r.json?.content) && !r.json?.content.includes('Lily') &&
      ref.slice(r.json?.content.length).startsWith('Lily'), r.json);

r = await post(srv, '/completion', { prompt: P, n_predict: 4, temperature: 0, n_probs: 3, return_tokens: true });
const probs = r.json?.completion_probabilities ?? [];
check('n_probs: one entry per token with 3 sorted alternatives', probs.length === 4 &&
      probs.every((p, i) => p.top_logprobs.length === 3 && p.id === r.json.tokens[i] &&
                  p.top_logprobs[0].id === p.id && p.top_logprobs[0].logprob >= p.top_logprobs[1].logprob &&
                  p.logprob <= 0), probs);

// token-id prompt gives the same continuation as the text prompt
const tk = await post(srv, '/tokenize', { content: P, add_special: true });
check('/tokenize', Array.isArray(tk.json?.tokens) && tk.json.tokens.length === 5, tk.text);
r = await post(srv, '/completion', { prompt: tk.json?.tokens, n_predict: N, temperature: 0 });
check('token-id prompt == text prompt', r.json?.content === ref, r.json?.content);
const dt = await post(srv, '/detokenize', { tokens: tk.json?.tokens?.slice(1) });
check('/detokenize round trip', dt.json?.content === P || dt.json?.content === ' ' + P, dt.text);
const tp = await post(srv, '/tokenize', { content: 'Once', with_pieces: true });
check('/tokenize with_pieces', tp.json?.tokens?.[0]?.id >= 0 && typeof tp.json?.tokens?.[0]?.piece === 'string', tp.text);

// --- OpenAI API
r = await post(srv, '/v1/completions', { model: 'x', prompt: P, max_tokens: N, temperature: 0 });
const c0 = r.json?.choices?.[0] ?? {};
check('/v1/completions text == reference', c0.text === ref, [c0.text, ref]);
check('/v1/completions shape', r.json?.object === 'text_completion' && c0.finish_reason === 'length' &&
      r.json?.usage?.completion_tokens === N && r.json?.usage?.prompt_tokens === 5 &&
      r.json?.usage?.total_tokens === N + 5 && r.json?.model === 'x', r.json);
s = await postStream(srv, '/v1/completions', { prompt: P, max_tokens: N, temperature: 0 });
check('/v1/completions stream == reference and [DONE]',
      s.events.map((e) => e.choices[0]?.text ?? '').join('') === ref && s.done &&
      s.events[s.events.length - 1].choices[0].finish_reason === 'length', s.events.slice(-2));

const msgs = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me a story.' }];
r = await post(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 16, temperature: 0 });
const chat = r.json?.choices?.[0]?.message?.content;
check('/v1/chat/completions shape', r.status === 200 && r.json?.object === 'chat.completion' &&
      r.json?.choices?.[0]?.message?.role === 'assistant' && typeof chat === 'string' &&
      r.json?.usage?.completion_tokens > 0, r.json);
s = await postStream(srv, '/v1/chat/completions', { messages: msgs, max_tokens: 16, temperature: 0,
                                                     stream_options: { include_usage: true } });
const deltas = s.events.filter((e) => e.choices.length).map((e) => e.choices[0].delta.content ?? '').join('');
const usageEv = s.events.find((e) => e.usage);
check('/v1/chat/completions stream == non-stream', deltas === chat && s.done, [deltas, chat]);
check('stream: first delta has the role', s.events[0]?.choices?.[0]?.delta?.role === 'assistant');
check('stream_options.include_usage: usage chunk with empty choices', usageEv &&
      usageEv.choices.length === 0 && usageEv.usage.completion_tokens === r.json?.usage?.completion_tokens,
      usageEv);
check('chat.completion.chunk objects', s.events.every((e) => e.object === 'chat.completion.chunk'));

// --- information endpoints
r = await get(srv, '/health');
check('/health', r.status === 200 && r.json?.status === 'ok');
r = await get(srv, '/props');
check('/props', r.json?.total_slots === 2 && r.json?.default_generation_settings?.n_ctx > 0, r.json);
r = await get(srv, '/v1/models');
check('/v1/models', r.json?.object === 'list' && r.json?.data?.[0]?.id === 'stories260K.gguf', r.json);
r = await get(srv, '/slots');
check('/slots', Array.isArray(r.json) && r.json.length === 2 && r.json.every((x) => !x.is_processing), r.json);
r = await get(srv, '/metrics');
check('/metrics', r.status === 200 && metric(r.text, 'ork_requests_total') > 10 &&
      metric(r.text, 'ork_tokens_predicted_total') > 0 && metric(r.text, 'ork_requests_deferred') === 0 &&
      metric(r.text, 'ork_slot_busy{slot="1"}') === 0, r.text.slice(0, 300));

const ex = await srv.stop('SIGTERM');
check('SIGTERM: exit status 0', ex.code === 0, ex);
finish();
