import { randomBytes } from 'node:crypto';
import { notDeleted, updateWithOutbox, type OutboxDoc, type OutboxEntry } from '@estate/bus';
import type { Agent } from '@estate/contracts/leads';
import {
  allOf,
  findOwned,
  updateVersioned,
  type DocumentCollection,
  type DocumentStore,
  type Filter,
  type FindOptions,
  replaceFields,
  storable,
} from '@estate/store';

/**
 * A capacity slot is a token: one open lead the agent holds. Plain strings keep agent documents
 * small (they hold one per open lead); the token starts with the time it was taken, base 36.
 */
type AgentDoc = Omit<Agent, 'phone'> & OutboxDoc & { accountId: string; phone?: string; slots: string[] };

/**
 * Reads leave the slot tokens out: an agent holds one per open lead, so they are most of the document, and only
 * the leak check (`slotsTakenBefore`) needs them. Routing reads every agent of the account per decision.
 */
const WITHOUT_SLOTS = { omit: ['slots'] } as const;

const newSlotToken = (at: Date) => `${at.getTime().toString(36)}-${randomBytes(9).toString('base64url')}`;
/** When a slot token was taken. */
export const slotTakenAt = (token: string) => new Date(Number.parseInt(token.slice(0, token.indexOf('-')), 36));

export const AGENTS_COLLECTION = 'agents';

const WRITABLE = ['name', 'email', 'phone', 'active', 'capacity', 'areas', 'version', 'updatedAt'] as const;
/** Attempts at a reservation when the agent's capacity is being edited at the same moment. */
const RESERVE_ATTEMPTS = 3;

function toAgent(doc: AgentDoc): Agent {
  const { accountId, slots, _outbox, _outboxPending, _deleted, ...rest } = doc;
  return { ...rest, phone: rest.phone ?? null };
}

/**
 * Agents and their capacity. `openLeads` is a counter changed only together with `slots`, in one
 * atomic single-document update, so capacity holds under concurrent routing on every engine and
 * across replicas (see docs/decisions/0043-leads-routing.md).
 */
export class AgentRepository {
  private constructor(readonly collection: DocumentCollection<AgentDoc>) {}

  static async open(store: DocumentStore): Promise<AgentRepository> {
    const col = await store.collection<AgentDoc>(AGENTS_COLLECTION, [
      { fields: { accountId: 1, createdAt: 1 } },
      { fields: { _outboxPending: 1 } },
    ]);
    return new AgentRepository(col);
  }

  async insert(accountId: string, agent: Agent): Promise<Agent> {
    await this.collection.insertOne(storable({ ...agent, accountId, slots: [] }) as AgentDoc);
    return agent;
  }

  async get(accountId: string, id: string): Promise<Agent | null> {
    const doc = await findOwned(this.collection, id, accountId, WITHOUT_SLOTS);
    return doc ? toAgent(doc) : null;
  }

  async find(filter: Filter, options: FindOptions): Promise<Agent[]> {
    return (await this.collection.find(allOf([filter, notDeleted]), { ...options, ...WITHOUT_SLOTS })).map(toAgent);
  }

  async count(filter: Filter): Promise<number> {
    return this.collection.count(allOf([filter, notDeleted]));
  }

  async allOf(accountId: string): Promise<Agent[]> {
    return this.find({ accountId }, { sort: { createdAt: 1, id: 1 } });
  }

  /** Writes the writable fields, and the change's event in the agent's outbox, if the agent is still at `expectedVersion`. */
  async replace(accountId: string, next: Agent, expectedVersion: number, event?: OutboxEntry): Promise<Agent | null> {
    const update = replaceFields(next, WRITABLE);
    const doc = await this.collection.updateOne(
      { id: next.id, accountId, version: expectedVersion, ...notDeleted },
      event ? updateWithOutbox(update, event) : update,
    );
    return doc ? toAgent(doc) : null;
  }

  /**
   * Deletes an agent that holds no open lead, if it is still at `expectedVersion`; false when it is
   * missing, changed or still holds some. The document stays as a tombstone (hidden from every read)
   * until the outbox relay has published `event`.
   */
  async deleteIdle(accountId: string, id: string, expectedVersion: number, event: OutboxEntry): Promise<boolean> {
    const doc = await this.collection.updateOne(
      { id, accountId, openLeads: 0, version: expectedVersion, ...notDeleted },
      updateWithOutbox({ $set: { _deleted: true, active: false, version: expectedVersion + 1 } }, event),
    );
    return doc !== null;
  }

  /**
   * Takes a capacity slot if the agent is active and under capacity (and, for least loaded, still
   * has `expectedLoad` open leads). Resolves to the slot token, or null.
   */
  async reserve(accountId: string, agentId: string, at: Date, expectedLoad?: number): Promise<string | null> {
    let attempt = 0;
    const reserved = await updateVersioned<AgentDoc | null, { token: string | null }>({
      what: 'agent',
      attempts: RESERVE_ATTEMPTS,
      versionOf: (agent) => agent?.version ?? 0,
      read: () => findOwned(this.collection, agentId, accountId, WITHOUT_SLOTS),
      write: async (agent) => {
        attempt++;
        if (!agent || !agent.active || agent.openLeads >= agent.capacity) return { token: null };
        if (expectedLoad !== undefined && agent.openLeads !== expectedLoad) return { token: null };
        const token = newSlotToken(at);
        // The capacity read is part of the filter: an edit in between makes this miss, and we look again.
        const load = expectedLoad !== undefined ? expectedLoad : { $lt: agent.capacity };
        const taken = await this.collection.updateOne(
          { id: agentId, accountId, active: true, capacity: agent.capacity, openLeads: load, ...notDeleted },
          { $inc: { openLeads: 1 }, $push: { slots: token } },
        );
        if (taken) return { token };
        // Least loaded chose the agent at that load, so it chooses again; an agent whose capacity keeps changing counts as full.
        return expectedLoad !== undefined || attempt >= RESERVE_ATTEMPTS ? { token: null } : null;
      },
    });
    return reserved.token;
  }

  /** Takes a slot whatever the capacity (an admin's manual assignment, a lead reopened); null when the agent does not exist. */
  async hold(accountId: string, agentId: string, at: Date): Promise<string | null> {
    const token = newSlotToken(at);
    const doc = await this.collection.updateOne(
      { id: agentId, accountId, ...notDeleted },
      { $inc: { openLeads: 1 }, $push: { slots: token } },
    );
    return doc ? token : null;
  }

  /** Gives a slot back; a second release of the same token changes nothing. */
  async release(agentId: string, token: string): Promise<boolean> {
    const doc = await this.collection.updateOne(
      { id: agentId, slots: token },
      { $inc: { openLeads: -1 }, $pull: { slots: token } },
    );
    return doc !== null;
  }

  /** Every agent's slot tokens taken before `before` (candidates for the leak check after a crash). */
  async slotsTakenBefore(before: Date): Promise<{ id: string; tokens: string[] }[]> {
    // Agents are few per account, and this runs every few minutes: reading them all is fine.
    const docs = await this.collection.find({ openLeads: { $gt: 0 } }, {});
    return docs
      .map((d) => ({ id: d.id, tokens: d.slots.filter((t) => slotTakenAt(t) < before) }))
      .filter((a) => a.tokens.length > 0);
  }
}
