import { request } from 'node:http';
import { startApp, TestApp } from '../../support/app-harness';
import { api, fakeClock } from '../consent-helpers';

/** Issue 8: a tenant hammering the API is slowed down per key, with a stable code and Retry-After. */
describe('security: request rate per API key', () => {
  let t: TestApp;
  let clock: ReturnType<typeof fakeClock>;
  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: 'sk-a', tenant: 'team-a' },
            { key: 'sk-b', tenant: 'team-b' },
          ],
        },
        rate_limit: { requests_per_second: 2, burst: 5 },
      },
    });
  });
  let start = Date.now();
  // each test an hour later than the last: every bucket is full again
  beforeEach(() => (clock = fakeClock(t, (start += 3_600_000))));
  afterEach(() => clock.restore());
  afterAll(() => t.close());

  async function get(path: string, key?: string) {
    const res = await fetch(t.baseUrl + path, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: await res.json(),
    };
  }

  it('tenant A past its burst gets 429 RATE_LIMITED with Retry-After; tenant B and health are untouched', async () => {
    for (let i = 0; i < 5; i++) expect((await get('/v1/agents/', 'sk-a')).status).toBe(200);
    const limited = await get('/v1/agents/', 'sk-a');
    expect(limited.status).toBe(429);
    expect(limited.retryAfter).toBe('1');
    expect(limited.body).toMatchObject({
      code: 'RATE_LIMITED',
      message: expect.any(String),
      details: { retry_after_seconds: 1, requests_per_second: 2, burst: 5 },
    });
    // a write is refused before its body is read
    const write = await api(t, 'POST', '/v1/agents/', { name: 'x' }, 'sk-a');
    expect(write.status).toBe(429);
    expect((await get('/v1/agents/', 'sk-b')).status).toBe(200);
    expect((await get('/v1/health')).status).toBe(200);
    // the bucket refills at the rate: half a second later one request passes, the next does not
    clock.advance(500);
    expect((await get('/v1/agents/', 'sk-a')).status).toBe(200);
    expect((await get('/v1/agents/', 'sk-a')).status).toBe(429);
  });

  it('varying an invalid key mints no fresh buckets: the unauthenticated calls of one address share one', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await get('/v1/agents/', `sk-guess-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    expect((await get('/v1/agents/', 'sk-a')).status).toBe(200);
    // another client's keyless call (a decision URL) is not starved by that flood
    const other = await fromAddress('127.0.0.2', '/v1/webhooks/decisions/not-a-token');
    expect(other.status).toBe(404);
    expect((await fromAddress('127.0.0.1', '/v1/webhooks/decisions/not-a-token')).status).toBe(429);
  });

  /** A POST from another loopback address (Linux routes all of 127/8 to lo). */
  function fromAddress(localAddress: string, path: string): Promise<{ status: number }> {
    const { hostname, port } = new URL(t.baseUrl);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: hostname,
          port,
          path,
          method: 'POST',
          localAddress,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        },
      );
      req.on('error', reject);
      req.end('{"decision":"deny"}');
    });
  }
});
