// bench_serve.mjs ORK MODEL [CLIENTS...] -- aggregate generation throughput of `ork serve` with
// concurrent streaming clients. For each client count C, C clients each stream REQS requests of
// N_PREDICT tokens (end-of-text ignored, so every request generates exactly N_PREDICT tokens)
// against one server with --parallel max(C); tokens/s = all generated tokens / wall time.
// Runs once with batched decode (default) and once with --no-batch for comparison.
// Environment: N_PREDICT (default 128), REQS (default 4), THREADS (default: all CPUs).
import { spawn } from 'node:child_process';

const [ork, model, ...rest] = process.argv.slice(2);
const clients = rest.length ? rest.map(Number) : [1, 4, 8];
const nPredict = Number(process.env.N_PREDICT ?? 128);
const reqs = Number(process.env.REQS ?? 4);
const threads = process.env.THREADS;
const prompts = ['Once upon a time', 'The cat', 'Lily and Ben went', 'One day, a little bird',
                 'Tom had a red ball', 'The sun was', 'Mom said', 'There was a big tree'];

async function start(extra) {
  const args = ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0',
                '-np', String(Math.max(...clients)), ...(threads ? ['-t', threads] : []), ...extra];
  const proc = spawn(ork, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', () => reject(new Error('server exited')));
  });
  return { proc, base: `http://127.0.0.1:${port}` };
}

async function streamOne(base, prompt) {
  const r = await fetch(base + '/completion', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, n_predict: nPredict, ignore_eos: true, temperature: 0,
                           stream: true, cache_prompt: false }),
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

async function run(base, c) {
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: c }, async (_, k) => {
    let n = 0;
    for (let q = 0; q < reqs; q++) n += await streamOne(base, prompts[(k + q) % prompts.length]);
    return n;
  }));
  const ms = performance.now() - t0;
  const tokens = counts.reduce((a, b) => a + b, 0);
  return { tokens, ms, tps: tokens * 1000 / ms };
}

console.log(`model ${model}, n_predict ${nPredict}, ${reqs} requests per client, ` +
            `threads ${threads ?? 'all'}`);
for (const mode of [[], ['--no-batch']]) {
  const srv = await start(mode);
  await run(srv.base, 1);   // warm-up
  const name = mode.length ? 'one-at-a-time decode (--no-batch)' : 'batched decode';
  let base1 = 0;
  for (const c of clients) {
    const r = await run(srv.base, c);
    if (c === clients[0]) base1 = r.tps;
    console.log(`${name.padEnd(34)} clients ${String(c).padStart(2)}: ${String(r.tokens).padStart(5)} ` +
                `tokens in ${(r.ms / 1000).toFixed(2)} s = ${r.tps.toFixed(0).padStart(6)} tok/s ` +
                `(x${(r.tps / base1).toFixed(2)} vs ${clients[0]} client)`);
  }
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.on('exit', r));
}
