import { describe, expect, it } from 'vitest';
import { urlProblem } from '../../src/domain/webhook.ts';

/** Webhook targets: only public hosts, whatever the spelling of a private one. */
const refused = [
  'https://127.0.0.1/',
  'https://127.1/',
  'https://2130706433/',
  'https://0x7f000001/',
  'https://0177.0.0.1/',
  'https://127.000.000.001/',
  'https://0x7f.1/',
  'https://localhost/',
  'https://LOCALHOST./',
  'https://localhost../',
  'https://127.0.0.1../',
  'https://[3fff::1]/',
  'https://api.localhost/',
  'https://169.254.169.254/latest/meta-data/',
  'https://10.0.0.5/',
  'https://172.16.3.4/',
  'https://172.31.255.255/',
  'https://192.168.1.1/',
  'https://100.64.0.1/',
  'https://0.0.0.0/',
  'https://0/',
  'https://255.255.255.255/',
  'https://224.0.0.1/',
  'https://198.18.0.1/',
  'https://192.0.2.10/',
  'https://[::1]/',
  'https://[::]/',
  'https://[0:0:0:0:0:0:0:1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:7f00:1]/',
  'https://[::ffff:169.254.169.254]/',
  'https://[::127.0.0.1]/',
  'https://[64:ff9b::10.0.0.1]/',
  'https://[2002:c0a8:101::1]/',
  'https://[fd00::1]/',
  'https://[fc00::1]/',
  'https://[fe80::1]/',
  'https://[ff02::1]/',
  'https://[2001:db8::1]/',
  'https://printer.local/',
  'https://db.internal/',
  'https://intranet/',
  'https://router.lan/',
  'https://nas.home.arpa/',
  'https://svc.corp/',
  'https://x.test/',
  'https://x.onion/',
];

const allowed = [
  'https://hooks.example.com/in',
  'https://example.org./x',
  'https://93.184.215.14/',
  'https://8.8.8.8/',
  'https://172.32.0.1/',
  'https://100.128.0.1/',
  'https://[2606:4700:4700::1111]/',
  'https://[::ffff:8.8.8.8]/',
  'https://xn--bcher-kva.de/',
];

describe('webhook targets are public hosts', () => {
  for (const url of refused)
    it(`refuses ${url}`, () => {
      expect(urlProblem(url, undefined)).toMatch(/private or reserved address|public host name/);
    });
  for (const url of allowed)
    it(`allows ${url}`, () => {
      expect(urlProblem(url, undefined)).toBeUndefined();
    });

  it('allows the local-development origins listed, over http: or https:, and nothing else there', () => {
    const local = 'http://127.0.0.1:8788, https://localhost:8443';
    expect(urlProblem('http://127.0.0.1:8788/hook', local)).toBeUndefined();
    expect(urlProblem('https://localhost:8443/hook', local)).toBeUndefined();
    expect(urlProblem('http://127.0.0.1:8789/hook', local)).toBe('must be an https: URL');
    expect(urlProblem('https://127.0.0.1:8789/hook', local)).toBe('must not be a private or reserved address');
  });
});
