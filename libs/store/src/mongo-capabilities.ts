import { isPlainObject } from './pull-matcher';

type Raw = Record<string, unknown>;

/**
 * What the server can do that the port relies on. Every single-document write is one server command
 * (`findAndModify`, `update`, `delete`), atomic per document: MongoDB is, and so is the test engine
 * (FerretDB behind the write-serialising relay of tools/ferretdb). Only what a server lacks is
 * worked around here, and only when the flag says so.
 */
export interface EngineCapabilities {
  /**
   * `$pull` with a condition (`{ $pull: { outbox: { eventId: { $in: [...] } } } }`). FerretDB v1 pulls only
   * elements equal to the condition; without it the adapter computes the kept array and writes it with a
   * compare-and-set on the array read.
   */
  conditionalPull: boolean;
  /**
   * A `find` for a set of ids (`{ _id: { $in: [...] } }`) answered from the `_id` index. FerretDB v1 reads every
   * document the rest of the filter matches and tests `$in` itself; without it the adapter looks each id up
   * (`idSetLookups`).
   */
  idSetLookup: boolean;
}

const MONGODB: EngineCapabilities = { conditionalPull: true, idSetLookup: true };
const FERRETDB_V1: EngineCapabilities = { conditionalPull: false, idSetLookup: false };

/** What a server can do, from its `buildInfo`. */
export function capabilitiesOf(buildInfo: Raw): EngineCapabilities {
  return 'ferretdbVersion' in buildInfo ? FERRETDB_V1 : MONGODB;
}

/** Conditional `$pull`s (a condition object rather than a value): the ones FerretDB v1 cannot apply. */
export const conditionalPulls = (update: Raw): [string, Raw][] =>
  isPlainObject(update.$pull)
    ? (Object.entries(update.$pull).filter(([, cond]) => isPlainObject(cond)) as [string, Raw][])
    : [];
