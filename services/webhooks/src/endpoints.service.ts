import {
  MAX_WEBHOOK_ENDPOINTS,
  type Webhook,
  type WebhookCreate,
  type WebhookListQuery,
  type WebhookPatch,
  type WebhookWithSecret,
} from '@estate/contracts/webhooks';
import { assertRole, type Identity } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { updateVersioned, type Update } from '@estate/store';
import type { EndpointDoc, EndpointRepository } from './repositories/endpoint.repository';
import type { DeliveryRepository } from './repositories/delivery.repository';
import type { SecretBox } from '@estate/platform/secrets';
import { newSigningSecret, previousSecretInForce, secretPrefix } from './secrets.rules';

/** An endpoint as its owner sees it at `now`: never a secret. */
export function toWebhook(doc: EndpointDoc, now: Date): Webhook {
  const previous = previousSecretInForce(doc, now);
  return {
    id: doc.id,
    url: doc.url,
    events: doc.events,
    description: doc.description ?? null,
    enabled: doc.enabled,
    state: !doc.enabled ? 'disabled' : doc.targetRefused ? 'target_refused' : doc.failingSince ? 'failing' : 'active',
    lastError: doc.lastError ?? null,
    disabledReason: doc.disabledReason ?? null,
    failingSince: doc.failingSince ?? null,
    secretPrefix: doc.secretPrefix,
    previousSecretPrefix: previous ? (doc.previousSecretPrefix ?? null) : null,
    previousSecretExpiresAt: previous ? (doc.previousSecretExpiresAt ?? null) : null,
    version: doc.version,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

const ADMIN_ONLY = ['admin'] as const;

/** Registering, changing and removing webhook endpoints (admin keys only). */
export class EndpointsService {
  constructor(
    private readonly deps: {
      endpoints: EndpointRepository;
      deliveries: DeliveryRepository;
      secrets: SecretBox;
      /** Why a URL may not be a target (form, then resolved addresses), or null. */
      targetRefusal: (url: string) => Promise<string | null>;
      /** How long a rotated-out secret keeps signing deliveries beside the new one (0: not at all). */
      secretOverlapMs: number;
      clock: () => Date;
    },
  ) {}

  async create(who: Identity, input: WebhookCreate): Promise<WebhookWithSecret> {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    await this.checkTarget(input.url);
    if ((await this.deps.endpoints.count(who.accountId)) >= MAX_WEBHOOK_ENDPOINTS)
      throw new AppError('webhook_limit_reached', `An account may register at most ${MAX_WEBHOOK_ENDPOINTS} endpoints`);
    const secret = newSigningSecret();
    const now = this.deps.clock().toISOString();
    const doc = await this.deps.endpoints.insert({
      id: newId('whk'),
      accountId: who.accountId,
      url: input.url,
      events: input.events,
      ...(input.description ? { description: input.description } : {}),
      enabled: input.enabled,
      secretSealed: this.deps.secrets.seal(secret),
      secretPrefix: secretPrefix(secret),
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
    return { ...toWebhook(doc, this.deps.clock()), secret };
  }

  async list(who: Identity, query: WebhookListQuery) {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    const page = await this.deps.endpoints.list(who.accountId, query);
    return { ...page, items: page.items.map((doc) => toWebhook(doc, this.deps.clock())) };
  }

  async get(who: Identity, id: string): Promise<Webhook> {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    return toWebhook(await this.owned(who, id), this.deps.clock());
  }

  async update(who: Identity, id: string, patch: WebhookPatch, ifMatch?: number): Promise<Webhook> {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    if (patch.url !== undefined) await this.checkTarget(patch.url);
    const saved = await updateVersioned({
      what: 'webhook endpoint',
      ifMatch,
      read: () => this.owned(who, id),
      write: (current) => {
        const update: Update & { $set: Record<string, unknown>; $unset: Record<string, true> } = {
          $set: { updatedAt: this.deps.clock().toISOString() },
          $unset: {},
        };
        // A new target starts afresh: the failures of the old one say nothing about it.
        if (patch.url !== undefined && patch.url !== current.url) {
          update.$set.url = patch.url;
          Object.assign(update.$unset, { failingSince: true, lastError: true, targetRefused: true });
        }
        if (patch.events !== undefined) update.$set.events = patch.events;
        if (patch.description === null || patch.description === '') update.$unset.description = true;
        else if (patch.description !== undefined) update.$set.description = patch.description;
        if (patch.enabled !== undefined) {
          update.$set.enabled = patch.enabled;
          // Enabling again starts afresh: the failure record that disabled it no longer applies.
          if (patch.enabled && !current.enabled)
            Object.assign(update.$unset, {
              disabledReason: true,
              failingSince: true,
              lastError: true,
              targetRefused: true,
            });
        }
        return this.deps.endpoints.updateAt(who.accountId, id, current.version, update);
      },
    });
    return toWebhook(saved, this.deps.clock());
  }

  async remove(who: Identity, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    const current = await this.owned(who, id);
    if (ifMatch !== undefined && ifMatch !== current.version)
      throw new AppError('version_mismatch', `The webhook endpoint is at version ${current.version}, not ${ifMatch}`);
    await this.deps.endpoints.remove(who.accountId, id);
    // Its queued deliveries go with it (a worker holding one finds the endpoint gone and drops it).
    await this.deps.deliveries.removeForWebhook(id);
    return { id, deleted: true };
  }

  /**
   * A new signing secret, signing every later attempt at once; shown only in this answer. The secret it replaces
   * keeps signing beside it for the overlap (two signatures, as Standard Webhooks allows), so a receiver can be
   * given the new one without failing deliveries meanwhile. A second rotation within the overlap drops the first
   * secret at once (a leaked secret is gone after two rotations).
   */
  async rotateSecret(who: Identity, id: string): Promise<WebhookWithSecret> {
    assertRole(who, ADMIN_ONLY, 'manage webhooks');
    const secret = newSigningSecret();
    const saved = await updateVersioned({
      what: 'webhook endpoint',
      read: () => this.owned(who, id),
      write: (current) => {
        const now = this.deps.clock();
        const overlap = this.deps.secretOverlapMs > 0;
        return this.deps.endpoints.updateAt(who.accountId, id, current.version, {
          $set: {
            secretSealed: this.deps.secrets.seal(secret),
            secretPrefix: secretPrefix(secret),
            updatedAt: now.toISOString(),
            ...(overlap
              ? {
                  previousSecretSealed: current.secretSealed,
                  previousSecretPrefix: current.secretPrefix,
                  previousSecretExpiresAt: new Date(now.getTime() + this.deps.secretOverlapMs).toISOString(),
                }
              : {}),
          },
          ...(overlap
            ? {}
            : { $unset: { previousSecretSealed: true, previousSecretPrefix: true, previousSecretExpiresAt: true } }),
        });
      },
    });
    return { ...toWebhook(saved, this.deps.clock()), secret };
  }

  /** The caller's endpoint (404 for another account's: existence never leaks). */
  async owned(who: Identity, id: string): Promise<EndpointDoc> {
    const doc = await this.deps.endpoints.get(who.accountId, id);
    if (!doc) throw new AppError('webhook_not_found', `No webhook endpoint ${id}`);
    return doc;
  }

  private async checkTarget(url: string): Promise<void> {
    const refusal = await this.deps.targetRefusal(url);
    if (refusal)
      throw new AppError(
        'validation_failed',
        `The webhook URL ${refusal}. For a receiver on your own machine, run \`npm run cli -- webhooks listen --forward-to <url>\`, or start the server with WEBHOOKS_ALLOW_PRIVATE_TARGETS=1`,
        {
          errors: [{ path: 'url', message: `${refusal} (the server allows it with WEBHOOKS_ALLOW_PRIVATE_TARGETS=1)` }],
        },
      );
  }
}
