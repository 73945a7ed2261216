// harness.mjs -- shared pieces of the `ork serve` black-box tests: start the real binary on a
// free loopback port (--port 0; the port is read from its "listening on" line), HTTP helpers
// (JSON, server-sent events), checks, and a hard deadline that kills the server.
import { spawn } from 'node:child_process';

let failures = 0;
const servers = new Set();

export function check(name, cond, detail) {
  if (cond) {
    console.log(`ok   ${name}`);
  } else {
    failures++;
    console.log(`FAIL ${name}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 400) : ''}`);
  }
}

function killAll() {
  for (const s of servers) {
    try { s.proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
}
process.on('exit', killAll);

// Whole-test deadline: a hung request fails the test instead of hanging CTest.
export function deadline(seconds) {
  setTimeout(() => {
    console.log(`FAIL deadline of ${seconds} s exceeded`);
    killAll();
    process.exit(1);
  }, seconds * 1000).unref();
}

export function finish() {
  killAll();
  console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}

// opts.loading: resolve at the "loading ..." line (the server listens before its model loads).
export async function startServer(ork, model, args = [], opts = {}) {
  const proc = spawn(ork, ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0', ...args],
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  const srv = { proc, stderr: '', exited: null };
  servers.add(srv);
  proc.stderr.on('data', (d) => { srv.stderr += d; });
  srv.exit = new Promise((resolve) => proc.on('exit', (code, sig) => {
    srv.exited = { code, sig };
    servers.delete(srv);
    resolve(srv.exited);
  }));
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error('server did not start: ' + srv.stderr)), 20000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = (opts.loading ? /answers 503 on http:\/\/\S+:(\d+) / : /listening on http:\/\/\S+:(\d+) \(/).exec(out);
      if (m) { clearTimeout(t); resolve(Number(m[1])); }
    });
    proc.on('exit', () => { clearTimeout(t); reject(new Error('server exited: ' + srv.stderr)); });
  });
  srv.port = port;
  srv.base = `http://127.0.0.1:${port}`;
  srv.stop = async (signal = 'SIGTERM') => {
    if (!srv.exited) proc.kill(signal);
    return srv.exit;
  };
  return srv;
}

export async function post(srv, path, body, headers = {}) {
  const r = await fetch(srv.base + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

export async function get(srv, path, headers = {}) {
  const r = await fetch(srv.base + path, { headers });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

// POST a streaming request and collect its events: {status, events: [parsed JSON], done: saw
// "data: [DONE]", raw}.
export async function postStream(srv, path, body, opts = {}) {
  const r = await fetch(srv.base + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...(opts.headers ?? {}) },
    body: JSON.stringify({ ...body, stream: true }), signal: opts.signal,
  });
  const events = [];
  let raw = '', done = false;
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    raw += dec.decode(chunk, { stream: true });
    let i;
    while ((i = raw.indexOf('\n\n')) >= 0) {
      const ev = raw.slice(0, i);
      raw = raw.slice(i + 2);
      if (!ev.startsWith('data: ')) continue;
      const data = ev.slice(6);
      if (data === '[DONE]') { done = true; continue; }
      events.push(JSON.parse(data));
      if (opts.onEvent) opts.onEvent(events[events.length - 1], events.length);
    }
  }
  return { status: r.status, headers: r.headers, events, done, rest: raw };
}

export function metric(text, name) {
  const m = new RegExp(`^${name.replace(/[{}"]/g, (c) => '\\' + c)} ([0-9.eE+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll fn() every 10 ms until it returns truthy or ms elapse; returns the elapsed ms or -1.
export async function waitFor(fn, ms) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await fn()) return Date.now() - t0;
    await sleep(10);
  }
  return -1;
}

// A raw HTTP/1.1 exchange over one socket: send `data`, optionally half-close (end) our side,
// collect everything until the server closes or ms pass. Returns {status, headers, body}.
import net from 'node:net';
export function rawRequest(port, data, { halfClose = false, ms = 5000, localAddress } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true, localAddress });
    let buf = '';
    const done = () => {
      clearTimeout(t);
      sock.destroy();
      const m = /^HTTP\/1\.[01] (\d+)/.exec(buf);
      const i = buf.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, head: i >= 0 ? buf.slice(0, i) : buf,
                body: i >= 0 ? buf.slice(i + 4) : '' });
    };
    const t = setTimeout(done, ms);
    sock.on('connect', () => { sock.write(data); if (halfClose) sock.end(); });
    sock.on('data', (d) => { buf += d; });
    sock.on('end', done);
    sock.on('error', done);
  });
}
