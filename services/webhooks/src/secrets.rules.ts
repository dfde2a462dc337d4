import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { EndpointDoc } from './repositories/endpoint.repository';

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The first characters of a secret (after its prefix), kept to tell secrets apart. */
export const secretPrefix = (secret: string): string => secret.slice(0, 12);

/**
 * Signing secrets must be usable (HMAC needs the secret itself), so they are stored encrypted
 * (AES-256-GCM under a key derived from the service's secret key), never in clear.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: string) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, 'estate-webhooks', 'webhook signing secrets', 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  open(sealed: string): string {
    if (!sealed.startsWith('v1.')) throw new Error('unknown sealed secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}

/** Whether a rotated-out secret still signs deliveries at `at`. */
export function previousSecretInForce(doc: EndpointDoc, at: Date): boolean {
  return (
    !!doc.previousSecretSealed &&
    !!doc.previousSecretExpiresAt &&
    Date.parse(doc.previousSecretExpiresAt) > at.getTime()
  );
}
