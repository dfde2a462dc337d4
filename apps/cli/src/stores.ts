import { storeFile } from '@estate/embedded';
import { type DocumentStore } from '@estate/store';
import { MongoDocumentStore } from '@estate/store/mongo.document-store';
import { SqliteDocumentStore } from '@estate/store/sqlite.document-store';
import type { CliTarget } from './config';

/** A service's store as the CLI reaches it: its SQLite file in DATA_DIR, or its database on the distributed profile. */
export async function openStore(target: CliTarget, service: 'gateway' | 'leads' = 'gateway'): Promise<DocumentStore> {
  if (target.kind === 'distributed') {
    const dbName = service === 'gateway' ? target.database : target.leadsDatabase;
    return MongoDocumentStore.connect(target.mongodbUrl, { dbName });
  }
  return SqliteDocumentStore.open(storeFile(target.dataDir, service));
}
