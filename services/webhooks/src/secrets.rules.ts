import { randomBytes } from 'node:crypto';
import type { EndpointDoc } from './repositories/endpoint.repository';

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The first characters of a secret (after its prefix), kept to tell secrets apart. */
export const secretPrefix = (secret: string): string => secret.slice(0, 12);

/** How the webhooks service derives the key of its stored signing secrets from its secret key. */
export const SIGNING_SECRETS_KEY = { salt: 'estate-webhooks', info: 'webhook signing secrets' } as const;

/** Whether a rotated-out secret still signs deliveries at `at`. */
export function previousSecretInForce(doc: EndpointDoc, at: Date): boolean {
  return (
    !!doc.previousSecretSealed &&
    !!doc.previousSecretExpiresAt &&
    Date.parse(doc.previousSecretExpiresAt) > at.getTime()
  );
}
