import type { Bus, UnitOfWork } from '@estate/bus';
import { MongoUnitOfWork } from '@estate/bus/mongo.unit-of-work';
import { SqliteUnitOfWork } from '@estate/bus/sqlite.unit-of-work';
import type { DocumentStore } from '@estate/store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import type { Logger } from 'pino';

/**
 * The unit of work a profile composes over `store`, as the composition roots choose it: SQLite's transaction
 * with its outbox table, or the in-document outbox (MongoDB; also on SQLite with `inDocument`, to run the
 * MongoDB write path where nothing commits together).
 */
export function unitsFor(
  store: DocumentStore,
  bus: Bus,
  log: Logger,
  options: { inDocument?: boolean } = {},
): UnitOfWork {
  return store instanceof SqliteDocumentStore && !options.inDocument
    ? new SqliteUnitOfWork({ store, bus, log })
    : new MongoUnitOfWork({ bus, log });
}
