// speculative.mjs ORK MODEL DRAFT -- `ork serve` speculative decoding, black-box:
//   - greedy requests with speculation (a Q8_0 draft model; prompt lookup; speculative.n_max
//     and the "speculative" object) give the same tokens as without, stop strings and n_probs
//     included, streamed too;
//   - /metrics reports drafted / accepted tokens, acceptance, tau and the verify-M histogram;
//   - on the simulator (--device sim), concurrent requests decoded together (batched NPU decode,
//     --parallel 3) give the same tokens as one request at a time, with and without
//     speculation, and /metrics carries the twin's modelled figures.
import { check, deadline, finish, startServer, post, get, postStream, metric } from './harness.mjs';

const [ork, model, draft] = process.argv.slice(2);
deadline(110);

const prompts = ['Once upon a time', 'Lily and Ben went to the park. Lily and Ben', 'The cat'];
const req = (p, extra = {}) => ({ prompt: p, n_predict: 64, temperature: 0, return_tokens: true,
                                  cache_prompt: false, ...extra });
const same = (a, b) => a.status === 200 && b.status === 200 && a.json.tokens.length > 0 &&
  JSON.stringify(a.json.tokens) === JSON.stringify(b.json.tokens) && a.json.content === b.json.content;

// --- a draft model on the CPU target
{
  const srv = await startServer(ork, model, ['-np', '2', '-c', '256', '-t', '1', '--device', 'cpu',
                                             '-md', draft, '--draft-max', '8', '-v']);
  const m0 = (await get(srv, '/metrics')).text;
  for (const p of prompts) {
    const off = await post(srv, '/completion', req(p, { 'speculative.n_max': 0 }));
    const on = await post(srv, '/completion', req(p));
    const obj = await post(srv, '/completion', req(p, { speculative: { n_max: 3, n_min: 1 } }));
    check(`draft model: greedy tokens == plain ('${p}')`, same(off, on) && same(off, obj),
          [off.json?.content, on.json?.content, obj.json?.content]);
    const so = await post(srv, '/completion', req(p, { stop: ['Lily', 'park'], 'speculative.n_max': 0 }));
    const sp = await post(srv, '/completion', req(p, { stop: ['Lily', 'park'] }));
    check(`draft model: stop strings end at the same place ('${p}')`,
          sp.json.content === so.json.content && sp.json.stop_type === so.json.stop_type,
          [so.json?.content, sp.json?.content]);
  }
  const po = await post(srv, '/completion', req(prompts[0], { n_probs: 3, 'speculative.n_max': 0 }));
  const ps = await post(srv, '/completion', req(prompts[0], { n_probs: 3 }));
  const probsClose = po.json.completion_probabilities?.length === ps.json.completion_probabilities?.length &&
    po.json.completion_probabilities.every((e, i) => {
      const f = ps.json.completion_probabilities[i];
      return e.id === f.id && Math.abs(e.logprob - f.logprob) < 1e-3 &&
        e.top_logprobs.every((t, k) => t.id === f.top_logprobs[k].id);
    });
  check('draft model: n_probs with speculation == without', probsClose);
  const st = await postStream(srv, '/completion', req(prompts[1]));
  const plain = await post(srv, '/completion', req(prompts[1], { 'speculative.n_max': 0 }));
  const streamed = st.events.map((e) => e.content ?? '').join('');
  check('draft model: streamed text == plain', streamed === plain.json.content,
        [streamed, plain.json?.content]);
  const m1 = (await get(srv, '/metrics')).text;
  const drafted = metric(m1, 'ork_spec_drafted_total') - (metric(m0, 'ork_spec_drafted_total') || 0);
  const accepted = metric(m1, 'ork_spec_accepted_total');
  const rate = metric(m1, 'ork_spec_acceptance_rate'), tau = metric(m1, 'ork_spec_tau');
  check('/metrics: drafted and accepted tokens', drafted > 0 && accepted > 0 && accepted <= drafted,
        { drafted, accepted });
  check('/metrics: acceptance rate and tau', rate > 0 && rate <= 1 && tau > 1, { rate, tau });
  const inf = metric(m1, 'ork_spec_verify_rows_bucket{le="32"}');
  const le9 = metric(m1, 'ork_spec_verify_rows_bucket{le="9"}');
  check('/metrics: verify-M histogram (at most 1 + --draft-max rows)',
        inf > 0 && le9 === inf && metric(m1, 'ork_spec_verify_rows_count') === inf, { inf, le9 });
  const sampled = { temperature: 0.8, seed: 5, 'speculative.n_max': 4 };
  const a = await post(srv, '/completion', req(prompts[0], sampled));
  const b = await post(srv, '/completion', req(prompts[0], sampled));
  check('draft model: a sampled request is reproducible from its seed',
        a.status === 200 && a.json.tokens.length > 0 && JSON.stringify(a.json.tokens) === JSON.stringify(b.json.tokens),
        [a.json?.content, b.json?.content]);
  const ie = await post(srv, '/completion', req(prompts[0], { ignore_eos: true, n_predict: 100, temperature: 50, top_k: 0, top_p: 1, min_p: 0, seed: 3 }));
  check('draft model: ignore_eos runs to n_predict', ie.status === 200 && ie.json.tokens_predicted === 100, ie.json?.stop_type);
  check('--verbose logs per-request acceptance', /speculative: \d+ drafted, \d+ accepted/.test(srv.stderr));
  await srv.stop();
}

// --- prompt lookup, asked for per request from a server without --draft-model / --lookup
{
  const srv = await startServer(ork, model, ['-np', '1', '-c', '256', '-t', '1', '--device', 'cpu']);
  for (const p of prompts) {
    const off = await post(srv, '/completion', req(p));
    const on = await post(srv, '/completion', req(p, { 'speculative.n_max': 6 }));
    check(`prompt lookup: greedy tokens == plain ('${p}')`, same(off, on),
          [off.json?.content, on.json?.content]);
  }
  const bad = await post(srv, '/completion', req(prompts[0], { 'speculative.n_max': -1 }));
  check('speculative.n_max out of range is a 400 naming it', bad.status === 400 &&
        /speculative.n_max/.test(bad.text), bad.text);
  const m = (await get(srv, '/metrics')).text;
  check('/metrics: lookup drafted tokens', metric(m, 'ork_spec_drafted_total') > 0);
  await srv.stop();
}

// --- the simulator: batched decode (M = 3 slots) == one at a time; speculation on the sim
{
  const srv = await startServer(ork, model, ['-np', '3', '-c', '256', '-t', '1', '--device', 'sim',
                                             '--no-pack', '-md', draft, '--draft-max', '4']);
  const seq = [];
  for (const p of prompts) seq.push(await post(srv, '/completion', req(p, { 'speculative.n_max': 0 })));
  const m0 = (await get(srv, '/metrics')).text;
  const par = await Promise.all(prompts.map((p) => post(srv, '/completion', req(p, { 'speculative.n_max': 0 }))));
  const m1 = (await get(srv, '/metrics')).text;
  check('sim: 3 concurrent greedy requests == one at a time', par.every((r, i) => same(r, seq[i])),
        par.map((r, i) => [r.json?.content, seq[i].json?.content]));
  const steps = metric(m1, 'ork_decode_steps_total') - metric(m0, 'ork_decode_steps_total');
  const rows = metric(m1, 'ork_decode_rows_total') - metric(m0, 'ork_decode_rows_total');
  check('sim: decode steps were batched (rows per step > 1.5)', steps > 0 && rows / steps > 1.5,
        { steps, rows });
  const spec = await Promise.all(prompts.map((p) => post(srv, '/completion', req(p))));
  check('sim: concurrent speculative requests == plain one at a time',
        spec.every((r, i) => same(r, seq[i])), spec.map((r) => r.json?.content));
  const m2 = (await get(srv, '/metrics')).text;
  check('sim: /metrics has the twin\'s modelled time and steps',
        metric(m2, 'ork_twin_modelled_seconds_total') > 0 && metric(m2, 'ork_twin_steps_total') > 0 &&
        /modelled/i.test(m2));
  await srv.stop();
}

finish();
