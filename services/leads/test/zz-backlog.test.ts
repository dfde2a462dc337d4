import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NedbDocumentStore } from '@estate/store';
import { admin, startLeads } from './harness';
it('backlog', async () => {
  const store = new NedbDocumentStore(mkdtempSync(join(tmpdir(), 'backlog-')));
  const h = await startLeads({ store, record: false });
  const col = await store.collection<{ id: string }>('leads');
  let n = 0; const until = Date.now() + 8000;
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (Date.now() < until) { const i = n++; await h.call(admin, 'POST', '/v1/leads', { name: `B ${i}`, email: `b${i}@x.io`, source: 'zillow', message: 'hi' }); }
  }));
  console.log('captured', n, 'in 8 s; pending outboxes right after:', await col.count({ _outboxPending: true }));
  const t = Date.now();
  while ((await col.count({ _outboxPending: true })) > 0 && Date.now() - t < 60000) await new Promise((r) => setTimeout(r, 200));
  console.log('drained after ms', Date.now() - t);
  await h.close();
}, 120_000);
