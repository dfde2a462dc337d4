import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** Every operation of the document as [method, path, operation]. */
function operations(doc: Json): [string, string, Json][] {
  return Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item).map(([method, op]): [string, string, Json] => [method, path, op]),
  );
}

describe('the OpenAPI document at /openapi.json', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let doc: Json;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    product = await startEmbedded(dir, { publicBaseUrl: 'https://api.brokerage.test' });
    const res = await product.app.inject({ url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
  });
  afterAll(async () => {
    await product.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has one component per type, without $id, $schema or *Input twins', () => {
    const names = Object.keys(doc.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['Listing', 'ListingCreate', 'Lead', 'LeadCapture', 'Problem']));
    expect(names.filter((n) => n.endsWith('Input'))).toEqual([]);
    for (const schema of Object.values<Json>(doc.components.schemas)) {
      expect(schema.$id).toBeUndefined();
      expect(schema.$schema).toBeUndefined();
    }
    // A field with a default is optional in a request body, required in the answer.
    expect(doc.components.schemas.ListingCreate.required).not.toContain('status');
    expect(doc.components.schemas.Listing.required).toContain('status');
  });

  it('names, tags, summarises and documents every operation with its real answers and headers', () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThanOrEqual(41);
    const ids = ops.map(([, , op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tagNames = doc.tags.map((t: Json) => t.name);
    for (const t of doc.tags) expect(t.description).toEqual(expect.any(String));
    for (const [method, path, op] of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      expect([where, op.operationId]).toEqual([where, expect.stringMatching(/^[a-z][A-Za-z]+$/)]);
      expect([where, op.summary]).toEqual([where, expect.any(String)]);
      expect([where, tagNames.includes(op.tags?.[0])]).toEqual([where, true]);
      for (const [code, response] of Object.entries<Json>(op.responses)) {
        expect([where, code, response.description]).not.toEqual([where, code, 'Default Response']);
        expect(response.headers['x-request-id']).toBeDefined();
        if (Number(code) >= 400)
          expect([where, code, Object.keys(response.content)]).toEqual([where, code, ['application/problem+json']]);
      }
      if (path.startsWith('/v1/')) {
        expect([where, op.responses['429']?.headers['Retry-After']]).toEqual([where, expect.anything()]);
        expect(op.responses['429'].headers['RateLimit-Remaining']).toBeDefined();
      }
      if (op.requestBody?.content['application/json'])
        expect([where, op.requestBody.content['application/json'].example]).toEqual([where, expect.anything()]);
    }
    const byId = Object.fromEntries(ops.map(([, , op]) => [op.operationId, op]));
    // The headers an operation reads are among its own parameters, not behind a reference.
    const headers = (op: Json) => (op.parameters ?? []).filter((p: Json) => p.in === 'header').map((p: Json) => p.name);
    for (const [method, path, op] of ops)
      if (method === 'post' && path.startsWith('/v1/'))
        expect([`POST ${path}`, headers(op)]).toEqual([`POST ${path}`, expect.arrayContaining(['Idempotency-Key'])]);
    expect(byId.createListing.parameters).toContainEqual(
      expect.objectContaining({
        name: 'Idempotency-Key',
        in: 'header',
        schema: expect.objectContaining({ type: 'string' }),
      }),
    );
    expect(headers(byId.updateListing)).toContain('If-Match');
    expect(headers(byId.deleteListing)).toContain('If-Match');
    expect(byId.updateListing.responses['200'].headers.ETag).toBeDefined();
    expect(byId.createListing.responses['201'].headers.Location).toBeDefined();
    expect(byId.bulkUpsertListings.responses['202'].headers.Location).toBeDefined();
    expect(byId.addListingMedia.requestBody.content['multipart/form-data'].schema.properties.file.items.format).toBe(
      'binary',
    );
    expect(byId.followJobEvents.responses['200'].content['text/event-stream']).toBeDefined();
    expect(byId.getMediaFile.security).toEqual([]);
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'https://api.brokerage.test' })]);
  });

  it('shows no bound the contracts do not mean, and on each operation only the errors it can answer', () => {
    expect(JSON.stringify(doc)).not.toContain(String(Number.MAX_SAFE_INTEGER));
    const listing = doc.components.schemas.Listing;
    expect(listing.properties.version).toEqual(expect.objectContaining({ type: 'integer' }));
    expect(listing.properties.version.minimum).toBeUndefined();
    for (const [method, path, op] of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      const codes = Object.keys(op.responses);
      const ifMatch = (op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'If-Match');
      if (method === 'get') {
        expect([where, codes.filter((c) => ['409', '413', '415'].includes(c))]).toEqual([where, []]);
        if (!path.includes('{')) expect([where, codes.includes('404')]).toEqual([where, false]);
      }
      if (!ifMatch) expect([where, codes.includes('412')]).toEqual([where, false]);
    }
    const byId = Object.fromEntries(operations(doc).map(([, , op]) => [op.operationId, op]));
    expect(Object.keys(byId.getWebhook.responses)).toEqual(
      expect.arrayContaining(['200', '401', '403', '404', '422', '429']),
    );
    expect(Object.keys(byId.updateListing.responses)).toEqual(expect.arrayContaining(['409', '412', '413', '415']));
  });

  it('says the cross-field rules of request bodies, as the API checks them', () => {
    const schemas = doc.components.schemas;
    const option = (name: string, where: (o: Json) => boolean) =>
      (schemas[name].oneOf ?? schemas[name].anyOf).find(where);
    // agentId with role agent only.
    expect(option('ApiKeyCreate', (o) => o.properties.role.const === 'agent').required).toContain('agentId');
    expect(option('ApiKeyCreate', (o) => o.properties.role.enum).properties.agentId).toEqual({ not: {} });
    // customType with type custom only.
    expect(option('ActivityCreate', (o) => o.properties.type.const === 'custom').required).toContain('customType');
    expect(option('ActivityCreate', (o) => o.properties.type.enum).properties.customType).toEqual({ not: {} });
    // weights with strategy weighted only; an agent at least with specific_agent.
    expect(option('RoutingRuleCreate', (o) => o.properties.strategy.const === 'specific_agent')).toMatchObject({
      properties: { agentIds: { minItems: 1 }, weights: { not: {} } },
      required: expect.arrayContaining(['agentIds']),
    });
    // At least one scoring weight above 0: one option per signal.
    const weights = schemas.ScoringConfigPut.properties.weights.anyOf as Json[];
    expect(weights.map((w) => Object.keys(w.properties).filter((k) => 'exclusiveMinimum' in w.properties[k]))).toEqual([
      ['contact'],
      ['source'],
      ['engagement'],
      ['recency'],
      ['interest'],
    ]);
    // An email or a phone; externalId with source; ["*"] alone.
    expect((schemas.LeadCapture.anyOf as Json[]).map((o) => o.required)).toEqual([
      expect.arrayContaining(['email']),
      expect.arrayContaining(['phone']),
    ]);
    expect(schemas.ListingCreate.dependentRequired).toEqual({ externalId: ['source'], source: ['externalId'] });
    expect(schemas.WebhookCreate.properties.events.anyOf).toEqual([
      expect.objectContaining({ type: 'array', minItems: 1 }),
      expect.objectContaining({ prefixItems: [{ type: 'string', const: '*' }] }),
    ]);
  });

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const out = await run(
      process.execPath,
      [
        join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'),
        'lint',
        file,
        '--config',
        join(ROOT, 'redocly.yaml'),
        '--format=json',
      ],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
    ).catch((err: { stdout: string; stderr: string }) => err);
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: Json[] };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);
});
