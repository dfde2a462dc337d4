import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { eventually } from '@estate/testing';
import puppeteer from 'puppeteer-core';
import { ADMIN, listingCount, startProduct, type EdgeProduct } from './edge-product';

/** Debian's `chromium` package (installed by .ci/run); CHROMIUM_PATH points elsewhere. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Writes a raw request and reads the whole answer (the server closes the connection after refusing it). */
function rawRequest(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function parse(answer: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head, ...rest] = answer.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n\r\n')) };
}

describe('the edge against oversized requests and a hostile page around /docs', () => {
  let edge: EdgeProduct;
  let base: string;
  beforeAll(async () => {
    edge = await startProduct();
    base = await edge.listen();
  });
  afterAll(async () => {
    await edge?.close();
  });

  it('answers a URL too long 414 and headers too large 431, both problem+json with request id and nosniff', async () => {
    const cases = [
      {
        status: 414,
        code: 'uri_too_long',
        request: `POST /v1/listings?x=${'a'.repeat(70_000)} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ADMIN}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
      },
      {
        status: 414,
        code: 'uri_too_long',
        request: `GET /v1/listings?cursor=${'c'.repeat(200_000)} HTTP/1.1\r\nhost: x\r\n\r\n`,
      },
      {
        status: 431,
        code: 'headers_too_large',
        request: `POST /v1/listings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ADMIN}\r\nx-padding: ${'a'.repeat(70_000)}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
      },
      {
        status: 431,
        code: 'headers_too_large',
        request: `GET /v1/listings HTTP/1.1\r\nhost: x\r\n${Array.from({ length: 2000 }, (_, i) => `x-h${i}: ${'b'.repeat(40)}`).join('\r\n')}\r\n\r\n`,
      },
    ];
    for (const c of cases) {
      const res = parse(await rawRequest(base, c.request));
      expect(res.status).toBe(c.status);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-request-id']).toMatch(/\S/);
      expect(res.body).toMatchObject({ status: c.status, code: c.code, requestId: res.headers['x-request-id'] });
    }
    expect(await listingCount(edge)).toBe(0);
  });

  it('serves /docs with a Content-Security-Policy that forbids foreign and inline scripts and framing', async () => {
    for (const url of ['/docs', '/docs/', '/docs/static/index.html', '/docs/static/swagger-initializer.js']) {
      const res = await edge.call(null, { method: 'GET', url });
      expect(res.statusCode).toBeLessThan(400);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('renders /docs under that policy in a real browser without a violation, and an injected inline script does not run', async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`No browser at ${CHROMIUM}: install Debian's chromium package or set CHROMIUM_PATH`);
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    try {
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
      });
      await page.goto(`${base}/docs`, { waitUntil: 'networkidle0', timeout: 30_000 });
      await page.waitForSelector('#operations-listings-createListing', { timeout: 30_000 });
      expect(violations).toEqual([]);
      // What an injected tag would try: the policy stops it.
      await page.evaluate(() => {
        const w = globalThis as unknown as { document: { body: { innerHTML: string } } };
        w.document.body.innerHTML += '<img src="x" onerror="window.injected = true">';
      });
      // The browser refuses the inline handler when the image fails to load, and says so on the console.
      await eventually(() => expect(violations.length).toBeGreaterThan(0), { timeoutMs: 30_000 });
      expect(await page.evaluate(() => (globalThis as unknown as { injected?: boolean }).injected === true)).toBe(
        false,
      );
    } finally {
      await browser.close();
    }
  }, 90_000);
});
