import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeEmbedded } from '@estate/embedded';
import pino from 'pino';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..', '..');

/** Code an integrator would write against types generated from the served document. */
const USAGE = `
import createClient from 'openapi-fetch';
import type { components, operations, paths } from './schema';

type ListingCreate = operations['createListing']['requestBody']['content']['application/json'];
// Fields the server fills in (status, currency, country, units) are optional to send...
const minimal: ListingCreate = {
  pricing: { listPrice: 1 },
  propertyDetails: { propertyType: 'land' },
  location: { address: { street: '1 Main St', city: 'Austin', stateOrProvince: 'TX', postalCode: '78701' } },
};
// ...and always there to read.
const status: components['schemas']['Listing']['status'] = 'active';
const currency: string = ({} as components['schemas']['Listing']).pricing.currency;
// @ts-expect-error pricing is required
const noPrice: ListingCreate = { propertyDetails: { propertyType: 'land' }, location: minimal.location };
// @ts-expect-error unknown status
const badStatus: ListingCreate = { ...minimal, status: 'sold' };
const agent: operations['createAgent']['requestBody']['content']['application/json'] = { name: 'A', email: 'a@b.co' };
const names: (keyof operations)[] = [
  'createListing', 'searchListings', 'getListing', 'updateListing', 'deleteListing', 'bulkUpsertListings', 'getJob',
  'followJobEvents', 'addListingMedia', 'listListingMedia', 'captureLead', 'searchLeads', 'routeLead',
  'recordLeadActivity', 'createAgent', 'createRoutingRule', 'replaceRoutingSettings', 'replaceScoringConfig',
  'createApiKey', 'createAccount',
];
type Upload = operations['addListingMedia']['requestBody']['content']['multipart/form-data'];
const upload: Upload = { file: ['binary'] };
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000' });
async function use() {
  const { data } = await client.GET('/v1/listings', { params: { query: { limit: 5, status: ['active'] } } });
  return data?.items[0]?.pricing.listPrice;
}
export { minimal, status, currency, noPrice, badStatus, agent, names, upload, use };
`;

describe('a client generated from /openapi.json by openapi-typescript', () => {
  let dir: string;
  let schema: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'generated-client-'));
    const product = await composeEmbedded(
      { port: 0, host: '127.0.0.1', dataDir: join(dir, 'data'), rateLimitPerMinute: 1000, logLevel: 'silent' },
      pino({ level: 'silent' }),
    );
    try {
      writeFileSync(join(dir, 'openapi.json'), (await product.app.inject({ url: '/openapi.json' })).body);
    } finally {
      await product.close();
    }
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
        join(dir, 'openapi.json'),
        '-o',
        join(dir, 'schema.ts'),
      ],
      { cwd: ROOT, stdio: 'pipe' },
    );
    schema = readFileSync(join(dir, 'schema.ts'), 'utf8');
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('compiles, with operation names and the optional fields of request bodies right', () => {
    writeFileSync(join(dir, 'usage.ts'), USAGE);
    const program = ts.createProgram([join(dir, 'usage.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      skipLibCheck: true,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      baseUrl: ROOT,
      typeRoots: [join(ROOT, 'node_modules/@types')],
      types: [],
      paths: { 'openapi-fetch': [join(ROOT, 'node_modules/openapi-fetch')] },
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(problems).toEqual([]);
  }, 60_000);

  it('is what the committed client was generated from (npm run client:generate)', () => {
    expect(readFileSync(join(ROOT, 'clients/typescript/src/schema.ts'), 'utf8')).toBe(schema);
  });
});
