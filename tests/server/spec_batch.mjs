// spec_batch.mjs ORK MODEL DRAFT -- `ork serve --parallel 4`: the speculating slots' verify rows
// join the plain slots' rows in one forward (M = every row), black-box:
//   - four concurrent greedy requests, two speculating (speculative.n_max > 0: prompt lookup,
//     then the Q8_0 draft model) and two plain, give the same tokens as the same requests one
//     at a time, on --device cpu (with the twin, --twin) and on --device sim;
//   - the verify forwards were shared: while they ran concurrently, the target's forwards (the
//     twin's steps) were one per scheduler step (plus one prefill per request), where a verify
//     in a forward of its own adds one per speculating slot and step.
import { check, deadline, finish, startServer, post, get, metric } from './harness.mjs';

const [ork, model, draft] = process.argv.slice(2);
deadline(110);

const prompts = ['Once upon a time', 'Lily and Ben went to the park. Lily and Ben',
                 'The cat sat on the mat. The cat', 'One day, a little girl'];
const spec = [0, 6, 0, 4];
const req = (i) => ({ prompt: prompts[i], n_predict: 96, temperature: 0, return_tokens: true,
                      cache_prompt: false, 'speculative.n_max': spec[i] });
const same = (a, b) => a.status === 200 && b.status === 200 && a.json.tokens.length > 0 &&
  JSON.stringify(a.json.tokens) === JSON.stringify(b.json.tokens) && a.json.content === b.json.content;

for (const dev of [['--device', 'cpu', '--twin'], ['--device', 'sim', '--no-pack']]) {
  const name = dev[1];
  const srv = await startServer(ork, model, ['-np', '4', '-c', '256', '-t', '1', ...dev, '-md', draft,
                                             '--lookup', '3', '--draft-max', '6']);
  const seq = [];
  for (let i = 0; i < prompts.length; i++) seq.push(await post(srv, '/completion', req(i)));
  const m0 = (await get(srv, '/metrics')).text;
  const par = await Promise.all(prompts.map((_, i) => post(srv, '/completion', req(i))));
  const m1 = (await get(srv, '/metrics')).text;
  check(`${name}: 4 concurrent greedy requests, 2 speculating, == one at a time`,
        par.every((r, i) => same(r, seq[i])),
        par.map((r, i) => [r.json?.content, seq[i].json?.content]));
  const d = (k) => metric(m1, k) - (metric(m0, k) || 0);
  const forwards = d('ork_twin_steps_total'), steps = d('ork_decode_steps_total');
  const rows = d('ork_decode_rows_total');
  check(`${name}: the speculating slots drafted and verified`, d('ork_spec_drafted_total') > 0 &&
        d('ork_spec_steps_total') > 0);
  // on the CPU a step of stories260K takes well under a millisecond and the requests may
  // arrive a few steps apart: the overlap is checked where a step is slower (the simulator)
  if (name === 'sim')
    check(`${name}: the slots decoded together (slots per step > 1.5)`, steps > 0 && rows / steps > 1.5,
          { steps, rows });
  check(`${name}: one target forward per decode step (plus the 4 prefills)`,
        forwards > 0 && forwards <= steps + prompts.length, { forwards, steps });
  await srv.stop();
}

finish();
