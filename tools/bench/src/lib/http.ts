/** Small fetch helpers for scenario setup (not for load: that is autocannon's job). */

export interface FetchedText {
  status: number;
  contentType: string | null;
  text: string;
}

export async function fetchText(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<FetchedText> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, contentType: res.headers.get('content-type'), text: await res.text() };
}

export async function expectStatus(
  url: string,
  expected: number,
  init: Parameters<typeof fetchText>[1] = {},
): Promise<FetchedText> {
  const got = await fetchText(url, init);
  if (got.status !== expected) {
    throw new Error(
      `${init.method ?? 'GET'} ${url} answered ${got.status}, expected ${expected}: ${got.text.slice(0, 500)}`,
    );
  }
  return got;
}
