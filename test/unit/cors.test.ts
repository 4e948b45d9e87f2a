import { describe, expect, it } from 'vitest';
import { allowedOrigin, corsPolicy } from '../../src/http/cors.ts';

describe('CORS policy from CORS_ORIGINS', () => {
  it('is off when the var is absent or blank', () => {
    expect(corsPolicy(undefined)).toBeUndefined();
    expect(corsPolicy(' , ')).toBeUndefined();
    expect(allowedOrigin(undefined, 'https://a.example')).toBeUndefined();
  });

  it('allows listed origins exactly (trimmed), and `*` any', () => {
    const policy = corsPolicy(' https://a.example ,http://localhost:5173');
    expect(allowedOrigin(policy, 'https://a.example')).toBe('https://a.example');
    expect(allowedOrigin(policy, 'http://localhost:5173')).toBe('http://localhost:5173');
    expect(allowedOrigin(policy, 'https://a.example.evil')).toBeUndefined();
    expect(allowedOrigin(policy, null)).toBeUndefined();
    expect(allowedOrigin(corsPolicy('https://a.example, *'), 'https://b.example')).toBe('*');
  });
});

describe("why not itty-router's cors()", () => {
  it('its corsify answers 200 for a 412 (so we keep our own)', async () => {
    const { cors } = await import('itty-router');
    const { corsify } = cors({ origin: 'https://a.example' });
    const answer = corsify(
      new Response('{}', { status: 412 }),
      new Request('http://x/', { headers: { Origin: 'https://a.example' } }),
    );
    expect(answer.status).toBe(200);
  });
});
