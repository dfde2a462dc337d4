import { randomBytes } from 'node:crypto';
import { NatsRateLimitCounters, RATE_LIMIT_BUCKET } from '@estate/gateway';
import { natsConnectOptions } from '@estate/bus/nats.bus';
import { describeWithEngines } from '@estate/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import pino from 'pino';

const log = pino({ level: 'silent' });

/**
 * The gateways' shared rate-limit counters on a real NATS server: replicas racing for one key never
 * let more requests through than the limit, and a replica whose NATS is gone keeps limiting alone.
 */
describeWithEngines('rate-limit counters shared through NATS', ['NATS_URL'], ({ NATS_URL }) => {
  const namespace = `edge_${randomBytes(4).toString('hex')}`;
  const connections: NatsConnection[] = [];
  const replica = async () => {
    const nc = await connect({ ...natsConnectOptions(NATS_URL), name: 'edge-shared-counters' });
    connections.push(nc);
    return NatsRateLimitCounters.open(nc, { namespace, windowMs: 60_000, log });
  };

  afterAll(async () => {
    const nc = await connect(natsConnectOptions(NATS_URL));
    await (
      await jetstreamManager(nc)
    ).streams
      .purge(`KV_${RATE_LIMIT_BUCKET}`, { filter: `$KV.${RATE_LIMIT_BUCKET}.${namespace}.>` })
      .catch(() => false);
    await nc.close();
    for (const c of connections) if (!c.isClosed()) await c.close();
  });

  it('three replicas flooding one key at once let exactly the limit through, and count every one', async () => {
    const replicas = await Promise.all([replica(), replica(), replica()]);
    expect(replicas[0].bucketName).toBe(RATE_LIMIT_BUCKET);
    const max = 40;
    const counts = await Promise.all(
      Array.from({ length: 90 }, (_, i) => replicas[i % 3].incr('key:key_flooded', 60_000, max)),
    );
    const allowed = counts.filter((c) => c.current <= max).map((c) => c.current);
    expect(allowed.sort((a, b) => a - b)).toEqual(Array.from({ length: max }, (_, i) => i + 1));
    for (const c of counts) expect(c.ttl).toBeGreaterThan(0);
    // A replica that saw none of it reads the shared count.
    const late = await (await replica()).incr('key:key_flooded', 60_000, max);
    expect(late.current).toBeGreaterThan(max);
    expect((await replicas[0].incr('key:key_other', 60_000, max)).current).toBe(1);
  });

  it('keeps limiting in the replica when NATS is gone, rather than letting everything through', async () => {
    const counters = await replica();
    expect((await counters.incr('ip:198.51.100.7', 60_000, 3)).current).toBe(1);
    await connections[connections.length - 1].close();
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await counters.incr('ip:198.51.100.7', 60_000, 3)).current);
    // Counted from scratch in this process: at most one limit's worth more gets through.
    expect(after).toEqual([1, 2, 3, 4]);
  });
});
