import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NedbDocumentStore } from '../src/nedb.document-store';
import { documentStoreContract } from './document-store.contract';

documentStoreContract('nedb (data folder)', () => {
  let dir = '';
  return {
    async open() {
      dir = mkdtempSync(join(tmpdir(), 'nedb-contract-'));
      return new NedbDocumentStore(dir);
    },
    async reopen() {
      return new NedbDocumentStore(dir);
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
