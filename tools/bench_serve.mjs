// bench_serve.mjs ORK MODEL [CLIENTS...] -- aggregate generation throughput of `ork serve` with
// concurrent streaming clients. For each client count C, C clients each stream REQS requests of
// N_PREDICT tokens (end-of-text ignored, so every request generates exactly N_PREDICT tokens)
// against one server with --parallel max(C); tokens/s = all generated tokens / wall time
// (prompt evaluation included), and "decode only" = decode rows / time in decode passes, from
// the server's /metrics (ork_decode_rows_total, ork_decode_seconds_total).
// Runs once with batched decode (default) and once with --no-batch for comparison.
// Environment: N_PREDICT (default 128), REQS (default 4), THREADS (default: all CPUs), PROMPT
// (one prompt for every request instead of the built-in eight), BASELINE=0 (skip --no-batch).
//
// NPROBS=K switches to the log-probability cost test: a server with 2 slots, client A streams
// plain requests while client B streams the same requests at the same time, once with n_probs 0
// and once with n_probs K, alternated REQS times; it prints A's tokens/s (time to its last
// token) in both cases and the slowdown that B's n_probs causes A.
import { spawn } from 'node:child_process';

const [ork, model, ...rest] = process.argv.slice(2);
const clients = rest.length ? rest.map(Number) : [1, 4, 8];
const nPredict = Number(process.env.N_PREDICT ?? 128);
const reqs = Number(process.env.REQS ?? 4);
const threads = process.env.THREADS;
const fixedPrompt = process.env.PROMPT;
const basePrompts = ['Once upon a time', 'The cat', 'Lily and Ben went', 'One day, a little bird',
                 'Tom had a red ball', 'The sun was', 'Mom said', 'There was a big tree'];
const prompts = fixedPrompt ? [fixedPrompt] : basePrompts;
const baseline = process.env.BASELINE !== '0';

async function start(extra) {
  const args = ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0',
                '-np', String(Math.max(...clients)), ...(threads ? ['-t', threads] : []), ...extra];
  const proc = spawn(ork, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/\S+:(\d+) \(/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', () => reject(new Error('server exited')));
  });
  return { proc, base: `http://127.0.0.1:${port}` };
}

async function streamOne(base, prompt, extra = {}) {
  const r = await fetch(base + '/completion', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, n_predict: nPredict, ignore_eos: true, temperature: 0,
                           stream: true, cache_prompt: false, ...extra }),
  });
  let n = 0, buf = '';
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev.startsWith('data: ')) {
        const j = JSON.parse(ev.slice(6));
        if (!j.stop) n += j.tokens.length;
      }
    }
  }
  return n;
}

async function metrics(base) {
  const t = await (await fetch(base + '/metrics')).text();
  const get = (n) => Number(new RegExp(`^ork_${n} ([0-9.eE+-]+)$`, 'm').exec(t)?.[1] ?? NaN);
  return { rows: get('decode_rows_total'), steps: get('decode_steps_total'),
           decodeS: get('decode_seconds_total') };
}

async function run(base, c) {
  const m0 = await metrics(base);
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: c }, async (_, k) => {
    let n = 0;
    for (let q = 0; q < reqs; q++) n += await streamOne(base, prompts[(k + q) % prompts.length]);
    return n;
  }));
  const ms = performance.now() - t0;
  const tokens = counts.reduce((a, b) => a + b, 0);
  const m1 = await metrics(base);
  const rows = m1.rows - m0.rows, steps = m1.steps - m0.steps;
  return { tokens, ms, tps: tokens * 1000 / ms, decodeTps: rows / (m1.decodeS - m0.decodeS),
           rowsPerStep: rows / steps };
}

if (process.env.NPROBS) {
  const k = Number(process.env.NPROBS);
  clients.length = 0;   // start() sizes --parallel from the client counts
  clients.push(2);
  const srv = await start([]);
  const timed = async (extra) => {
    const t0 = performance.now();
    const [nA] = await Promise.all([streamOne(srv.base, prompts[0]), streamOne(srv.base, prompts[1 % prompts.length], extra)]);
    return nA * 1000 / (performance.now() - t0);
  };
  await timed({});   // warm-up
  const plain = [], probs = [];
  for (let q = 0; q < reqs; q++) {
    plain.push(await timed({}));
    probs.push(await timed({ n_probs: k }));
  }
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(`model ${model}, n_predict ${nPredict}, ${reqs} pairs, threads ${threads ?? 'all'}`);
  console.log(`client A with B at n_probs 0: ${mean(plain).toFixed(2)} tok/s (${plain.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`client A with B at n_probs ${k}: ${mean(probs).toFixed(2)} tok/s (${probs.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`slowdown of A: ${((1 - mean(probs) / mean(plain)) * 100).toFixed(1)} %`);
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.on('exit', r));
  process.exit(0);
}

console.log(`model ${model}, n_predict ${nPredict}, ${reqs} requests per client, ` +
            `threads ${threads ?? 'all'}${fixedPrompt ? `, prompt ${JSON.stringify(fixedPrompt)}` : ''}`);
for (const mode of baseline ? [[], ['--no-batch']] : [[]]) {
  const srv = await start(mode);
  await run(srv.base, 1);   // warm-up
  const name = mode.length ? 'one-at-a-time decode (--no-batch)' : 'batched decode';
  let base1 = 0, baseDec = 0;
  for (const c of clients) {
    const r = await run(srv.base, c);
    if (c === clients[0]) { base1 = r.tps; baseDec = r.decodeTps; }
    console.log(`${name.padEnd(34)} clients ${String(c).padStart(2)}: ${String(r.tokens).padStart(5)} ` +
                `tokens in ${(r.ms / 1000).toFixed(2).padStart(6)} s = ${r.tps.toFixed(1).padStart(7)} tok/s ` +
                `(x${(r.tps / base1).toFixed(2)}) | decode only ${r.decodeTps.toFixed(1).padStart(7)} tok/s ` +
                `(x${(r.decodeTps / baseDec).toFixed(2)}), ${r.rowsPerStep.toFixed(1)} rows/step`);
  }
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.on('exit', r));
}
