import { startEmbedded } from './harness';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EmbeddedProduct } from '../src/compose';
import { NEDB_BACKUP_DIR } from '../src/nedb-import';

// A data folder written by the NeDB version: three listings made (one deleted, one updated), an
// agent, a lead, an integration key and a photo, with the keys below.
const FIXTURE = join(__dirname, 'fixtures', 'nedb-data');
const ADMIN = 'test-admin-key-0123456789abcdef';
const PLATFORM = 'test-platform-key-0123456789abcdef';
const LISTING = 'lst_3kqswp3vXmLe_8l9';

describe('upgrading a data folder of the NeDB version', () => {
  let dir: string;
  let product: EmbeddedProduct | undefined;
  const start = async () => {
    product = await startEmbedded(dir, { adminApiKey: ADMIN, platformApiKey: PLATFORM });
    return product;
  };
  const get = (url: string) =>
    product!.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN}` } });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'nedb-import-'));
    cpSync(FIXTURE, dir, { recursive: true });
  });
  afterEach(async () => {
    await product?.close();
    product = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports every service once, keeps the NeDB files aside, and serves the same data', async () => {
    await start();
    const listing = await get(`/v1/listings/${LISTING}`);
    expect(listing.statusCode).toBe(200);
    expect(listing.json()).toMatchObject({
      id: LISTING,
      version: 4,
      pricing: { listPrice: 440000 },
      media: { photoCount: 1 },
    });
    const search = (await get('/v1/listings?city=Austin&q=pool')).json();
    expect(search.items.map((l: { id: string }) => l.id)).toEqual([LISTING]);
    expect((await get('/v1/listings')).json().total).toBe(2);

    const leads = (await get('/v1/leads')).json();
    expect(leads.items).toEqual([
      expect.objectContaining({ name: 'Lee Buyer', email: 'lee@example.com', phone: '+15125550100' }),
    ]);
    expect((await get('/v1/agents')).json().items).toEqual([expect.objectContaining({ name: 'Ann Agent' })]);
    expect((await get('/v1/api-keys')).json().items.map((k: { name: string }) => k.name)).toContain('feed');

    const media = (await get(`/v1/listings/${LISTING}/media`)).json();
    expect(media.items).toEqual([expect.objectContaining({ status: 'ready', caption: 'Front', isPrimary: true })]);
    const thumb = await product!.app.inject({ method: 'GET', url: media.items[0].urls.thumb });
    expect(thumb.statusCode).toBe(200);

    for (const service of ['gateway', 'listings', 'media', 'leads']) {
      expect(readdirSync(join(dir, service)).filter((f) => f.endsWith('.db'))).toEqual([]);
      expect(existsSync(join(dir, service, NEDB_BACKUP_DIR))).toBe(true);
    }

    // A second start imports nothing again.
    await product!.close();
    await start();
    expect((await get('/v1/listings')).json().total).toBe(2);
    expect((await get('/v1/leads')).json().total).toBe(1);
  });

  it('finishes an import interrupted after some collections, without duplicates', async () => {
    // The listings were imported by a run that stopped before moving their file aside.
    await start();
    await product!.close();
    product = undefined;
    cpSync(join(dir, 'listings', NEDB_BACKUP_DIR, 'listings.db'), join(dir, 'listings', 'listings.db'));
    await start();
    expect((await get('/v1/listings')).json().total).toBe(2);
    expect(readdirSync(join(dir, 'listings')).filter((f) => f.endsWith('.db'))).toEqual([]);
  });
});
