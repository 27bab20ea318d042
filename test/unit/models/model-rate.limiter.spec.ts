import { loadConfig } from '../../../src/config/app-config';
import { ModelRateLimiter } from '../../../src/models/model-rate.limiter';
import { ModelProvidersService } from '../../../src/models/providers/model-providers.service';

/** The limiter on a clock the test moves; 60 a minute on `openai`: one call at once, then one a second. */
function limiter() {
  let now = 0;
  const config = loadConfig({}, { models: { openai: { requests_per_minute: 60 } } });
  const rates = new ModelRateLimiter({ now: () => now }, new ModelProvidersService(config));
  return { rates, advance: (ms: number) => (now += ms) };
}

const settled = () => new Promise((r) => setImmediate(r));

describe('ModelRateLimiter', () => {
  it('only a provider with requests_per_minute waits', () => {
    const { rates } = limiter();
    expect(rates.admitterFor('openai', 't')).not.toBeNull();
    expect(rates.admitterFor('scripted', 't')).toBeNull();
    rates.onApplicationShutdown();
  });

  it('a call given up while it waits leaves the queue and is told so; the others wait on', async () => {
    const { rates } = limiter();
    const admit = (tenant: string, signal?: AbortSignal) =>
      rates.admitterFor('openai', tenant)!(signal);
    const went: string[] = [];
    await admit('a');
    const ac = new AbortController();
    const given = admit('b', ac.signal).then(
      () => went.push('b'),
      () => went.push('b gave up'),
    );
    void admit('a').then(() => went.push('a'));
    expect(rates.waiting()).toEqual([{ provider: 'openai', calls: 2 }]);
    ac.abort();
    await given;
    expect(rates.waiting()).toEqual([{ provider: 'openai', calls: 1 }]);
    await settled();
    expect(went).toEqual(['b gave up']);
    rates.onApplicationShutdown();
  });
});
