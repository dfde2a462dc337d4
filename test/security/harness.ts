import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeEmbedded, type EmbeddedProduct } from '@estate/embedded';
import { listingBody } from '@estate/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import pino, { type Logger } from 'pino';

export const ADMIN = 'ek_attack_admin_key_0123456789abcdefghij';
export const PLATFORM = 'ek_attack_platform_key_0123456789abcdefg';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What an attacker holds: a key of some account (or none) and the whole embedded product to talk to. */
export interface Target {
  product: EmbeddedProduct;
  dir: string;
  /** A request with this key (null: none), as a client sends it. */
  call(
    key: string | null,
    method: Method,
    url: string,
    payload?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** A new account made with the platform key, with its admin key. */
  newAccount(name?: string): Promise<{ accountId: string; admin: string }>;
  agent(admin: string, over?: Record<string, unknown>): Promise<{ id: string; version: number }>;
  key(
    admin: string,
    role: 'admin' | 'agent' | 'integration',
    agentId?: string,
  ): Promise<{ id: string; secret: string }>;
  listing(admin: string, over?: Record<string, unknown>): Promise<{ id: string; version: number }>;
  lead(key: string, over?: Record<string, unknown>): Promise<{ id: string }>;
  close(): Promise<void>;
}

let seq = 0;
const unique = () => `${Date.now().toString(36)}${(seq++).toString(36)}`;

/** The embedded product on a fresh data folder, with known admin and platform keys (and quiet logs unless given a logger). */
export async function startTarget(
  over: Partial<Parameters<typeof composeEmbedded>[0]> = {},
  dir = mkdtempSync(join(tmpdir(), 'attacks-')),
  log: Logger = pino({ level: 'silent' }),
): Promise<Target> {
  const product = await composeEmbedded(
    {
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      adminApiKey: ADMIN,
      platformApiKey: PLATFORM,
      rateLimitPerMinute: 100_000,
      logLevel: 'silent',
      ...over,
    },
    log,
  );
  const call: Target['call'] = (key, method, url, payload, headers = {}) =>
    product.app.inject({
      method,
      url,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
      ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
    });
  const created = async (res: LightMyRequestResponse) => {
    if (res.statusCode !== 201) throw new Error(`expected 201, got ${res.statusCode}: ${res.body}`);
    return res.json();
  };
  return {
    product,
    dir,
    call,
    async newAccount(name = 'Rival Realty') {
      const body = await created(await call(PLATFORM, 'POST', '/v1/accounts', { name }));
      return { accountId: body.account.id, admin: body.adminKey.secret };
    },
    async agent(admin, over = {}) {
      const u = unique();
      return created(
        await call(admin, 'POST', '/v1/agents', { name: `Agent ${u}`, email: `a${u}@example.com`, ...over }),
      );
    },
    async key(admin, role, agentId) {
      return created(await call(admin, 'POST', '/v1/api-keys', { name: `${role} key`, role, agentId }));
    },
    async listing(admin, over = {}) {
      return created(
        await call(
          admin,
          'POST',
          '/v1/listings',
          listingBody({ externalId: `X-${unique()}`, source: 'attack', ...over }),
        ),
      );
    },
    async lead(key, over = {}) {
      const u = unique();
      return created(
        await call(key, 'POST', '/v1/leads', {
          name: `Lead ${u}`,
          email: `l${u}@example.com`,
          source: 'website',
          ...over,
        }),
      );
    },
    async close() {
      await product.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Asserts a refusal is problem+json with this status and code, tagged with the request id. */
export function expectProblem(res: LightMyRequestResponse, status: number, code?: string): void {
  expect({ status: res.statusCode, body: res.body.slice(0, 500) }).toMatchObject({ status });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json();
  expect(body.requestId).toBe(res.headers['x-request-id']);
  if (code) expect(body.code).toBe(code);
}
