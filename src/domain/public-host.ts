/**
 * Whether a URL's host is a public Internet host, so that the service may call it (webhooks): no
 * loopback, private, link-local, shared, multicast, documentation or otherwise reserved address,
 * in any spelling the URL parser accepts (`127.1`, `2130706433`, `0x7f000001` and `[::ffff:127.0.0.1]`
 * all reach it as a normalized address), and no name that only a local network resolves
 * (`localhost`, a single label, `.local`, `.internal`, …). A public name that resolves to a
 * private address is not caught here: the runtime's own fetch refuses private addresses in
 * production.
 */

/** IPv4 ranges that are not public, as [first octets…, prefix length]. */
const PRIVATE_V4: readonly [number, number, number, number, number][] = [
  [0, 0, 0, 0, 8], // "this network"
  [10, 0, 0, 0, 8], // private
  [100, 64, 0, 0, 10], // shared address space (carrier-grade NAT)
  [127, 0, 0, 0, 8], // loopback
  [169, 254, 0, 0, 16], // link-local (cloud metadata services)
  [172, 16, 0, 0, 12], // private
  [192, 0, 0, 0, 24], // IETF protocol assignments
  [192, 0, 2, 0, 24], // documentation
  [192, 88, 99, 0, 24], // 6to4 relay anycast
  [192, 168, 0, 0, 16], // private
  [198, 18, 0, 0, 15], // benchmarking
  [198, 51, 100, 0, 24], // documentation
  [203, 0, 113, 0, 24], // documentation
  [224, 0, 0, 0, 4], // multicast
  [240, 0, 0, 0, 4], // reserved, and the broadcast address
];

/** Names that only a local network resolves: the name itself, or any name under it. */
const LOCAL_NAMES = [
  'localhost',
  'local',
  'internal',
  'intranet',
  'private',
  'corp',
  'home',
  'lan',
  'localdomain',
  'home.arpa',
  'test',
  'invalid',
  'example',
  'onion',
  'arpa',
];

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function v4Number(octets: readonly number[]): number {
  return (((octets[0] ?? 0) << 24) | ((octets[1] ?? 0) << 16) | ((octets[2] ?? 0) << 8) | (octets[3] ?? 0)) >>> 0;
}

function isPrivateV4(octets: readonly number[]): boolean {
  const address = v4Number(octets);
  return PRIVATE_V4.some(([a, b, c, d, bits]) => {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return (address & mask) >>> 0 === (v4Number([a, b, c, d]) & mask) >>> 0;
  });
}

/** The eight 16-bit groups of an IPv6 address as the URL parser writes it (compressed, no zone). */
function v6Groups(address: string): number[] | undefined {
  const [head = '', tail] = address.split('::');
  const part = (text: string): number[] => (text === '' ? [] : text.split(':').map((group) => parseInt(group, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const groups =
    tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function isPrivateV6(groups: readonly number[]): boolean {
  const [g0 = 0, g1 = 0, , , , g5 = 0, g6 = 0, g7 = 0] = groups;
  const embedded = [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff];
  if (groups.slice(0, 7).every((g) => g === 0)) return true; // :: and ::1 (and the deprecated ::a.b.c.d)
  if (groups.slice(0, 5).every((g) => g === 0) && g5 === 0xffff) return isPrivateV4(embedded); // mapped IPv4
  if (g0 === 0x64 && g1 === 0xff9b) return isPrivateV4(embedded); // NAT64
  if (g0 === 0x2002) return isPrivateV4([g1 >> 8, g1 & 0xff, (groups[2] ?? 0) >> 8, (groups[2] ?? 0) & 0xff]); // 6to4
  if ((g0 & 0xe000) !== 0x2000) return true; // outside global unicast (2000::/3): ULA, link-local, multicast…
  if (g0 === 0x2001 && g1 === 0x0db8) return true; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return true; // documentation (3fff::/20)
  if (g0 === 0x2001 && g1 < 0x0200) return true; // IETF protocol assignments, Teredo, benchmarking
  return false;
}

/** Why `hostname` (as `URL.hostname` gives it) is not a public host, or undefined when it is. */
export function hostProblem(hostname: string): string | undefined {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  if (host.startsWith('[')) {
    const groups = v6Groups(host.slice(1, -1));
    return groups === undefined || isPrivateV6(groups) ? 'must not be a private or reserved address' : undefined;
  }
  const v4 = V4.exec(host);
  if (v4 !== null)
    return isPrivateV4(v4.slice(1).map(Number)) ? 'must not be a private or reserved address' : undefined;
  if (host === '' || !host.includes('.')) return 'must be a public host name';
  if (LOCAL_NAMES.some((name) => host === name || host.endsWith(`.${name}`))) return 'must be a public host name';
  return undefined;
}
