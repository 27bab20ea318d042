import {
  clientOf,
  embeddedIPv4,
  HostPolicy,
  ServedNames,
} from '../../../../src/core/net/host-policy';

const METADATA = ['169.254.0.0/16', 'fd00:ec2::254'];
const defaults = new HostPolicy([], METADATA);
const noLoopback = new HostPolicy([], [...METADATA, '127.0.0.0/8', '::1', '10.0.0.0/8']);
const v6LoopbackOnly = new HostPolicy([], ['::1']);

/** What the tools, webhooks and MCP clients check: the URL's host as WHATWG URL writes it, as its own address. */
const refusalOf = (policy: HostPolicy, url: string) => {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return policy.refusal(host, host);
};

describe('HostPolicy: every spelling of an address is the address', () => {
  // QA: http://[::ffff:0.0.0.0]:P/ became ::ffff:0:0, which no check matched, and reached 127.0.0.1
  it.each([
    ['http://169.254.169.254/'],
    ['http://2852039166/'], // decimal
    ['http://0xa9fea9fe/'], // hex
    ['http://0251.0376.0251.0376/'], // octal
    ['http://[::ffff:169.254.169.254]/'], // IPv4-mapped, dotted
    ['http://[::ffff:a9fe:a9fe]/'], // IPv4-mapped, hex
    ['http://[0:0:0:0:0:ffff:a9fe:a9fe]/'], // IPv4-mapped, long
    ['http://[::ffff:0:a9fe:a9fe]/'], // IPv4-translated
    ['http://[::a9fe:a9fe]/'], // IPv4-compatible
    ['http://[::169.254.169.254]/'], // IPv4-compatible, dotted
    ['http://[64:ff9b::a9fe:a9fe]/'], // NAT64
    ['http://[64:ff9b::169.254.169.254]/'], // NAT64, dotted
    ['http://[fd00:ec2::254]/'],
    ['http://[fd00:ec2:0::254]/'],
  ])('the metadata address as %s is denied by default', (url) => {
    expect(refusalOf(defaults, url)).toMatch(/is denied by the outbound host policy$/);
  });

  it.each([
    ['http://127.0.0.1/'],
    ['http://127.1/'],
    ['http://[::1]/'],
    ['http://[0:0:0:0:0:0:0:1]/'],
    ['http://[::ffff:127.0.0.1]/'],
    ['http://[::ffff:7f00:1]/'],
    ['http://[::7f00:1]/'],
    ['http://[64:ff9b::7f00:1]/'],
    ['http://[::ffff:10.0.0.1]/'],
    ['http://[::ffff:a00:1]/'],
    // the unspecified address lands on the loopback, in every form
    ['http://0/'],
    ['http://0.0.0.0/'],
    ['http://0.1.2.3/'],
    ['http://[::]/'],
    ['http://[::ffff:0.0.0.0]/'],
    ['http://[::ffff:0:0]/'],
    ['http://[0:0:0:0:0:ffff:0:0]/'],
    ['http://[::ffff:0:0:0]/'],
    ['http://[::0.0.0.0]/'],
    ['http://[64:ff9b::]/'],
    ['http://[64:ff9b::0.0.0.0]/'],
  ])('with the loopback denied, %s is denied', (url) => {
    expect(refusalOf(noLoopback, url)).toMatch(/is denied by the outbound host policy$/);
  });

  it.each([['http://0.0.0.0/'], ['http://[::ffff:0:0]/'], ['http://[::]/']])(
    'denying ::1 alone denies the unspecified address %s too',
    (url) => expect(refusalOf(v6LoopbackOnly, url)).not.toBeNull(),
  );

  it.each([
    ['http://127.0.0.1/'],
    ['http://[::ffff:0:0]/'],
    ['http://[::1]/'],
    ['http://[2001:db8::1]/'],
    ['http://93.184.216.34/'],
    ['http://[64:ff9b::5db8:d822]/'],
    ['http://[2001:db8::ffff:a9fe:a9fe]/'], // not an embedding prefix
  ])('the default policy allows %s', (url) => {
    expect(refusalOf(defaults, url)).toBeNull();
  });

  it('an allow-list of IPv4 ranges admits the IPv6 spellings of its addresses, and nothing else', () => {
    const only = new HostPolicy(['93.184.216.0/24'], METADATA);
    expect(refusalOf(only, 'http://93.184.216.34/')).toBeNull();
    expect(refusalOf(only, 'http://[::ffff:93.184.216.34]/')).toBeNull();
    expect(refusalOf(only, 'http://[64:ff9b::5db8:d822]/')).toBeNull();
    expect(refusalOf(only, 'http://[::ffff:a9fe:a9fe]/')).toMatch(/denied/);
    expect(refusalOf(only, 'http://[::ffff:a00:1]/')).toMatch(
      /not on the outbound host allow-list/,
    );
  });

  it('a resolved address is checked the same way (a name whose AAAA record is ::ffff:7f00:1)', () => {
    expect(noLoopback.refusal('rebind.example', '::ffff:7f00:1')).toBe(
      'rebind.example (::ffff:7f00:1) is denied by the outbound host policy',
    );
    expect(noLoopback.refusal('rebind.example', '::ffff:0:0')).toMatch(/denied/);
  });

  it.each([
    ['::ffff:0:0', '0.0.0.0'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['0:0:0:0:0:FFFF:A9FE:A9FE', '169.254.169.254'],
    ['::ffff:0:a9fe:a9fe', '169.254.169.254'],
    ['::a9fe:a9fe', '169.254.169.254'],
    ['::2', '0.0.0.2'],
    ['64:ff9b::a9fe:a9fe', '169.254.169.254'],
    ['10.1.2.3', '10.1.2.3'],
    ['::', null],
    ['::1', null],
    ['fe80::1%eth0', null],
    ['2001:db8::a9fe:a9fe', null],
    ['64:ff9b:1::a9fe:a9fe', null],
    ['not an address', null],
  ])('embeddedIPv4(%s) is %s', (address, v4) => {
    expect(embeddedIPv4(address)).toBe(v4);
  });

  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8::1%eth0', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['', ''],
  ])('clientOf(%s) is %s: one count per IPv4 address or IPv6 /64', (address, client) => {
    expect(clientOf(address)).toBe(client);
  });
});

describe('ServedNames: the names an open-mode server answers to (DNS rebinding)', () => {
  const served = new ServedNames(['agents.example.com', '*.internal']);
  it.each([
    ['127.0.0.1:8283', null],
    ['127.0.0.1', null],
    ['[::1]:8283', null],
    ['10.1.2.3:80', null],
    ['localhost:8283', null],
    ['LOCALHOST', null],
    ['console.localhost:8283', null],
    ['agents.example.com:443', null],
    ['Agents.Example.Com.', null],
    ['box.internal:8283', null],
    [undefined, null], // HTTP/1.0, no page
    ['evil.example:8283', 'evil.example'], // the rebound name
    ['agents.example.com.evil.example', 'agents.example.com.evil.example'],
    ['localhost.evil.example', 'localhost.evil.example'],
    ['internal', 'internal'],
    ['', ''],
  ])('Host %s: refused name %s', (host, refused) => {
    expect(served.refused(host)).toBe(refused);
  });
});
