// The AsyncAPI 3.0 document of the NATS subjects, generated from the same zod contracts the services validate
// every message with (`subjects` and `streams` in @estate/contracts/events) and the subscriber notes of the
// event catalog. Served at /asyncapi.json.
import { subjectDocs, jobProgressDoc, type SubjectDoc } from '@estate/contracts/event-catalog';
import { streams, subjects, type StreamName, type Subject } from '@estate/contracts/events';
import { jobProgress } from '@estate/contracts/jobs';
import { z } from 'zod';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const pascal = (s: string) =>
  s.replace(/\{[^}]*\}/g, '').replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_m, _p, c: string) => c.toUpperCase());

/**
 * A payload as JSON Schema, with the named types it uses (`Listing`, `Activity`, ...) moved to the
 * document's components so that each is described once.
 */
function payloadSchema(schema: z.ZodType, components: Json): Json {
  const json = z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' }) as Json;
  delete json.$schema;
  const defs: Json = { ...json.definitions, ...json.$defs };
  delete json.definitions;
  delete json.$defs;
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (v && typeof v === 'object') {
      const out: Json = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string')
          out[k] = x.replace(/^#\/(\$defs|definitions)\//, '#/components/schemas/');
        else if (!(k === 'id' && typeof x === 'string')) out[k] = rewrite(x);
      }
      return out;
    }
    return v;
  };
  for (const [name, def] of Object.entries(defs)) components[name] ??= rewrite(def);
  return rewrite(json) as Json;
}

function consumerNotes(doc: SubjectDoc | undefined, delivery: string): string {
  const who = doc?.consumedBy.map((c) => `- **${c.consumer}**: ${c.what}`).join('\n') ?? '';
  return [doc?.description, delivery, who ? `Consumed by:\n${who}` : ''].filter(Boolean).join('\n\n');
}

const DELIVERY: Record<'stream' | 'work-queue' | 'core', string> = {
  stream:
    'Durable: kept in a JetStream stream. Each consuming service reads it through its own durable consumer (acknowledge after handling; unacknowledged messages are redelivered). Consumers are idempotent: a message seen twice, or an older `version` after a newer one, changes nothing.',
  'work-queue':
    'Work queue: a JetStream stream with work-queue retention; the workers of the consuming service share one durable consumer, so each message is delivered to one of them and redelivered if it is not acknowledged in time.',
  core: 'Core NATS: not stored and not redelivered.',
};

export function asyncApiDocument(options: { title: string; version?: string; natsUrl?: string }): Json {
  const schemas: Json = {};
  const channels: Json = {};
  const operations: Json = {};
  const messages: Json = {};
  const headers = {
    type: 'object',
    properties: {
      'Nats-Msg-Id': {
        type: 'string',
        description: 'JetStream de-duplication id: `<entity id>:<version>` (or the event id for commands)',
      },
      'x-request-id': { type: 'string', description: 'The HTTP request that caused the event, when there was one' },
    },
  };

  const add = (
    address: string,
    payload: Json,
    doc: SubjectDoc | (typeof jobProgressDoc & { publishedBy: string }) | undefined,
    delivery: 'stream' | 'work-queue' | 'core',
    stream?: StreamName,
  ) => {
    const name = pascal(address);
    messages[name] = {
      name,
      title: doc?.summary ?? address,
      summary: doc?.summary ?? address,
      contentType: 'application/json',
      ...(delivery === 'core' ? {} : { headers }),
      payload,
      ...(doc ? { examples: [{ name: 'example', payload: doc.example }] } : {}),
    };
    const params = [...address.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    channels[name] = {
      address,
      title: address,
      summary: doc?.summary ?? address,
      description: [
        stream ? `JetStream stream \`${stream}\`.` : '',
        `Published by **${doc?.publishedBy ?? address.split('.')[0]}**.`,
      ]
        .filter(Boolean)
        .join(' '),
      messages: { [name]: { $ref: `#/components/messages/${name}` } },
      ...(params.length
        ? { parameters: Object.fromEntries(params.map((p) => [p, { description: `The ${p} of the subject` }])) }
        : {}),
    };
    const channel = { $ref: `#/channels/${name}` };
    const message = [{ $ref: `#/channels/${name}/messages/${name}` }];
    operations[`publish${name}`] = {
      action: 'send',
      channel,
      summary: `${doc?.publishedBy ?? 'Its service'} publishes: ${doc?.summary ?? address}`,
      messages: message,
    };
    operations[`consume${name}`] = {
      action: 'receive',
      channel,
      summary: `Subscribe: ${doc?.summary ?? address}`,
      description: consumerNotes(doc as SubjectDoc | undefined, DELIVERY[delivery]),
      messages: message,
    };
  };

  for (const [subject, entry] of Object.entries(subjects) as [Subject, (typeof subjects)[Subject]][]) {
    const stream = entry.stream as StreamName;
    add(
      subject,
      payloadSchema(entry.schema, schemas),
      subjectDocs[subject],
      streams[stream].workQueue ? 'work-queue' : 'stream',
      stream,
    );
  }
  add(jobProgressDoc.address, payloadSchema(jobProgress, schemas), jobProgressDoc, 'core');

  const url = new URL(options.natsUrl ?? 'nats://127.0.0.1:4222');
  return {
    asyncapi: '3.0.0',
    info: {
      title: `${options.title}: events`,
      version: options.version ?? '1.0.0',
      description: [
        'The NATS subjects the services publish and consume (distributed profile; the embedded profile carries the same messages on an in-process bus).',
        'Names: `<service>.<entity>.<past-tense verb>` for events, present tense for commands. Every durable payload carries `eventId`, `accountId`, the entity id, its `version` and `occurredAt`, and is validated on publish and on receipt.',
        'Subjects are prefixed with `NATS_NAMESPACE.` when a deployment sets one.',
      ].join('\n\n'),
      license: { name: 'Proprietary' },
    },
    defaultContentType: 'application/json',
    servers: {
      nats: {
        host: url.host,
        protocol: 'nats',
        description: 'NATS with JetStream; each service connects as its own user, allowed only its subjects.',
      },
    },
    channels,
    operations,
    components: { schemas, messages },
  };
}
