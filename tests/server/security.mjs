// security.mjs ORK MODEL -- `ork serve` access policy, black-box: API keys (401 in the OpenAI
// shape without or with a wrong key, 200 with one from --api-key or --api-key-file; /health and
// /metrics public unless --metrics-auth), the origin policy (no CORS headers by default, 403 for
// a foreign Origin, JSON-only POSTs so a cross-origin "simple" request cannot drive them, CORS
// preflight for an allowed origin), JSON bodies for transport errors (405 with Allow, 414, 431,
// 505), a half-closed client still answered, /health 503 while the model loads, and the
// warning for a non-loopback --host without a key.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, deadline, finish, startServer, post, get, postStream, rawRequest, sleep } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(60);
const dir = mkdtempSync(join(tmpdir(), 'ork-sec-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const keyFile = join(dir, 'keys');
writeFileSync(keyFile, '\n  key-from-file  \n\n');
const good = { prompt: 'Once upon a time', n_predict: 4, temperature: 0 };
const isAuthErr = (r) => r.status === 401 && r.json?.error?.code === 401 &&
  r.json?.error?.type === 'authentication_error' && typeof r.json?.error?.message === 'string';

// --- API keys
{
  const srv = await startServer(ork, model, ['-t', '1', '--api-key', 'sk-one', '--api-key', 'sk-two',
                                             '--api-key-file', keyFile]);
  let r = await get(srv, '/v1/models');
  check('no key: 401 in the OpenAI error shape', isAuthErr(r) &&
        r.headers.get('www-authenticate') === 'Bearer', [r.status, r.text]);
  r = await get(srv, '/v1/models', { Authorization: 'Bearer sk-wrong' });
  check('wrong key: 401', isAuthErr(r), [r.status, r.text]);
  r = await get(srv, '/v1/models', { Authorization: 'Bearer sk-on' });
  check('key prefix: 401', isAuthErr(r), [r.status, r.text]);
  r = await post(srv, '/completion', good);
  check('POST without key: 401', isAuthErr(r), [r.status, r.text]);
  r = await get(srv, '/v1/models', { Authorization: 'Bearer sk-one' });
  check('right key (--api-key): 200', r.status === 200 && r.json?.object === 'list', r.text);
  r = await post(srv, '/completion', good, { Authorization: 'Bearer sk-two' });
  check('second --api-key: 200', r.status === 200 && r.json?.tokens_predicted === 4, r.text);
  r = await post(srv, '/completion', good, { Authorization: 'Bearer key-from-file' });
  check('key from --api-key-file: 200', r.status === 200, r.text);
  r = await post(srv, '/tokenize', { content: 'a' }, { 'X-Api-Key': 'sk-one' });
  check('X-Api-Key header: 200', r.status === 200, r.text);
  const s = await postStream(srv, '/v1/completions', { prompt: 'Once', max_tokens: 4 },
                             { headers: { Authorization: 'Bearer sk-one' } });
  check('stream with key', s.status === 200 && s.done, s.status);
  r = await get(srv, '/health');
  check('/health is public', r.status === 200 && r.json?.status === 'ok', r.text);
  r = await get(srv, '/metrics');
  check('/metrics is public by default', r.status === 200 && r.text.includes('ork_requests_total'));
  for (const p of ['/props', '/slots', '/v1/models/stories260K.gguf']) {
    r = await get(srv, p);
    check(`${p} needs the key`, isAuthErr(r), r.status);
  }
  await srv.stop();
  const m = await startServer(ork, model, ['-t', '1', '--api-key', 'sk-one', '--metrics-auth']);
  r = await get(m, '/metrics');
  check('--metrics-auth: /metrics 401 without key', isAuthErr(r), r.status);
  r = await get(m, '/metrics', { Authorization: 'Bearer sk-one' });
  check('--metrics-auth: /metrics 200 with key', r.status === 200, r.status);
  await m.stop();
}

// --- origin policy and transport errors (default server)
{
  const srv = await startServer(ork, model, ['-t', '1']);
  let r = await post(srv, '/completion', good);
  check('no CORS header by default', r.status === 200 && r.headers.get('access-control-allow-origin') === null,
        [...r.headers.keys()]);
  r = await get(srv, '/health');
  check('no CORS header on GET', r.headers.get('access-control-allow-origin') === null);
  r = await post(srv, '/completion', JSON.stringify(good), { 'Content-Type': 'text/plain' });
  check('text/plain POST refused (415, JSON error)', r.status === 415 && r.json?.error?.code === 415 &&
        /application\/json/.test(r.json?.error?.message), [r.status, r.text]);
  r = await post(srv, '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
                 { 'Content-Type': 'application/x-www-form-urlencoded' });
  check('form-urlencoded POST refused', r.status === 415, r.status);
  r = await post(srv, '/completion', JSON.stringify(good), { 'Content-Type': 'application/json; charset=utf-8' });
  check('application/json with charset accepted', r.status === 200, r.text);
  r = await post(srv, '/completion', good, { Origin: 'http://evil.example' });
  check('foreign Origin: 403', r.status === 403 && r.json?.error?.code === 403, [r.status, r.text]);
  let o = await fetch(srv.base + '/completion', { method: 'OPTIONS', headers: {
    Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' } });
  check('preflight from a foreign origin: 403 without CORS headers', o.status === 403 &&
        o.headers.get('access-control-allow-origin') === null, o.status);
  r = await get(srv, '/completion');
  check('405 with Allow and a JSON body', r.status === 405 && r.json?.error?.code === 405 &&
        /POST/.test(r.headers.get('allow') ?? ''), [r.headers.get('allow'), r.text]);
  r = await get(srv, '/nope');
  check('404 JSON', r.status === 404 && r.json?.error?.type === 'not_found_error', r.text);
  r = await get(srv, '/health?' + 'x'.repeat(9000));
  check('414 JSON for a long URL', r.status === 414 && r.json?.error?.code === 414, [r.status, r.text.slice(0, 100)]);
  r = await get(srv, '/health', { 'X-Big': 'y'.repeat(20000) });
  check('431 JSON for big headers', r.status === 431 && r.json?.error?.code === 431, [r.status, r.text.slice(0, 100)]);
  const v = await rawRequest(srv.port, 'GET /health HTTP/1.2\r\nHost: x\r\n\r\n');
  check('505 JSON for an unknown HTTP version', v.status === 505 && /"code":505/.test(v.body), v.head);
  // a client that half-closes after sending still gets the answer
  const body = JSON.stringify(good);
  const h = await rawRequest(srv.port, `POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
                             `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, { halfClose: true });
  check('half-closed client gets its answer', h.status === 200 && /"tokens_predicted":4/.test(h.body), h.head);
  await srv.stop();
}

// --- CORS for an allowed origin
{
  const srv = await startServer(ork, model, ['-t', '1', '--cors-origin', 'http://app.example']);
  const o = await fetch(srv.base + '/v1/chat/completions', { method: 'OPTIONS', headers: {
    Origin: 'http://app.example', 'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'content-type, authorization' } });
  check('preflight for an allowed origin: 204 with CORS headers', o.status === 204 &&
        o.headers.get('access-control-allow-origin') === 'http://app.example' &&
        /POST/.test(o.headers.get('access-control-allow-methods') ?? '') &&
        /Authorization/i.test(o.headers.get('access-control-allow-headers') ?? '') &&
        /Content-Type/i.test(o.headers.get('access-control-allow-headers') ?? ''),
        [o.status, [...o.headers.entries()]]);
  const r = await post(srv, '/completion', good, { Origin: 'http://app.example' });
  check('allowed origin: reply carries Access-Control-Allow-Origin', r.status === 200 &&
        r.headers.get('access-control-allow-origin') === 'http://app.example' &&
        /Origin/.test(r.headers.get('vary') ?? ''), [...r.headers.entries()]);
  const f = await post(srv, '/completion', good, { Origin: 'http://other.example' });
  check('other origin still 403', f.status === 403, f.status);
  await srv.stop();
}

// --- /health while the model loads: the model is a FIFO nobody writes yet, so loading blocks
{
  const fifo = join(dir, 'model.gguf');
  execFileSync('mkfifo', [fifo]);
  const srv = await startServer(ork, fifo, ['-t', '1'], { loading: true });
  let r = await get(srv, '/health');
  check('/health 503 {"status": "loading model"} while loading', r.status === 503 &&
        r.json?.status === 'loading model' && r.json?.error?.code === 503, [r.status, r.text]);
  r = await post(srv, '/completion', good);
  check('other endpoints 503 while loading', r.status === 503 && r.json?.error?.message === 'Loading model', r.text);
  srv.proc.kill('SIGKILL');
  await srv.exit;
}

// --- non-loopback host without a key: a warning
{
  const srv = await startServer(ork, model, ['-t', '1', '--host', '0.0.0.0']).catch(() => null);
  if (srv) {
    await sleep(50);
    check('non-loopback --host without a key: warning', /warning: listening on 0\.0\.0\.0 without --api-key/.test(srv.stderr), srv.stderr);
    await srv.stop();
  }
}
finish();
