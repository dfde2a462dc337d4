import type { Identity } from '@estate/contracts/accounts';
import { problem } from '@estate/contracts/errors';
import { agent } from '@estate/contracts/leads';
import { signRequest } from '@estate/platform/auth';
import { AppError } from '@estate/platform/errors';

/** Where an agent stands for the keys bound to it; null when missing (another account's agent included). */
export type AgentState = { active: boolean; version: number } | null;

/**
 * How the gateway learns whether an agent of the caller's account exists and is active (an agent
 * key must name one). The leads service owns agents: distributed, it is asked over HTTP with the
 * caller's signed identity; embedded, with a direct call into the leads service of the process.
 */
export interface AgentsReader {
  state(who: Identity, agentId: string, requestId?: string): Promise<AgentState>;
}

/** Agents read from the leads service over HTTP, as the caller (distributed profile). */
export class LeadsClient implements AgentsReader {
  constructor(private readonly options: { leadsUrl: string; signingSecret: string; timeoutMs?: number }) {}

  async state(who: Identity, agentId: string, requestId?: string): Promise<AgentState> {
    const path = `/v1/agents/${encodeURIComponent(agentId)}`;
    let res: Response;
    try {
      res = await fetch(`${this.options.leadsUrl}${path}`, {
        headers: {
          accept: 'application/json',
          ...(requestId ? { 'x-request-id': requestId } : {}),
          ...signRequest(who, { caller: 'gateway', secret: this.options.signingSecret, method: 'GET', url: path }),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      throw new AppError('bad_gateway', 'The leads service did not answer', { cause: err });
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (res.ok) {
      const parsed = agent.safeParse(body);
      if (parsed.success) return { active: parsed.data.active, version: parsed.data.version };
      throw new AppError('bad_gateway', 'The leads service answered with something that is not an agent', {
        cause: parsed.error,
      });
    }
    const refused = problem.safeParse(body);
    if (refused.success && refused.data.code === 'agent_not_found') return null;
    throw new AppError('bad_gateway', `The leads service answered ${res.status}`, { cause: body });
  }
}
