import pino from 'pino';
import { waitFor } from './wait-for';

function recordingLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

describe('waitFor', () => {
  it('retries with growing pauses until the engine answers, one line per failed attempt without a stack', async () => {
    const { log, lines } = recordingLog();
    let calls = 0;
    const value = await waitFor(
      'store',
      async () => {
        if (++calls < 4) throw new Error('connect ECONNREFUSED');
        return 'connected';
      },
      log,
      { firstDelayMs: 1, maxDelayMs: 4 },
    );
    expect(value).toBe('connected');
    const waits = lines.filter((l) => l.msg === 'waiting for the store');
    expect(waits.map((l) => l.retryInMs)).toEqual([1, 2, 4]);
    expect(waits.every((l) => l.reason === 'connect ECONNREFUSED' && !('err' in l))).toBe(true);
    expect(lines[lines.length - 1]).toMatchObject({ msg: 'store is available', attempts: 4 });
  });

  it('throws a permanent error at once, and the last error after its timeout', async () => {
    const { log } = recordingLog();
    const permanent = new Error('bad configuration');
    await expect(
      waitFor('index', () => Promise.reject(permanent), log, { isPermanent: (e) => e === permanent }),
    ).rejects.toBe(permanent);
    await expect(
      waitFor('bus', () => Promise.reject(new Error('down')), log, { firstDelayMs: 1, timeoutMs: 20 }),
    ).rejects.toThrow('down');
  });
});
