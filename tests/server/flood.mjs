// flood.mjs ORK MODEL -- connection policy, black-box: 1,000 half-open connections from
// 127.0.0.1 (each sends half a request line and then nothing) are held open while a normal
// client from another loopback address (127.0.0.2) must be served within 1 s, several times.
// The per-IP limit (--max-conn-per-ip) keeps the flood from taking every connection thread; the
// header timeout (--timeout-header 2 here) then drops the ones it admitted.
import net from 'node:net';
import { check, deadline, finish, startServer, rawRequest, sleep } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(60);
const N = 1000;
const srv = await startServer(ork, model, ['-t', '1', '--timeout-header', '2']);

// open the flood (in batches, so the test itself does not trip over its own connect burst)
const socks = [];
let opened = 0, closedByServer = 0;
for (let b = 0; b < N; b += 100) {
  await Promise.all(Array.from({ length: Math.min(100, N - b) }, () => new Promise((resolve) => {
    const s = net.connect({ port: srv.port, host: '127.0.0.1' });
    s.on('connect', () => { opened++; s.write('GET /health HT'); resolve(); });
    s.on('error', () => resolve());
    s.on('close', () => { closedByServer++; });
    socks.push(s);
  })));
}
check(`${N} flood connections opened`, opened === N, opened);

const served = [];
for (let i = 0; i < 5; i++) {
  const t0 = Date.now();
  const r = await rawRequest(srv.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
                             { localAddress: '127.0.0.2', ms: 3000 });
  served.push({ ms: Date.now() - t0, status: r.status });
  await sleep(100);
}
check('normal client served within 1 s while the flood is held', served.every((s) => s.status === 200 && s.ms < 1000),
      served);
const body = JSON.stringify({ prompt: 'Once upon a time', n_predict: 8, temperature: 0 });
const t0 = Date.now();
const g = await rawRequest(srv.port, `POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
                           `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
                           { localAddress: '127.0.0.2', ms: 5000 });
check('a generation is served during the flood', g.status === 200 && /"tokens_predicted":8/.test(g.body) &&
      Date.now() - t0 < 2000, [g.status, Date.now() - t0]);
check('connections past the per-IP limit were closed at once', closedByServer >= N - 64, closedByServer);
// after the header timeout the admitted flood connections are gone too
await sleep(3000);
check('header timeout closed the rest', closedByServer >= N - 2, closedByServer);
for (const s of socks) s.destroy();
const ok = await rawRequest(srv.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
check('flood sockets themselves can be served again once closed', ok.status === 200, ok.head);
const ex = await srv.stop();
check('clean exit', ex.code === 0, ex);
finish();
