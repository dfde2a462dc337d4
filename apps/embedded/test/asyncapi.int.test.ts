import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Parser } from '@asyncapi/parser';
import { subjectDocs } from '@estate/contracts/event-catalog';
import { subjects, type Subject } from '@estate/contracts/events';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

describe('the AsyncAPI document at /asyncapi.json', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let doc: Json;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'asyncapi-'));
    product = await startEmbedded(dir);
    const res = await product.app.inject({ url: '/asyncapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
  });
  afterAll(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('parses with the AsyncAPI parser, without errors or warnings', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
    const problems = diagnostics
      .filter((d) => d.severity <= 1)
      .map((d) => `${d.code} ${d.path.join('.')}: ${d.message}`);
    expect(problems).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.address()),
    ).toEqual(expect.arrayContaining(['listings.listing.updated', 'leads.activity.record', 'jobs.{jobId}.progress']));
  });

  it('describes every subject with its stream, consumer semantics and an example payload its schema accepts', () => {
    const channels = Object.values<Json>(doc.channels);
    for (const subject of Object.keys(subjects) as Subject[]) {
      const channel = channels.find((c) => c.address === subject);
      expect([subject, channel?.description]).toEqual([subject, expect.stringContaining('JetStream stream')]);
      const example = subjectDocs[subject]?.example;
      expect([subject, example]).toEqual([subject, expect.anything()]);
      expect([subject, subjects[subject].schema.safeParse(example).error?.issues]).toEqual([subject, undefined]);
    }
    const consume = (address: string) =>
      Object.values<Json>(doc.operations).find(
        (o) =>
          o.action === 'receive' &&
          o.channel.$ref === `#/channels/${Object.keys(doc.channels).find((k) => doc.channels[k].address === address)}`,
      );
    expect(consume('listings.bulk-job.submitted')?.description).toMatch(/Work queue/);
    expect(consume('listings.listing.created')?.description).toMatch(/durable consumer/);
    expect(consume('jobs.{jobId}.progress')?.description).toMatch(/Core NATS/);
    expect(doc.components.schemas.Listing).toBeDefined();
  });
});
