import type { Logger } from 'pino';
import type { SweepService } from '../sweep.service';

/**
 * Runs the sweep once at start, then every `everyMs`. `firstRequeueAfterMs` is 0 where the job
 * queue lived in memory: jobs queued by the last process died with it, so every unfinished image
 * is queued again.
 */
export class SweepWorker {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      sweep: SweepService;
      everyMs: number;
      requeueAfterMs: number;
      firstRequeueAfterMs: number;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    await this.run(this.deps.firstRequeueAfterMs);
    this.timer = setInterval(() => void this.run(this.deps.requeueAfterMs), this.deps.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async run(requeueAfterMs: number): Promise<void> {
    await this.deps.sweep.run({ requeueAfterMs }).catch((err: unknown) => {
      this.deps.log.warn({ err }, 'media sweep failed; it runs again later');
    });
  }
}
