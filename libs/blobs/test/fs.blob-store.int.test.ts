import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlobStore } from '../src/fs.blob-store';
import { blobStoreContract } from './blob-store.contract';

blobStoreContract('fs (data folder)', () => {
  let dir = '';
  return {
    async open() {
      dir = mkdtempSync(join(tmpdir(), 'blobs-contract-'));
      return FsBlobStore.open(dir);
    },
    async reopen() {
      return FsBlobStore.open(dir);
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
