import type { Bus, Subscription } from '@estate/bus';
import type { Logger } from 'pino';
import type { AccessService } from '../access.service';

/**
 * Revokes the API keys of an agent that was deactivated (`leads.agent.updated` with `active: false`)
 * or deleted. Durable: an event published while no gateway runs is handled at the next start. The
 * revocation reaches every replica's key cache through the usual notification. Only keys of the
 * event's own account and agent are touched, and only those made before that agent version, so a
 * repeated or late event changes nothing.
 */
export class AgentKeysSubscriber {
  private subscription?: Subscription;

  constructor(private readonly deps: { bus: Pick<Bus, 'subscribe'>; access: AccessService; log: Logger }) {}

  async start(): Promise<void> {
    this.subscription = await this.deps.bus.subscribe(
      ['leads.agent.updated', 'leads.agent.deleted'],
      { durable: 'gateway-agent-keys' },
      async ({ subject, payload }) => {
        if (subject === 'leads.agent.updated' && payload.active) return;
        const revoked = await this.deps.access.revokeAgentKeys(payload.accountId, payload.agentId, payload.version);
        if (revoked.length > 0)
          this.deps.log.info(
            { accountId: payload.accountId, agentId: payload.agentId, keyIds: revoked },
            subject === 'leads.agent.deleted'
              ? 'deleted agent: its API keys revoked'
              : 'inactive agent: its API keys revoked',
          );
      },
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }
}
