// A service of your own that follows listing changes, as docs/events.md describes.
// Run: NATS_URL=nats://127.0.0.1:4222 node docs/examples/subscriber.mjs   (Ctrl-C to stop)
// Optional: NATS_NAMESPACE (when the deployment sets one), NATS_USER / NATS_PASSWORD, DURABLE (consumer name),
// STOP_AFTER_SECONDS (stop by itself).
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

const ns = process.env.NATS_NAMESPACE;
const subject = (s) => (ns ? `${ns}.${s}` : s);
const stream = (s) => (ns ? `${ns}_${s}` : s);
const durable = process.env.DURABLE ?? 'example-listing-follower';

const nc = await connect({
  servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  user: process.env.NATS_USER,
  pass: process.env.NATS_PASSWORD,
});
const jsm = await jetstreamManager(nc);
// A durable consumer of our own on the LISTINGS stream: it remembers what we acknowledged across restarts,
// and the server removes it after an hour without us.
await jsm.consumers.add(stream('LISTINGS'), {
  durable_name: durable,
  filter_subject: subject('listings.listing.>'),
  ack_policy: AckPolicy.Explicit,
  deliver_policy: DeliverPolicy.New,
  inactive_threshold: 3600 * 1e9,
});
const consumer = await jetstream(nc).consumers.get(stream('LISTINGS'), durable);
const messages = await consumer.consume();
console.log(`following ${subject('listings.listing.>')} as ${durable}`);

const stopAfter = Number(process.env.STOP_AFTER_SECONDS ?? 0);
if (stopAfter > 0) setTimeout(() => void messages.close(), stopAfter * 1000);
process.once('SIGINT', () => void messages.close());

// Keep the newest version seen per listing: an event seen twice, or an older one after a newer one, is skipped.
const seen = new Map();
for await (const m of messages) {
  const event = m.json();
  const id = event.listingId;
  if ((seen.get(id) ?? 0) >= event.version) {
    m.ack();
    continue;
  }
  seen.set(id, event.version);
  const what = m.subject.split('.').pop();
  const price = event.listing?.pricing.listPrice;
  console.log(
    `${event.occurredAt} ${what} ${id} v${event.version}${price ? ` ${event.listing.status} $${price}` : ''}` +
      ` (request ${m.headers?.get('x-request-id') ?? '-'})`,
  );
  m.ack();
}
await nc.drain();
