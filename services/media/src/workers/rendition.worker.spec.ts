import type { Bus, BusMessage } from '@estate/bus';
import type { RenditionService } from '../rendition.service';
import { RenditionWorker, type RenditionJob } from './rendition.worker';

type Handler = (message: BusMessage<'media.image.process'>) => Promise<void>;

/** A bus that hands every published job to the worker's handler at once, as the in-process bus does. */
function fakeBus() {
  let handler: Handler | undefined;
  const bus = {
    subscribe: async (_subjects: unknown, _options: unknown, h: Handler) => {
      handler = h;
      return { stop: async () => undefined };
    },
  } as unknown as Bus;
  const deliver = (job: RenditionJob) =>
    handler!({ payload: job, deliveryCount: 1 } as unknown as BusMessage<'media.image.process'>);
  return { bus, deliver };
}

/** Renders that end when the test says so. */
function renders() {
  const finishers: Array<() => void> = [];
  const renditions = {
    process: () => new Promise<void>((resolve) => finishers.push(resolve)),
  } as unknown as RenditionService;
  return { renditions, finishNext: () => finishers.shift()!() };
}

/** A worker rendering one image at a time, its jobs delivered and its renders finished by the test. */
async function startedWorker() {
  const { bus, deliver } = fakeBus();
  const { renditions, finishNext } = renders();
  const worker = new RenditionWorker({
    bus,
    renditions,
    queue: { enqueue: async () => undefined },
    turns: { slots: 1, window: 100, share: 100, shareWaitMs: 0 },
  });
  await worker.start();
  return { worker, deliver, finishNext };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const job = (i: number): RenditionJob => ({
  eventId: `evt_${i}`,
  accountId: 'acc_a',
  listingId: 'lst_a',
  mediaId: `med_${i}`,
  version: 1,
  occurredAt: '2026-11-27T00:00:00.000Z',
});

describe('rendition worker backlog', () => {
  it('lets a producer wait until fewer than a limit of images wait for a render', async () => {
    const { worker, deliver, finishNext } = await startedWorker();
    const jobs = [1, 2, 3].map((i) => deliver(job(i)));
    await settle();

    let roomAt2 = false;
    const waiting = worker.whenBelow(2).then(() => (roomAt2 = true));
    await expect(worker.whenBelow(4)).resolves.toBeUndefined();
    finishNext();
    await settle();
    expect(roomAt2).toBe(false); // two still held
    finishNext();
    await settle();
    expect(roomAt2).toBe(true);
    await waiting;

    finishNext();
    await Promise.all(jobs);
  });

  it('never holds a producer back once stopped', async () => {
    const { worker, deliver, finishNext } = await startedWorker();
    const held = deliver(job(1));
    await settle();
    const waiting = worker.whenBelow(1);
    await worker.stop();
    await expect(waiting).resolves.toBeUndefined();
    finishNext();
    await held;
  });
});
