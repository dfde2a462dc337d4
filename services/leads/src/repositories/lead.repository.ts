import { findOwned, replaceFields, storable } from '@estate/store';
import type { ActivitySummary, Assignment, LeadStatus, ScoreBreakdown } from '@estate/contracts/leads';
import type { OutboxDoc, OutboxEntry, Unit } from '@estate/bus';
import type { DocumentCollection, DocumentStore, Filter, FindOptions } from '@estate/store';
import { emailKey, phoneKey, searchTokens } from '../contact.rules';
import type { EngagementType } from '../scoring.rules';

/** The lead as the service works on it: the public fields plus what it keeps to compute them. */
export interface LeadRecord {
  id: string;
  accountId: string;
  name: string;
  email?: string;
  phone?: string;
  source: string;
  status: LeadStatus;
  agentId?: string;
  assignment?: Assignment;
  score: number;
  scoreSource: 'engine' | 'manual';
  scoreBreakdown: ScoreBreakdown;
  tags: string[];
  propertyInterests: { listingId: string; note?: string }[];
  /** Timeline aggregates the score is computed from. */
  activityCounts: Partial<Record<EngagementType, number>>;
  lastActivityByType: Partial<Record<EngagementType, string>>;
  /** The newest few activities (by occurredAt), served with the lead without a timeline query. */
  recentActivities: ActivitySummary[];
  /** Ids of the latest activities applied, newest last: a redelivered command finds its own here. */
  appliedActivityIds: string[];
  /** The capacity slot the lead holds on its agent while it is open and assigned. */
  slot?: { agentId: string; token: string };
  createdAt: string;
  updatedAt: string;
  lastActivityAt: string;
  version: number;
}

/** As stored: plus the derived fields queries use, and the outbox. */
type LeadDoc = LeadRecord &
  OutboxDoc & {
    emailKey?: string;
    phoneKey?: string;
    searchTokens: string[];
    interestListingIds: string[];
  };

/** A lead as read: what a compare-and-set write starts from. */
export interface StoredLead {
  lead: LeadRecord;
}

export const LEADS_COLLECTION = 'leads';

const REPLACED_FIELDS = [
  'name',
  'email',
  'phone',
  'source',
  'status',
  'agentId',
  'assignment',
  'score',
  'scoreSource',
  'scoreBreakdown',
  'tags',
  'propertyInterests',
  'activityCounts',
  'lastActivityByType',
  'recentActivities',
  'appliedActivityIds',
  'slot',
  'updatedAt',
  'lastActivityAt',
  'version',
  'emailKey',
  'phoneKey',
  'searchTokens',
  'interestListingIds',
] as const;

function derived(lead: LeadRecord): Pick<LeadDoc, 'emailKey' | 'phoneKey' | 'searchTokens' | 'interestListingIds'> {
  return {
    emailKey: lead.email ? emailKey(lead.accountId, lead.email) : undefined,
    phoneKey: lead.phone ? phoneKey(lead.accountId, lead.phone) : undefined,
    searchTokens: searchTokens(lead),
    interestListingIds: lead.propertyInterests.map((i) => i.listingId),
  };
}

function toRecord(doc: LeadDoc): LeadRecord {
  const {
    _outbox,
    _outboxPending,
    _deleted,
    emailKey: _e,
    phoneKey: _p,
    searchTokens: _s,
    interestListingIds: _i,
    ...record
  } = doc;
  return record;
}

function toStored(doc: LeadDoc): StoredLead {
  return { lead: toRecord(doc) };
}

export class LeadRepository {
  private constructor(readonly collection: DocumentCollection<LeadDoc>) {}

  /**
   * `searchTokenIndex`: whether the store serves `q` from a multikey index on the leads' search tokens (MongoDB);
   * a store that indexes no array members (SQLite) checks the tokens of the account's leads instead.
   */
  static async open(store: DocumentStore, options: { searchTokenIndex: boolean }): Promise<LeadRepository> {
    const col = await store.collection<LeadDoc>(LEADS_COLLECTION, [
      { fields: { emailKey: 1 }, unique: true, sparse: true },
      { fields: { phoneKey: 1 }, unique: true, sparse: true },
      { fields: { accountId: 1, createdAt: -1 } },
      { fields: { accountId: 1, agentId: 1 } },
      ...(options.searchTokenIndex ? [{ fields: { searchTokens: 1 as const } }] : []),
      { fields: { interestListingIds: 1 } },
      { fields: { 'slot.token': 1 } },
      { fields: { _outboxPending: 1 } },
    ]);
    return new LeadRepository(col);
  }

  /** Inserts a new lead with its events; throws DuplicateKeyError when its email or phone is taken in the account. */
  async insert(unit: Unit, lead: LeadRecord, events: OutboxEntry[]): Promise<void> {
    await unit.insert(this.collection, storable({ ...lead, ...derived(lead) }) as LeadDoc, events);
  }

  async get(accountId: string, id: string): Promise<StoredLead | null> {
    const doc = await findOwned(this.collection, id, accountId);
    return doc ? toStored(doc) : null;
  }

  /** The lead that has this email, else the one that has this phone, in the account. */
  async findByContact(accountId: string, contact: { email?: string; phone?: string }): Promise<StoredLead | null> {
    // Two indexed lookups rather than one `$or`, which not every engine answers from its indexes.
    const byEmail = contact.email
      ? await this.collection.findOne({ emailKey: emailKey(accountId, contact.email) })
      : null;
    if (byEmail) return toStored(byEmail);
    const byPhone = contact.phone
      ? await this.collection.findOne({ phoneKey: phoneKey(accountId, contact.phone) })
      : null;
    return byPhone ? toStored(byPhone) : null;
  }

  /**
   * Compare-and-set: writes `next` with its events if the lead is still at the version read. Null when someone
   * else wrote first. Throws DuplicateKeyError on a taken email/phone.
   */
  async replace(unit: Unit, current: StoredLead, next: LeadRecord, events: OutboxEntry[]): Promise<LeadRecord | null> {
    const fields = replaceFields({ ...next, ...derived(next) }, REPLACED_FIELDS);
    const doc = await unit.update(
      this.collection,
      { id: current.lead.id, accountId: current.lead.accountId, version: current.lead.version },
      fields,
      events,
    );
    return doc ? toRecord(doc) : null;
  }

  async find(filter: Filter, options: FindOptions): Promise<LeadRecord[]> {
    return (await this.collection.find(filter, options)).map(toRecord);
  }

  async count(filter: Filter): Promise<number> {
    return this.collection.count(filter);
  }

  async findBySlotToken(token: string): Promise<LeadRecord | null> {
    const doc = await this.collection.findOne({ 'slot.token': token });
    return doc ? toRecord(doc) : null;
  }
}
