import { outboxEntry, type OutboxRelay } from '@estate/bus';
import type { Identity } from '@estate/contracts/accounts';
import {
  agentInput,
  type Agent,
  type AgentCreate,
  type AgentListQuery,
  type AgentPatch,
} from '@estate/contracts/leads';
import { assertRole } from '@estate/platform/auth';
import { AppError, notFound, validationError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { applyMergePatch } from '@estate/platform/merge-patch';
import { decodeCursor, type SortOrder } from '@estate/platform/pagination';
import { allOf, keyset, pageOf, updateVersioned } from '@estate/store';
import type { Filter } from '@estate/store';
import type { Logger } from 'pino';
import { e164Or422 } from './contact.rules';
import { TEAM_ADMINS } from './lead-access.rules';
import type { LeadWriter } from './lead-writer.service';
import { AGENTS_COLLECTION, type AgentRepository } from './repositories/agent.repository';
import type { LeadRepository } from './repositories/lead.repository';
import type { RoutingRepository } from './repositories/routing.repository';

export interface AgentsDeps {
  agents: AgentRepository;
  leads: LeadRepository;
  routing: RoutingRepository;
  writer: LeadWriter;
  /** Publishes the agent events written with each change (`leads.agent.updated`, `.deleted`). */
  outbox: Pick<OutboxRelay, 'relayNow'>;
  clock: () => Date;
  log: Logger;
}

/** The fields an agent event's `changes` names. */
const AGENT_FIELDS = ['name', 'email', 'phone', 'active', 'capacity', 'areas'] as const;
const DELETE_ATTEMPTS = 3;
const ORDER: SortOrder = { field: 'createdAt', direction: 1 };
/** A slot this old whose lead does not hold it was left by a crash between two writes. */
export const SLOT_GRACE_MS = 10 * 60 * 1000;

export class AgentsService {
  constructor(private readonly deps: AgentsDeps) {}

  async create(who: Identity, input: AgentCreate): Promise<Agent> {
    assertRole(who, TEAM_ADMINS, 'manage agents');
    const now = this.deps.clock().toISOString();
    const agent: Agent = {
      id: newId('agt'),
      ...input,
      phone: e164Or422(input.phone) ?? null,
      openLeads: 0,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    return this.deps.agents.insert(who.accountId, agent);
  }

  async list(
    who: Identity,
    query: AgentListQuery,
  ): Promise<{ items: Agent[]; nextCursor: string | null; total: number }> {
    assertRole(who, TEAM_ADMINS, 'read agents');
    const filter: Filter = {
      accountId: who.accountId,
      ...(query.active !== undefined ? { active: query.active } : {}),
    };
    const { sort, after } = keyset(ORDER, decodeCursor(query.cursor, who.accountId));
    const [fetched, total] = await Promise.all([
      this.deps.agents.find(allOf([filter, after]), { sort, limit: query.limit + 1 }),
      this.deps.agents.count(filter),
    ]);
    return { ...pageOf(fetched, query.limit, ORDER, who.accountId), total };
  }

  async get(who: Identity, id: string): Promise<Agent> {
    assertRole(who, TEAM_ADMINS, 'read agents');
    const agent = await this.deps.agents.get(who.accountId, id);
    if (!agent) throw notFound('agent_not_found', 'Agent', id);
    return agent;
  }

  async update(who: Identity, id: string, patch: AgentPatch, ifMatch?: number): Promise<Agent> {
    return updateVersioned({
      what: 'agent',
      ifMatch,
      read: () => this.get(who, id),
      write: async (current) => {
        const { id: _id, openLeads, version, createdAt, updatedAt, phone, ...writable } = current;
        const parsed = agentInput.safeParse(applyMergePatch({ ...writable, ...(phone ? { phone } : {}) }, patch));
        if (!parsed.success) throw validationError(parsed.error, [], 'The agent would not be valid after this change');
        const next: Agent = {
          ...current,
          ...parsed.data,
          phone: parsed.data.phone === phone ? phone : (e164Or422(parsed.data.phone) ?? null),
          version: version + 1,
          updatedAt: this.deps.clock().toISOString(),
        };
        const changes = AGENT_FIELDS.filter((f) => JSON.stringify(current[f]) !== JSON.stringify(next[f]));
        const event =
          changes.length > 0
            ? outboxEntry('leads.agent.updated', {
                accountId: who.accountId,
                agentId: id,
                version: next.version,
                occurredAt: next.updatedAt,
                active: next.active,
                changes,
              })
            : undefined;
        const written = await this.deps.agents.replace(who.accountId, next, version, event);
        if (written && event) await this.publish(id);
        return written;
      },
    });
  }

  /** Deletes an agent holding no open lead (and takes it out of the rules and the team default). */
  async remove(who: Identity, id: string, ifMatch?: number): Promise<{ id: string; deleted: true }> {
    // Another write between the read and the delete (a slot taken, an edit) makes the delete miss: read again.
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(who, id);
      if (ifMatch !== undefined && ifMatch !== current.version)
        throw new AppError('version_mismatch', `The agent is at version ${current.version}, not ${ifMatch}`);
      if (current.openLeads > 0 || attempt > DELETE_ATTEMPTS)
        throw new AppError(
          'conflict',
          `Agent ${id} holds ${current.openLeads} open leads: reassign or close them first, or set the agent inactive`,
          { fields: { openLeads: current.openLeads } },
        );
      const at = this.deps.clock().toISOString();
      const event = outboxEntry('leads.agent.deleted', {
        accountId: who.accountId,
        agentId: id,
        version: current.version + 1,
        occurredAt: at,
      });
      if (!(await this.deps.agents.deleteIdle(who.accountId, id, current.version, event))) continue;
      await this.publish(id);
      await this.deps.routing.forgetAgent(who.accountId, id, at);
      return { id, deleted: true };
    }
  }

  /** Publishes the agent's pending events now; the relay's sweep retries what fails here. */
  private async publish(id: string): Promise<void> {
    await this.deps.outbox
      .relayNow(AGENTS_COLLECTION, id)
      .catch((err: unknown) => this.deps.log.warn({ err, agentId: id }, 'agent event not published yet; will retry'));
  }

  /**
   * Gives back capacity slots left behind by a process that died between taking a slot and writing
   * the lead (or between writing the lead and releasing the old slot). Only slots older than the
   * grace period are looked at, so routings in flight are never touched.
   */
  async auditSlots(): Promise<number> {
    const before = new Date(this.deps.clock().getTime() - SLOT_GRACE_MS);
    let released = 0;
    for (const agent of await this.deps.agents.slotsTakenBefore(before)) {
      for (const token of agent.tokens) {
        const holder = await this.deps.leads.findBySlotToken(token);
        if (holder && holder.slot?.agentId === agent.id) continue;
        await this.deps.writer.release(agent.id, token);
        released++;
        this.deps.log.warn({ agentId: agent.id, token }, 'released a capacity slot no lead holds');
      }
    }
    return released;
  }
}
