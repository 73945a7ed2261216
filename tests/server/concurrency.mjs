// concurrency.mjs ORK MODEL -- slots and the scheduler, black-box: 8 concurrent greedy requests
// (batched decode, M up to 8) give the same tokens as the same requests one at a time; a client
// that disconnects frees its slot promptly; a full queue answers 503 with Retry-After; SIGTERM
// ends an in-flight stream cleanly (final event, [DONE]) and the process exits 0.
import { check, deadline, finish, startServer, post, get, postStream, metric, waitFor, sleep }
  from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(55);

const prompts = ['Once upon a time', 'The cat', 'Lily and Ben went', 'One day, a little bird',
                 'Tom had a red ball', 'The sun was', 'Mom said', 'There was a big tree'];

// --- 8 parallel requests == one at a time
{
  const srv = await startServer(ork, model, ['-np', '8', '-c', '256', '-t', '1']);
  const req = (p) => ({ prompt: p, n_predict: 96, temperature: 0, return_tokens: true, cache_prompt: false });
  const seq = [];
  for (const p of prompts) seq.push((await post(srv, '/completion', req(p))).json);
  const m0 = (await get(srv, '/metrics')).text;
  const par = await Promise.all(prompts.map((p) => post(srv, '/completion', req(p))));
  const m1 = (await get(srv, '/metrics')).text;
  check('8 parallel requests all 200', par.every((r) => r.status === 200));
  check('8 parallel greedy token ids == one at a time',
        par.every((r, i) => JSON.stringify(r.json.tokens) === JSON.stringify(seq[i].tokens) &&
                  r.json.content === seq[i].content && seq[i].tokens.length > 0),
        par.map((r, i) => [r.json?.content, seq[i]?.content]));
  const steps = metric(m1, 'ork_decode_steps_total') - metric(m0, 'ork_decode_steps_total');
  const rows = metric(m1, 'ork_decode_rows_total') - metric(m0, 'ork_decode_rows_total');
  check('decode steps were batched (rows per step > 2)', steps > 0 && rows / steps > 2, { steps, rows });
  // streaming, concurrently, OpenAI API
  const streams = await Promise.all(prompts.map((p) =>
    postStream(srv, '/v1/completions', { prompt: p, max_tokens: 96, temperature: 0, cache_prompt: false })));
  check('8 parallel streams == one at a time',
        streams.every((s, i) => s.done && s.events.map((e) => e.choices[0]?.text ?? '').join('') === seq[i].content),
        streams.map((s) => s.events.map((e) => e.choices[0]?.text ?? '').join('')));
  await srv.stop();
}

// --- disconnect frees the slot; full queue -> 503; SIGTERM ends a stream cleanly
{
  const srv = await startServer(ork, model, ['-np', '1', '--queue', '1', '-c', '8192', '-t', '1']);
  const long = { prompt: 'Once upon a time', n_predict: 8000, ignore_eos: true, temperature: 0 };
  const busy = async () => (await get(srv, '/slots')).json?.[0]?.is_processing === true;

  // A: a long stream that we abort after a few events
  const ac = new AbortController();
  let got = 0;
  const a = postStream(srv, '/completion', long, { signal: ac.signal, onEvent: () => { got++; } })
    .catch(() => 'aborted');
  check('long request occupies the slot', (await waitFor(busy, 5000)) >= 0);

  // B waits in the queue; C finds the queue full
  const acB = new AbortController();
  const b = postStream(srv, '/completion', long, { signal: acB.signal }).catch(() => 'aborted');
  const queued = await waitFor(async () => metric((await get(srv, '/metrics')).text, 'ork_requests_deferred') === 1, 5000);
  check('second request waits in the queue', queued >= 0);
  const c = await post(srv, '/completion', { prompt: 'x', n_predict: 2 });
  check('full queue: 503 with Retry-After and an error body', c.status === 503 &&
        c.headers.get('retry-after') === '1' && c.json?.error?.code === 503, c.text);

  await waitFor(async () => got > 2, 5000);
  ac.abort();
  await a;
  // B takes the slot once A's client is gone: A's slot was freed promptly
  const t0 = Date.now();
  const moved = await waitFor(async () => {
    const sl = (await get(srv, '/slots')).json?.[0];
    return sl && sl.is_processing && sl.n_decoded < 8000 && metric((await get(srv, '/metrics')).text, 'ork_requests_deferred') === 0;
  }, 3000);
  check('disconnected client: its slot goes to the queued request promptly', moved >= 0, Date.now() - t0);
  acB.abort();
  await b;
  const idle = await waitFor(async () => !(await busy()), 3000);
  check('disconnected client: slot idle again', idle >= 0 && idle < 1000, idle);
  const m = (await get(srv, '/metrics')).text;
  check('aborted generations stopped early', metric(m, 'ork_tokens_predicted_total') < 2 * 8000 &&
        metric(m, 'ork_completions_total') >= 2, m.match(/^ork_(tokens_predicted|completions)_total .*/mg));
  const ok = await post(srv, '/completion', { prompt: 'Once upon a time', n_predict: 4, temperature: 0 });
  check('next request succeeds', ok.status === 200 && ok.json?.tokens_predicted === 4, ok.text);

  // SIGTERM during a stream: the stream ends with its final event and [DONE]
  let n = 0;
  const s = postStream(srv, '/v1/completions', { prompt: 'Once', max_tokens: 8000, ignore_eos: true },
                       { onEvent: () => { n++; } });
  await waitFor(async () => n > 2, 5000);
  srv.proc.kill('SIGTERM');
  const res = await s;
  const lastEv = res.events[res.events.length - 1];
  check('SIGTERM: stream ends with a finish_reason and [DONE]', res.done &&
        lastEv?.choices?.[0]?.finish_reason === 'length', lastEv);
  const ex = await srv.exit;
  check('SIGTERM: exit status 0', ex.code === 0, [ex, srv.stderr]);
}
finish();
