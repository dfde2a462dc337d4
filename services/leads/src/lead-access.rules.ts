import type { Identity } from '@estate/contracts/accounts';
import type { ActivityActor } from '@estate/contracts/leads';
import type { RequestContext } from '@estate/platform/auth';
import { notFound } from '@estate/platform/errors';
import type { ChangeOrigin } from './lead.rules';
import type { LeadRecord } from './repositories/lead.repository';

/** Who may do what with leads (SPEC section 4; docs/decisions/0044-leads-access-and-events.md). */
export const LEAD_CAPTURERS = ['admin', 'integration'] as const;
export const LEAD_READERS = ['admin', 'agent'] as const;
export const ACTIVITY_WRITERS = ['admin', 'agent', 'integration'] as const;
export const TEAM_ADMINS = ['admin'] as const;

export function actorOf(who: Identity): ActivityActor {
  return { type: 'api_key', id: who.keyId, agentId: who.agentId };
}

/** A caller's request as the origin of a lead change: its activities are the caller's key's. */
export function originOf(ctx: RequestContext): ChangeOrigin {
  return { accountId: ctx.who.accountId, actor: actorOf(ctx.who), requestId: ctx.requestId };
}

/** An agent key sees only the leads assigned to its agent; anything else does not exist for it (404, not 403). */
export function assertVisible(who: Identity, lead: LeadRecord): void {
  if (who.role === 'agent' && lead.agentId !== who.agentId) throw notFound('lead_not_found', 'Lead', lead.id);
}
