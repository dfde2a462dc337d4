import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { ReceiverClient } from './clients/receiver.client';
import { afterAttempt, isSuccess, shouldDisable } from './delivery.rules';
import type { DeliveryDoc, DeliveryRepository } from './repositories/delivery.repository';
import type { EndpointRepository } from './repositories/endpoint.repository';
import type { SecretBox } from '@estate/platform/secrets';
import { previousSecretInForce } from './secrets.rules';

/** Opened secrets kept in memory, at most (the endpoints of a busy process). */
const OPENED_KEPT = 10_000;

/**
 * One attempt of one claimed delivery: signed as the Standard Webhooks specification says
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`), posted, and its outcome recorded —
 * success, the next attempt on the schedule, or failed once the schedule is spent. An endpoint
 * failing for five days is disabled.
 */
export class DeliveryAttemptService {
  /** Secrets opened already, by their sealed form (a rotation seals a new one): no decryption per attempt. */
  private readonly opened = new Map<string, string>();

  constructor(
    private readonly deps: {
      endpoints: EndpointRepository;
      deliveries: DeliveryRepository;
      receiver: ReceiverClient;
      secrets: SecretBox;
      retryScheduleMs: readonly number[];
      clock: () => Date;
      log: Logger;
    },
  ) {}

  async attempt(doc: DeliveryDoc, lease: string): Promise<void> {
    const endpoint = await this.deps.endpoints.collection.findOne({ id: doc.webhookId });
    if (!endpoint || !endpoint.enabled) {
      await this.deps.deliveries.finish(doc.id, lease, {
        $set: { state: 'failed', lastError: endpoint ? 'endpoint disabled' : 'endpoint deleted' },
        $unset: { nextAttemptAt: true, lease: true },
      });
      return;
    }
    const sentAt = this.deps.clock();
    // After a rotation, the replaced secret signs too for a while: a receiver verifies with either.
    const secrets = [endpoint.secretSealed];
    if (previousSecretInForce(endpoint, sentAt) && endpoint.previousSecretSealed)
      secrets.push(endpoint.previousSecretSealed);
    const signature = secrets
      .map((sealed) => new Webhook(this.secretOf(sealed)).sign(doc.eventId, sentAt, doc.body))
      .join(' ');
    const answer = await this.deps.receiver.post(endpoint.url, doc.body, {
      'webhook-id': doc.eventId,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': signature,
    });
    const ok = isSuccess(answer.status);
    const attempts = doc.attempts + 1;
    const now = this.deps.clock();
    const outcome = afterAttempt(ok, attempts, now, this.deps.retryScheduleMs);
    const $set: Record<string, unknown> = {
      state: outcome.state,
      attempts,
      lastAttemptAt: now.toISOString(),
      lastResponseTimeMs: answer.responseTimeMs,
    };
    const $unset: Record<string, true> = { lease: true };
    if (answer.status !== null) $set.lastStatusCode = answer.status;
    else $unset.lastStatusCode = true;
    if (ok) $unset.lastError = true;
    else $set.lastError = answer.error ?? `answered ${answer.status}`;
    if (outcome.state === 'pending') $set.nextAttemptAt = outcome.nextAttemptAt.toISOString();
    else $unset.nextAttemptAt = true;
    const recorded = await this.deps.deliveries.finish(doc.id, lease, { $set, $unset });
    if (!recorded)
      this.deps.log.warn(
        { deliveryId: doc.id },
        'delivery was taken over or removed while it was sent; outcome dropped',
      );

    if (ok) {
      if (endpoint.failingSince || endpoint.lastError)
        await this.deps.endpoints.markHealthy(endpoint.id, now.toISOString());
      return;
    }
    const failure = {
      deliveryId: doc.id,
      webhookId: endpoint.id,
      status: answer.status,
      error: answer.error,
      attempts,
    };
    // A refused target fails every attempt until the endpoint or the server's settings change: worth an operator's eye.
    if (answer.refused)
      this.deps.log.warn(
        failure,
        'webhook target refused: it is http, private, loopback or link-local; change the endpoint URL, or allow such targets with WEBHOOKS_ALLOW_PRIVATE_TARGETS=1 (development only)',
      );
    else this.deps.log.info(failure, 'webhook delivery attempt failed');
    const failing = await this.deps.endpoints.markFailing(endpoint.id, now.toISOString(), {
      error: $set.lastError as string,
      targetRefused: answer.refused === true,
    });
    if (failing && shouldDisable(failing.failingSince, now)) {
      await this.deps.endpoints.disable(endpoint.id, 'Every delivery failed for 5 days', now.toISOString());
      this.deps.log.warn({ webhookId: endpoint.id }, 'webhook endpoint disabled after failing for 5 days');
    }
  }

  private secretOf(sealed: string): string {
    let secret = this.opened.get(sealed);
    if (secret === undefined) {
      secret = this.deps.secrets.open(sealed);
      if (this.opened.size >= OPENED_KEPT) this.opened.clear();
      this.opened.set(sealed, secret);
    }
    return secret;
  }
}
