// Measures a MongoDB-wire engine the way the services use it (MongoDB driver, 5,000 documents):
// lookup latency and throughput, and whether concurrent updates are exact.
//
//   node tools/ferretdb/measure.mjs mongodb://127.0.0.1:27017
//
// Writes into a throw-away database (`measure_<random>`) and drops it at the end.
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';

const url = process.argv[2] ?? 'mongodb://127.0.0.1:27017';
const DOCS = 5000;
const client = await MongoClient.connect(url, { maxPoolSize: 40 });
const db = client.db(`measure_${randomUUID().slice(0, 8)}`);
const col = db.collection('listings');
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const out = {};

try {
  const docs = Array.from({ length: DOCS }, (_, i) => ({
    _id: `lst_${String(i).padStart(6, '0')}`,
    accountId: `acc_${i % 10}`,
    version: 1,
    title: `Listing ${i}`,
    price: 100_000 + i,
    tags: ['a', 'b'],
  }));
  let t0 = process.hrtime.bigint();
  for (let i = 0; i < DOCS; i += 500) await col.insertMany(docs.slice(i, i + 500));
  out.insert5000Ms = Math.round(ms(t0));

  const ids = docs.map((d) => d._id);
  const pick = () => docs[Math.floor(Math.random() * DOCS)];
  const lat = [];
  const latId = [];
  for (let i = 0; i < 200; i++) {
    const d = pick();
    t0 = process.hrtime.bigint();
    await col.findOne({ _id: d._id, accountId: d.accountId, _deleted: { $ne: true } });
    lat.push(ms(t0));
    t0 = process.hrtime.bigint();
    await col.findOne({ _id: d._id });
    latId.push(ms(t0));
  }
  out.findOneFilteredMs = { p50: +pct(lat, 50).toFixed(2), p99: +pct(lat, 99).toFixed(2) };
  out.findOneByIdMs = { p50: +pct(latId, 50).toFixed(2), p99: +pct(latId, 99).toFixed(2) };

  // Throughput: 20 lookups in flight for 3 s.
  let done = 0;
  const until = Date.now() + 3000;
  t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (Date.now() < until) {
        await col.findOne({ _id: ids[Math.floor(Math.random() * DOCS)] });
        done++;
      }
    }),
  );
  out.lookupsPerSecondAt20 = Math.round(done / (ms(t0) / 1000));

  // 40 concurrent version-guarded findOneAndUpdate from version 1: exactly one may win.
  await col.insertOne({ _id: 'cas', version: 1, counter: 0 });
  const cas = await Promise.all(
    Array.from({ length: 40 }, () =>
      col.findOneAndUpdate({ _id: 'cas', version: 1 }, { $set: { version: 2 }, $inc: { counter: 1 } }, { returnDocument: 'after' }),
    ),
  );
  out.versionGuarded40 = {
    winners: cas.filter((r) => r !== null).length,
    counter: (await col.findOne({ _id: 'cas' })).counter,
    expected: 1,
  };

  // 100 concurrent $inc: the counter must reach 100.
  await col.insertOne({ _id: 'inc', n: 0 });
  await Promise.all(Array.from({ length: 100 }, () => col.updateOne({ _id: 'inc' }, { $inc: { n: 1 } })));
  out.inc100 = { n: (await col.findOne({ _id: 'inc' })).n, expected: 100 };

  const explain = await col.find({ _id: ids[7], accountId: 'acc_7', _deleted: { $ne: true } }).explain();
  out.explainFilteredById = {
    pushdown: explain.filterPushdown ?? explain.pushdown ?? null,
    stage: explain.queryPlanner?.winningPlan?.stage ?? null,
  };
  console.log(JSON.stringify(out, null, 2));
} finally {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
}
