import { createHmac } from 'node:crypto';
import {
  retryDelayMs,
  runWebhookEvent,
  signatureFor,
  validateWebhookInput,
} from '../../../../src/core/webhooks/webhook-rules';

const LIMITS = { url_max_length: 64, secret_min_length: 16, secret_max_length: 32 };

describe('validateWebhookInput', () => {
  it.each([
    ['a valid body', { url: 'https://x.example/h', events: ['run.failed'] }, []],
    ['not an object', [], ['$']],
    [
      'a url over the limit',
      { url: 'https://x/' + 'a'.repeat(60), events: ['run.failed'] },
      ['url'],
    ],
    ['a javascript: url', { url: 'javascript:alert(1)', events: ['run.failed'] }, ['url']],
    ['events not a list', { url: 'http://x/', events: 'run.failed' }, ['events']],
    [
      'a wrong event among right ones',
      { url: 'http://x/', events: ['run.failed', 'run.x'] },
      ['events[1]'],
    ],
    [
      'a long secret',
      { url: 'http://x/', events: ['run.failed'], secret: 's'.repeat(33) },
      ['secret'],
    ],
    [
      'a numeric description',
      { url: 'http://x/', events: ['run.failed'], description: 5 },
      ['description'],
    ],
  ])('%s → problems at %j', (_name, body, paths) => {
    const v = validateWebhookInput(body, LIMITS);
    expect(v.ok ? [] : v.problems.map((p) => p.path)).toEqual(paths);
  });

  it('deduplicates events and leaves the secret null when none is given', () => {
    const v = validateWebhookInput(
      { url: 'http://x/', events: ['run.failed', 'run.failed'] },
      LIMITS,
    );
    expect(v).toEqual({
      ok: true,
      value: { url: 'http://x/', events: ['run.failed'], secret: null, description: null },
    });
  });
});

describe('retryDelayMs', () => {
  const policy = { baseMs: 1000, maxMs: 5000, maxAttempts: 5 };
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [4, 5000],
    [5, null],
  ])('after %i failed attempts waits %p', (attempt, delay) => {
    expect(retryDelayMs(attempt, policy)).toBe(delay);
  });
});

describe('signatureFor', () => {
  it('is t=<seconds>,v1=<hex HMAC-SHA256 of "t.body">', () => {
    const mac = createHmac('sha256', 'k').update('12.{"a":1}').digest('hex');
    expect(signatureFor('k', 12, '{"a":1}')).toBe(`t=12,v1=${mac}`);
  });
});

describe('runWebhookEvent', () => {
  it.each([
    ['failed', 'run.failed'],
    ['completed', 'run.completed'],
    ['cancelled', 'run.completed'],
  ])('a run that ended %s is %s', (status, event) => {
    expect(runWebhookEvent(status)).toBe(event);
  });
});
