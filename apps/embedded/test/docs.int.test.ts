import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import type { EmbeddedProduct } from '../src/compose';
import { startEmbedded } from './harness';

/** Debian's `chromium` package (installed by .ci/run); CHROMIUM_PATH points elsewhere. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('/docs in a real browser', () => {
  let dir: string;
  let product: EmbeddedProduct;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`No browser at ${CHROMIUM}: install Debian's chromium package or set CHROMIUM_PATH`);
    dir = mkdtempSync(join(tmpdir(), 'docs-'));
    product = await startEmbedded(dir);
    await product.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(product.app.server.address() as AddressInfo).port}`;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Containers run tests as root, where Chromium's sandbox cannot start.
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await product?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('renders an operation with its request body fields and no resolver error', async () => {
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on('pageerror', (err) => failures.push(String(err)));
    await page.goto(`${base}/docs`, { waitUntil: 'networkidle0', timeout: 30_000 });
    const operation = '#operations-listings-createListing';
    await page.waitForSelector(`${operation} .opblock-summary-control`, { timeout: 30_000 });
    await page.click(`${operation} .opblock-summary-control`);
    await page.waitForSelector(`${operation} .opblock-body .body-param__example, ${operation} .opblock-body pre`, {
      timeout: 30_000,
    });
    // The example request body comes from the contract, not a generic "string".
    const body = await page.$eval(
      `${operation} .opblock-body`,
      (el) => (el as unknown as { innerText: string }).innerText,
    );
    expect(body).toContain('"externalId": "MLS-123"');
    expect(body).toContain('"listPrice": 450000');
    // The schema tab lists the body's fields.
    const [schemaTab] = await page.$$(`${operation} .opblock-body button[data-name="model"]`);
    expect(schemaTab).toBeDefined();
    await schemaTab.click();
    await page.waitForSelector(`${operation} .opblock-body .model-box`, { timeout: 10_000 });
    const model = await page.$eval(
      `${operation} .opblock-body .model-box`,
      (el) => (el as unknown as { innerText: string }).innerText,
    );
    for (const field of ['pricing', 'propertyDetails', 'location', 'status']) expect(model).toContain(field);

    const text = await page.$eval('body', (el) => (el as unknown as { innerText: string }).innerText);
    expect(text).not.toMatch(/Resolver error/i);
    expect(text).not.toMatch(/Could not resolve reference/i);
    expect(failures).toEqual([]);
  }, 90_000);

  it("carries the product's name, not the UI's, answer examples from the contracts, and integers without safe-integer bounds", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/docs`, { waitUntil: 'networkidle0', timeout: 30_000 });
    const operation = '#operations-listings-getListing';
    await page.waitForSelector(`${operation} .opblock-summary-control`, { timeout: 30_000 });
    expect(await page.title()).toBe('Estate listings and leads API');
    const logo = await page.$eval('.topbar img', (el) => (el as unknown as { src: string }).src);
    expect(logo.startsWith('data:image/svg+xml;base64,')).toBe(true);
    expect(Buffer.from(logo.split(',')[1], 'base64').toString('utf8')).toContain('Estate listings and leads API');
    const icon = await page.$eval('link[rel="icon"]', (el) => (el as unknown as { href: string }).href);
    expect(icon).toMatch(/\/docs\/static\/theme\/favicon\.svg$/);
    const html = await page.content();
    expect(html).not.toMatch(/<title>Swagger UI/);

    await page.click(`${operation} .opblock-summary-control`);
    await page.waitForSelector(`${operation} .responses-wrapper .example, ${operation} .responses-wrapper pre`, {
      timeout: 30_000,
    });
    const answers = await page.$eval(
      `${operation} .responses-wrapper`,
      (el) => (el as unknown as { innerText: string }).innerText,
    );
    // The contract's own example of a listing, not placeholders.
    expect(answers).toContain('"id": "lst_4kq9Zr2mXw"');
    expect(answers).toContain('"version": 3');
    expect(answers).not.toContain('9007199254740991');

    // An answer without an example of its own: integers drawn from the schema carry no safe-integer bound.
    const agent = '#operations-agents-getAgent';
    await page.click(`${agent} .opblock-summary-control`);
    await page.waitForSelector(`${agent} .responses-wrapper .example, ${agent} .responses-wrapper pre`, {
      timeout: 30_000,
    });
    const agentAnswers = await page.$eval(
      `${agent} .responses-wrapper`,
      (el) => (el as unknown as { innerText: string }).innerText,
    );
    expect(agentAnswers).toContain('"version": 0');
    expect(agentAnswers).not.toContain('9007199254740991');
  }, 90_000);
});
