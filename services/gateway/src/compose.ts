import type { DocumentCollection, DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import { AccessService } from './access.service';
import { purgeExpiredIdempotency } from './edge/idempotency';
import { AccessRepository } from './repositories/access.repository';
import { openIdempotency, type IdempotencyDoc } from './repositories/idempotency.repository';

export interface GatewayRuntime {
  access: AccessService;
  idempotency: DocumentCollection<IdempotencyDoc>;
  clock: () => Date;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const PURGE_EVERY_MS = 15 * 60 * 1000;

export async function composeGateway(deps: { store: DocumentStore; log: Logger; clock?: () => Date }): Promise<GatewayRuntime> {
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log.child({ service: 'gateway' });
  const access = new AccessService({ repo: await AccessRepository.open(deps.store), clock });
  const idempotency = await openIdempotency(deps.store);
  let timer: NodeJS.Timeout | undefined;
  return {
    access,
    idempotency,
    clock,
    async start() {
      timer = setInterval(() => {
        purgeExpiredIdempotency(idempotency, clock()).catch((err) => log.warn({ err }, 'idempotency purge failed'));
      }, PURGE_EVERY_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
    },
  };
}
