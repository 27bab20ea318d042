import { redactor } from '../../../../src/core/secrets/redactor';

const KEY = 'op-key-7f3a9c21e5b84d06';
const redact = redactor([{ label: 'KEY', value: KEY }]);
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('redactor: every form an echo shows a secret in is [redacted:LABEL]', () => {
  it.each<[string, string]>([
    ['as sent', `{"authorization":"Bearer ${KEY}"}`],
    ['in a JSON text', JSON.stringify({ h: `Bearer ${KEY}` })],
    ['URL-encoded (percent, lower-case hex, form)', `?a=${encodeURIComponent(`x ${KEY}`)}`],
    ['base64, whole', `echo: ${b64(KEY)}`],
    ['base64 of a Basic credential built around it (offset 0)', b64(`abc${KEY}`)],
    ['… offset 1', b64(`u:${KEY}!`)],
    ['… offset 2', b64(`user:${KEY}`)],
    ['URL-safe base64', b64(`u:${KEY}`).replace(/\+/g, '-').replace(/\//g, '_')],
  ])('%s', (_form, echoed) => {
    const out = redact(echoed);
    expect(out).toContain('[redacted:KEY]');
    expect(out).not.toContain(KEY);
    expect(out).not.toContain(b64(KEY).slice(2, 12));
  });

  const entities = (map: Record<string, string>) => (v: string) =>
    v.replace(/[&<>"']/g, (c) => map[c] ?? c);
  it.each<[string, (v: string) => string]>([
    ['JSON', (v) => JSON.stringify({ h: v })],
    ['JSON with escaped slashes (PHP)', (v) => JSON.stringify({ h: v }).replace(/\//g, '\\/')],
    [
      "JSON with <>&' escaped (Go)",
      (v) => JSON.stringify(v).replace(/[<>&']/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
    ],
    [
      'HTML (lodash)',
      entities({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }),
    ],
    [
      'HTML (Python)',
      entities({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' }),
    ],
    ['HTML (Go)', entities({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })],
    ['HTML text, quotes as they are', entities({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })],
    ['URL, percent', (v) => `?a=${encodeURIComponent(v)}`],
    ['URL, lower-case hex', (v) => `?a=${encodeURIComponent(v).toLowerCase()}`],
    ['a form', (v) => `a=${encodeURIComponent(v).replace(/%20/g, '+')}`],
    ['a whole URL', (v) => encodeURI(`https://x.example/${v}`)],
  ])('a value with quotes, slashes, spaces and markup, %s-encoded', (_how, encode) => {
    const value = `p@ss/"w rd&<1>'`;
    const out = redactor([{ label: 'PW', value }])(encode(value));
    expect(out).toContain('[redacted:PW]');
    expect(out).not.toMatch(/w(\+| |%20)rd/i);
  });

  it('a value that is a Basic credential: decoded, and its password alone, are replaced too', () => {
    const basic = redactor([{ label: 'CREDS', value: b64('svc-user:pass-4e1b') }]);
    expect(basic('{"user":"svc-user:pass-4e1b","password":"pass-4e1b"}')).toBe(
      '{"user":"[redacted:CREDS]","password":"[redacted:CREDS]"}',
    );
  });

  it('the longer of two nested values wins; each keeps its own label', () => {
    const both = redactor([
      { label: 'SHORT', value: 'abcd1234' },
      { label: 'LONG', value: 'xx-abcd1234-yy' },
    ]);
    expect(both('xx-abcd1234-yy and abcd1234')).toBe('[redacted:LONG] and [redacted:SHORT]');
  });

  it('two values whose echoes overlap: replaced together, no part of either is left', () => {
    const both = redactor([
      { label: 'A', value: 'head-1234' },
      { label: 'B', value: '1234-tail-5678' },
    ]);
    expect(both('head-1234-tail-5678!')).toBe('[redacted:A]!');
  });

  it.each(['"key":"sk-l', '"key":"sk-X'])(
    'a later group’s value (%s) cannot match across an earlier group’s: the answer is the same whether it guessed right',
    (guess) => {
      const redact = redactor(
        [{ label: 'HIDDEN', value: 'sk-literal-9d2c41a7' }],
        [{ label: 'CHOSEN', value: guess }],
      );
      expect(redact('{"key":"sk-literal-9d2c41a7"}')).toBe('{"key":"[redacted:HIDDEN]"}');
    },
  );

  it('ordinary text is untouched: no secrets, values under 4 characters, base64 fragments under 8', () => {
    expect(redactor([])('anything')).toBe('anything');
    expect(redactor([{ label: 'X', value: 'abc' }])('abc abc')).toBe('abc abc');
    const short = redactor([{ label: 'X', value: 'abcd' }]);
    expect(short('abcd YWJjZA==')).toBe('[redacted:X] [redacted:X]');
    expect(short('a base64 text: QUJDRA')).toBe('a base64 text: QUJDRA');
  });

  it('regular-expression characters in a value are literal', () => {
    expect(redactor([{ label: 'R', value: 'a.b*c+(d)' }])('a.b*c+(d) axbbc+d')).toBe(
      '[redacted:R] axbbc+d',
    );
  });
});
