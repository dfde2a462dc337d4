import type { OutgoingHttpHeaders } from 'node:http';
import type { Bus } from '@estate/bus';
import { idParams } from '@estate/contracts';
import { problem } from '@estate/contracts/errors';
import {
  isFinalJobState,
  jobProgress,
  jobProgressOf,
  jobProgressSubject,
  type JobProgress,
  type JobState,
} from '@estate/contracts/jobs';
import { callerOf } from '@estate/platform/auth';
import { notFound } from '@estate/platform/errors';
import { typed } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { JobsReader } from '../clients/listings.client';

export interface JobEventsOptions {
  bus: Pick<Bus, 'listen'>;
  jobs: JobsReader;
  /** Comment lines that keep proxies from closing a quiet stream, and a re-read of the job (in case a notification was lost). */
  heartbeatMs?: number;
}

const DEFAULT_HEARTBEAT_MS = 15_000;
/** Job ids are made by the listings service; anything else cannot be one (and must not reach a NATS subject). */
const JOB_ID = /^job_[A-Za-z0-9_-]{1,60}$/;

const STATE_RANK: Record<JobState, number> = { queued: 0, running: 1, succeeded: 2, partially_failed: 2, failed: 2 };

/** Where an event stands in its job's life: items processed, then the state; both only grow. */
interface Position {
  processed: number;
  rank: number;
}

const positionOf = (p: JobProgress): Position => ({ processed: p.progress.processed, rank: STATE_RANK[p.state] });
const isAfter = (a: Position, b: Position): boolean =>
  a.processed > b.processed || (a.processed === b.processed && a.rank > b.rank);
const eventIdOf = (p: Position): string => `${p.processed}-${p.rank}`;

function parseEventId(header: unknown): Position | undefined {
  const match = typeof header === 'string' ? /^(\d{1,9})-(\d)$/.exec(header.trim()) : null;
  return match ? { processed: Number(match[1]), rank: Number(match[2]) } : undefined;
}

function sseEvent(p: JobProgress): string {
  return `id: ${eventIdOf(positionOf(p))}\nevent: progress\ndata: ${JSON.stringify(p)}\n\n`;
}

/**
 * `GET /v1/jobs/:id/events`: a job's progress as server-sent events, relayed from the workers'
 * `jobs.<id>.progress` notifications. The first event is the job as it is now (so a client that
 * connects late is not left waiting), then each newer state, ending with the final one.
 */
export async function jobEventsRoutes(app: FastifyInstance, options: JobEventsOptions): Promise<void> {
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const open = new Set<() => void>();
  // A stream lasts as long as its job: end them at shutdown, or close() would wait for every job.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  typed(app).get(
    '/v1/jobs/:id/events',
    {
      schema: {
        tags: ['jobs'],
        operationId: 'followJobEvents',
        summary: 'Follow a job as server-sent events',
        description:
          '`text/event-stream` of `progress` events, each a JSON `JobProgress` (`jobId`, `state`, `progress`, `startedAt`, `finishedAt`). ' +
          'The first event is the current state; the stream ends after the final state (`succeeded`, `partially_failed` or `failed`). ' +
          'Comment lines every 15 s keep proxies from closing it. Event ids only grow: reconnecting with `Last-Event-ID` sends only newer events, ' +
          'and answers 204 (which tells EventSource to stop) when the job had already ended there.',
        params: idParams,
        'x-event-stream': {
          description: 'The job as it is now, then each newer state, until its final one',
          event: 'progress',
          dataSchema: 'JobProgress',
        },
        response: {
          204: z.null().describe('The job had ended by the given Last-Event-ID'),
          401: problem,
          403: problem,
          404: problem,
          502: problem,
        },
      },
    },
    async (request, reply) => {
      const who = callerOf(request);
      const jobId = request.params.id;
      if (!JOB_ID.test(jobId)) throw notFound('job_not_found', 'Job', jobId);

      // Listen before reading the job, so nothing published in between is missed; order is restored below.
      const inbox: { early: JobProgress[]; relay?: (p: JobProgress) => void } = { early: [] };
      const subscription = options.bus.listen(jobProgressSubject(jobId), (data) => {
        const parsed = jobProgress.safeParse(data);
        if (!parsed.success || parsed.data.jobId !== jobId) return;
        if (inbox.relay) inbox.relay(parsed.data);
        else inbox.early.push(parsed.data);
      });
      let current: JobProgress;
      try {
        current = jobProgressOf(await options.jobs.get(who, jobId, request.id));
      } catch (err) {
        await subscription.stop();
        throw err;
      }

      let last = parseEventId(request.headers['last-event-id']);
      if (last && isFinalJobState(current.state) && !isAfter(positionOf(current), last)) {
        await subscription.stop();
        return reply.code(204).send(null);
      }

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...(reply.getHeaders() as OutgoingHttpHeaders),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });

      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        open.delete(end);
        void subscription.stop();
        if (!res.writableEnded) res.end();
      };
      const emit = (p: JobProgress): void => {
        const at = positionOf(p);
        if (ended || (last && !isAfter(at, last))) return;
        last = at;
        res.write(sseEvent(p));
        if (isFinalJobState(p.state)) end();
      };
      const heartbeat = setInterval(() => {
        if (ended) return;
        res.write(': keep-alive\n\n');
        options.jobs.get(who, jobId, request.id).then(
          (j) => emit(jobProgressOf(j)),
          (err: unknown) => request.log.warn({ err, jobId }, 'could not re-read the job for its event stream'),
        );
      }, heartbeatMs);
      open.add(end);
      res.on('close', end);

      emit(current);
      for (const p of inbox.early) emit(p);
      inbox.relay = emit;
    },
  );
}
