// A foreign client of Chronos: Node.js + kafkajs on a real Apache Kafka
// broker, written only from docs/topics.md (and docs/schedules.md for the
// schedule fields), with no Chronos code and no compression plugin: kafkajs
// reads gzip and uncompressed batches only, so this test fails if Chronos
// writes its output topics with a codec docs/topics.md does not promise.
//
// It needs a running Chronos instance (`chronos run`) on the broker:
//
//   CHRONOS_TEST_BROKERS   bootstrap brokers, host:port[,...]
//   CHRONOS_TOPIC_PREFIX   the instance's --topic-prefix (may be empty)
//
// foreign_test.go (go test -tags foreign ./testenv/foreign/) starts the
// instance and runs `node --test` on this file with NODE_PATH from
// nodeenv.sh; see docs/real-kafka.md.
//
// Covered: the partitioning formula (the documented test vectors) as a
// kafkajs partitioner; puts of cron, every and at jobs with exactly
// predictable fire ids; a delete (its job never fires); manual fires; a
// bucket trigger with a payload override; the schema of every dispatch event
// and that it is on the partition of its job id; rejects (malformed JSON, an
// unknown field, a wrong partition, a pause of an unknown job) with every
// documented field checked against the record that caused it.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { Kafka, logLevel } = require("kafkajs");

const BROKERS = (process.env.CHRONOS_TEST_BROKERS || "").split(",").filter(Boolean);
const PREFIX = process.env.CHRONOS_TOPIC_PREFIX || "";
const JOBS = PREFIX + "chronos-jobs";
const BUCKET_TRIGGERS = PREFIX + "chronos-bucket-triggers";
const DISPATCH = PREFIX + "chronos-dispatch";
const REJECTS = PREFIX + "chronos-rejects";
const WAIT_MS = 90_000; // longest wait for every expected event

// RFC 3339 UTC as Chronos writes it: fractional seconds only when non-zero,
// without trailing zeros ("Dispatch events").
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z$/;

// --- the contract: partitioning ("Keys and partitioning") ---

function fnv1a32(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h = Math.imul(h ^ b, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

// chronosPartition is |int32(h)| mod n, computed without overflow.
function chronosPartition(key, n) {
  const h = fnv1a32(Buffer.from(key, "utf8"));
  const s = h >= 2 ** 31 ? h - 2 ** 32 : h;
  return Math.abs(s) % n;
}

// A kafkajs partitioner that places keyed records as Chronos expects; an
// explicit message.partition wins (used for the wrong-partition reject).
const ChronosPartitioner = () => ({ partitionMetadata, message }) => {
  if (message.partition !== undefined) return message.partition;
  return chronosPartition(String(message.key), partitionMetadata.length);
};

// formatTime formats an instant (ms) as Chronos formats scheduled_at.
function formatTime(ms) {
  const iso = new Date(ms).toISOString(); // 2026-05-04T07:00:00.120Z
  const [base, frac] = iso.slice(0, -1).split(".");
  const f = (frac || "").replace(/0+$/, "");
  return base + (f ? "." + f : "") + "Z";
}

function parseTime(s) {
  assert.match(s, RFC3339_UTC, `not RFC 3339 UTC as documented: ${s}`);
  return Date.parse(s);
}

test("partition formula matches the documented test vectors", () => {
  const vectors = [
    ["invoice-42", 0x59857ca1, 9],
    ["user:1001", 0x4f7c1bf6, 2],
    ["a", 0xe40c292c, 0],
    ["payments/retry-7", 0xa9ea4987, 5],
    ["1468509572224", 0x80000000, 8],
  ];
  for (const [key, hash, p] of vectors) {
    assert.equal(fnv1a32(Buffer.from(key)), hash, key);
    assert.equal(chronosPartition(key, 12), p, key);
  }
});

// --- the end-to-end run ---

const run = "node-" + crypto.randomBytes(4).toString("hex");
const kafka = new Kafka({ clientId: run, brokers: BROKERS, logLevel: logLevel.WARN });

// collect consumes a topic from the beginning with its own group and keeps
// every record (value parsed as JSON), with its partition.
async function collect(topic) {
  const consumer = kafka.consumer({ groupId: `${run}-${topic}`, allowAutoTopicCreation: false, retry: { retries: 2 } });
  const records = [];
  const state = { consumer, records, crash: null };
  // A consumer that cannot decode a batch (e.g. a codec kafkajs lacks)
  // crashes: fail at once with its error instead of waiting for events.
  consumer.on(consumer.events.CRASH, (e) => {
    state.crash = e.payload.error;
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      records.push({
        partition,
        key: message.key === null ? null : message.key.toString("utf8"),
        value: JSON.parse(message.value.toString("utf8")),
      });
    },
  });
  return state;
}

let consumers = [];

// waitFor polls cond until it is true or the deadline passes.
async function waitFor(what, cond, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    const crashed = consumers.find((c) => c.crash);
    if (crashed) throw new Error(`consumer crashed while waiting for ${what}: ${crashed.crash}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function checkDispatchEvent(rec, partitions) {
  const e = rec.value;
  assert.equal(e.v, 1);
  for (const f of ["fire_id", "job_id", "trigger", "scheduled_at", "fired_at"]) {
    assert.equal(typeof e[f], "string", `${f} in ${JSON.stringify(e)}`);
  }
  assert.equal(typeof e.missed, "number", "missed is always present");
  assert.equal(e.job_id, rec.key, "job_id = record key");
  assert.ok(["schedule", "manual", "bucket"].includes(e.trigger), e.trigger);
  parseTime(e.scheduled_at);
  parseTime(e.fired_at);
  assert.equal(rec.partition, chronosPartition(e.job_id, partitions), "dispatch partition = the job id's");
  // One fire, one fire_id: split at the last "@".
  const at = e.fire_id.lastIndexOf("@");
  assert.equal(e.fire_id.slice(0, at), e.job_id);
  const rest = e.fire_id.slice(at + 1);
  if (e.trigger === "schedule") {
    assert.equal(rest, e.scheduled_at);
  } else {
    assert.equal(rest, e.trigger_id);
    assert.equal(e.missed, 0);
  }
}

// idOnPartition returns the first "<base>-<i>" whose partition is p.
function idOnPartition(base, p, n) {
  for (let i = 0; ; i++) {
    if (chronosPartition(`${base}-${i}`, n) === p) return `${base}-${i}`;
  }
}

test("puts, a delete, manual and bucket fires, rejects", { timeout: 4 * WAIT_MS }, async () => {
  assert.ok(BROKERS.length > 0, "CHRONOS_TEST_BROKERS is not set");
  const admin = kafka.admin();
  await admin.connect();
  const meta = await admin.fetchTopicMetadata({ topics: [JOBS, DISPATCH, REJECTS, BUCKET_TRIGGERS] });
  await admin.disconnect();
  const P = meta.topics.find((t) => t.name === JOBS).partitions.length;
  for (const t of meta.topics) assert.equal(t.partitions.length, P, `${t.name} has P partitions`);

  const dispatch = await collect(DISPATCH);
  const rejects = await collect(REJECTS);
  consumers = [dispatch, rejects];
  const producer = kafka.producer({ createPartitioner: ChronosPartitioner, allowAutoTopicCreation: false });
  await producer.connect();
  const send = async (topic, key, value, extra = {}) => {
    const [md] = await producer.send({
      topic,
      acks: -1,
      messages: [{ key, value: typeof value === "string" ? value : JSON.stringify(value), ...extra }],
    });
    return { partition: md.partition, offset: Number(md.baseOffset) };
  };

  try {
    // Scheduled jobs, fires from T0 on (whole seconds, far enough ahead that
    // every put is applied first; a later apply still owes them).
    const T0 = Math.ceil(Date.now() / 1000) * 1000 + 8000;
    const iso = (ms) => formatTime(ms);
    const expected = new Map(); // fire_id -> {job_id, trigger, scheduled_at}
    const expect = (jobId, ms) => expected.set(`${jobId}@${iso(ms)}`, { jobId, trigger: "schedule", at: iso(ms) });

    const cronId = `${run}/cron`;
    await send(JOBS, cronId, { v: 1, op: "put", job: { cron: "* * * * * *", start: iso(T0), end: iso(T0 + 3000), payload: { kind: "cron" } } });
    for (let s = 0; s <= 3; s++) expect(cronId, T0 + s * 1000);

    const everyId = `${run}/every`;
    await send(JOBS, everyId, { v: 1, op: "put", id: everyId, job: { every: "2s", start: iso(T0), end: iso(T0 + 4000) } });
    for (let s = 0; s <= 4; s += 2) expect(everyId, T0 + s * 1000);

    const atId = `${run}/at`;
    await send(JOBS, atId, { v: 1, op: "put", job: { at: iso(T0 + 2000), payload: { msg: "once" }, misfire_policy: "skip" } });
    expect(atId, T0 + 2000);

    // A deleted job and a later job on the same partition: once the later
    // one fired, the deleted one would have fired before it (per-partition
    // order), so its absence is a real check.
    const deletedId = idOnPartition(`${run}/deleted`, 0, P);
    const laterId = idOnPartition(`${run}/later`, 0, P);
    await send(JOBS, deletedId, { v: 1, op: "put", job: { at: iso(T0 + 2000) } });
    await send(JOBS, deletedId, { v: 1, op: "delete" });
    await send(JOBS, laterId, { v: 1, op: "put", job: { at: iso(T0 + 5000) } });
    expect(laterId, T0 + 5000);

    // Bucket jobs that would not fire on their own this year; a manual fire
    // of each proves its put was applied before the bucket trigger is sent.
    const bucket = `${run}-bucket`;
    const bucketIds = [0, 1, 2].map((i) => `${run}/b${i}`);
    for (const [i, id] of bucketIds.entries()) {
      await send(JOBS, id, { v: 1, op: "put", job: { cron: "0 0 1 1 *", bucket, payload: { n: i } } });
      const { partition } = await send(JOBS, id, { v: 1, op: "fire", trigger_id: "probe-1", payload: { probe: i } });
      assert.equal(partition, chronosPartition(id, P));
    }
    const byFireId = (fid) => dispatch.records.filter((r) => r.value.fire_id === fid);
    await waitFor("the manual fires", () => bucketIds.every((id) => byFireId(`${id}@probe-1`).length > 0));
    for (const [i, id] of bucketIds.entries()) {
      const e = byFireId(`${id}@probe-1`)[0].value;
      assert.equal(e.trigger, "manual");
      assert.equal(e.bucket, bucket);
      assert.deepEqual(e.payload, { probe: i }, "the fire's payload overrides the job's");
    }
    const triggerTs = Date.now();
    await send(BUCKET_TRIGGERS, bucket, { v: 1, bucket, trigger_id: "close-1", payload: { month: "2026-05" } },
      { timestamp: String(triggerTs) });
    for (const id of bucketIds) expected.set(`${id}@close-1`, { jobId: id, trigger: "bucket", at: iso(triggerTs) });

    // Rejects: each with the record that caused it.
    const wantRejects = [];
    const reject = async (code, field, topic, key, value, extra = {}) => {
      const ts = Date.now();
      const { partition, offset } = await send(topic, key, value, { timestamp: String(ts), ...extra });
      wantRejects.push({ code, field, topic, partition, offset, key, value, ts });
    };
    await reject("malformed", undefined, JOBS, `${run}/bad-json`, '{"v":1,"op":');
    await reject("unknown_field", undefined, JOBS, `${run}/colour`, '{"v":1,"op":"put","job":{"every":"1m"},"colour":"red"}');
    const wrongId = `${run}/wrong`;
    await reject("wrong_partition", undefined, JOBS, wrongId, '{"v":1,"op":"put","job":{"every":"1m"}}',
      { partition: (chronosPartition(wrongId, P) + 1) % P });
    await reject("unknown_job", "id", JOBS, `${run}/nobody`, '{"v":1,"op":"pause"}');

    await waitFor(`${expected.size} dispatch events`, () => [...expected.keys()].every((fid) => byFireId(fid).length > 0));
    await waitFor(`${wantRejects.length} rejects`, () =>
      wantRejects.every((w) => rejects.records.some((r) => r.value.topic === w.topic && r.value.partition === w.partition && r.value.offset === w.offset)));

    // Every event of this run: the documented schema; the set of fire ids is
    // exactly the expected one (duplicates are allowed: at least once).
    const mine = dispatch.records.filter((r) => r.key.startsWith(run + "/"));
    const probes = new Set(bucketIds.map((id) => `${id}@probe-1`));
    for (const r of mine) checkDispatchEvent(r, P);
    const got = new Set(mine.map((r) => r.value.fire_id).filter((f) => !probes.has(f)));
    assert.deepEqual([...got].sort(), [...expected.keys()].sort());
    assert.ok(!mine.some((r) => r.key === deletedId), "the deleted job fired");
    for (const r of mine) {
      const e = r.value;
      const want = expected.get(e.fire_id);
      if (!want) continue;
      assert.equal(e.trigger, want.trigger, e.fire_id);
      assert.equal(e.scheduled_at, want.at, e.fire_id);
      assert.equal(e.missed, 0, e.fire_id);
      if (e.job_id === cronId) assert.deepEqual(e.payload, { kind: "cron" });
      if (e.job_id === atId) assert.deepEqual(e.payload, { msg: "once" });
      if (e.job_id === everyId) assert.equal(e.payload, undefined, "no payload: the field is omitted");
      if (want.trigger === "bucket") {
        assert.equal(e.bucket, bucket);
        assert.equal(e.trigger_id, "close-1");
        assert.deepEqual(e.payload, { month: "2026-05" });
      }
    }

    for (const w of wantRejects) {
      const r = rejects.records.find((x) => x.value.topic === w.topic && x.value.partition === w.partition && x.value.offset === w.offset);
      const j = r.value;
      assert.equal(j.v, 2);
      assert.equal(j.code, w.code, j.reason);
      if (w.field) assert.equal(j.field, w.field);
      assert.equal(typeof j.reason, "string");
      assert.equal(r.key, w.key, "a reject's record key is the rejected record's key");
      assert.equal(Buffer.from(j.key, "base64").toString("utf8"), w.key);
      assert.equal(j.key_size, Buffer.byteLength(w.key));
      assert.equal(Buffer.from(j.value, "base64").toString("utf8"), w.value);
      assert.equal(j.value_size, Buffer.byteLength(w.value));
      assert.equal(j.value_sha256, crypto.createHash("sha256").update(w.value).digest("hex"));
      assert.equal(j.truncated, undefined, "omitted if false");
      assert.equal(parseTime(j.rejected_at), w.ts, "rejected_at is the rejected record's timestamp");
      if (w.code === "wrong_partition") {
        assert.match(j.reason, new RegExp(`\\b${chronosPartition(wrongId, P)}\\b`), "the reason names the right partition");
      }
    }
    assert.ok(!dispatch.records.some((r) => r.key === wrongId), "a wrong-partition put stores nothing");
  } finally {
    await producer.disconnect();
    await dispatch.consumer.disconnect();
    await rejects.consumer.disconnect();
  }
});
