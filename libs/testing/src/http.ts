import type { Identity } from '@estate/contracts/accounts';
import { bodyDigest, requireSignedIdentity, signRequest, type Caller } from '@estate/platform/auth';
import { createHttpApp } from '@estate/platform/http';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Logger } from 'pino';

export const TEST_SIGNING_SECRET = 'test-signing-secret-0123456789abcdef-0123456789';

/** What a service under test trusts: the test secret, the gateway for everything and the service readers for GETs. */
export const TEST_TRUST: Parameters<typeof requireSignedIdentity>[1] = {
  secrets: [TEST_SIGNING_SECRET],
  callers: { gateway: '*', media: ['GET'], webhooks: ['GET'] },
};

export function identityFor(
  accountId: string,
  role: Identity['role'] = 'admin',
  agentId: string | null = null,
): Identity {
  return { accountId, keyId: `key_${accountId}_${role}`, role, agentId };
}

/** The bytes `app.inject` sends for a payload: strings and buffers as they are, anything else as JSON. */
function bytesOf(payload: unknown): string | Buffer | undefined {
  if (payload === undefined || payload === null) return undefined;
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) return payload;
  return JSON.stringify(payload);
}

/** Headers a request needs to reach a service directly, as if forwarded by the gateway (body included in the signature). */
export function asCaller(
  who: Identity,
  method: string,
  url: string,
  payload?: unknown,
  caller: Caller = 'gateway',
): Record<string, string> {
  return signRequest(who, { caller, secret: TEST_SIGNING_SECRET, method, url, digest: bodyDigest(bytesOf(payload)) });
}

/** A request to a service under test as the gateway forwards it for `who`; `null` sends no identity at all. */
export type ForwardedCall = (
  who: Identity | null,
  method: string,
  url: string,
  payload?: unknown,
  headers?: Record<string, string>,
) => Promise<LightMyRequestResponse>;

/** {@link ForwardedCall} through `app.inject`, the body signed with the identity. */
export function forwardedCall(app: FastifyInstance): ForwardedCall {
  return (who, method, url, payload, headers = {}) =>
    app.inject({
      method: method as InjectOptions['method'],
      url,
      ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
      headers: { ...(who ? asCaller(who, method, url, payload) : {}), ...headers },
    });
}

/** A service's HTTP app as the distributed profile serves it: admitting only signed requests from the gateway. */
export async function serveBehindGateway<R>(options: {
  service: string;
  log: Logger;
  plugin: (app: FastifyInstance, options: { runtime: R }) => Promise<void>;
  runtime: R;
  /** Serve `/openapi.json` under this title. */
  title?: string;
}): Promise<FastifyInstance> {
  const app = await createHttpApp({
    service: options.service,
    logger: options.log,
    ...(options.title ? { openapi: { title: options.title } } : {}),
  });
  requireSignedIdentity(app, TEST_TRUST);
  await app.register(options.plugin, { runtime: options.runtime });
  await app.ready();
  return app;
}
