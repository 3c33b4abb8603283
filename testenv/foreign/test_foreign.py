"""A foreign client of Chronos: Python + librdkafka (confluent-kafka) on a
real Apache Kafka broker, written only from docs/topics.md and
docs/schedules.md, with no Chronos code.

It needs a running Chronos instance (`chronos run`) on the broker:

    CHRONOS_TEST_BROKERS   bootstrap brokers, host:port[,...]
    CHRONOS_TOPIC_PREFIX   the instance's --topic-prefix (may be empty)

foreign_test.go (go test -tags foreign ./testenv/foreign/) starts the
instance and runs this file; see docs/real-kafka.md.

Covered: the partitioning formula (the documented test vectors, and
librdkafka's fnv1a partitioner against it), put commands for 300 cron, every
and at jobs with exactly predictable fire ids, the schema of every dispatch
event, rejects of a malformed command and of an unknown field, and an
executor reporting outcomes on chronos-results that the history API then
shows (with CHRONOS_API, the instance's HTTP address).
Not covered: bucket triggers (chronos-bucket-triggers); this test leaves
them out.
"""

import base64
import hashlib
import datetime as dt
import json
import os
import re
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BROKERS = os.environ.get("CHRONOS_TEST_BROKERS", "")
PREFIX = os.environ.get("CHRONOS_TOPIC_PREFIX", "")
JOBS = PREFIX + "chronos-jobs"
DISPATCH = PREFIX + "chronos-dispatch"
REJECTS = PREFIX + "chronos-rejects"
BUCKET_TRIGGERS = PREFIX + "chronos-bucket-triggers"

DISPATCH_TIMEOUT = 90.0  # seconds for every expected fire to arrive
REJECT_TIMEOUT = 60.0

pytestmark = pytest.mark.skipif(not BROKERS, reason="CHRONOS_TEST_BROKERS is not set")

# RFC 3339 UTC as Chronos writes it: fractional seconds only when non-zero,
# without trailing zeros (docs/topics.md, "Dispatch events").
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z$")


# --- the contract: partitioning (docs/topics.md, "Keys and partitioning") ---

def fnv1a32(key: bytes) -> int:
    h = 0x811C9DC5
    for b in key:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def chronos_partition(key: bytes, n: int) -> int:
    """goka's hasher through sarama's hash partitioner: |int32(h)| mod n."""
    h = fnv1a32(key)
    s = h - (1 << 32) if h >= (1 << 31) else h
    return abs(s) % n


def fmt_time(t: dt.datetime) -> str:
    """A UTC instant as Chronos formats scheduled_at (Go's RFC3339Nano)."""
    t = t.astimezone(dt.timezone.utc)
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        s += ("." + f"{t.microsecond:06d}").rstrip("0")
    return s + "Z"


def parse_time(s: str) -> dt.datetime:
    assert RFC3339_UTC.match(s), f"not RFC 3339 UTC as documented: {s!r}"
    base, _, frac = s[:-1].partition(".")
    t = dt.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    if frac:
        t += dt.timedelta(microseconds=int((frac + "000000")[:6]))
    return t


def compact(v) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


# --- Kafka helpers ---

def partitions_of(topic: str) -> int:
    adm = AdminClient({"bootstrap.servers": BROKERS})
    md = adm.list_topics(topic=topic, timeout=30)
    t = md.topics[topic]
    assert t.error is None, f"{topic}: {t.error}"
    return len(t.partitions)


class Produced:
    """Delivery reports of one producer, by (topic, key, value)."""

    def __init__(self):
        self.errors = []
        self.reports = {}

    def __call__(self, err, msg):
        if err is not None:
            self.errors.append(err)
        else:
            self.reports[(msg.topic(), msg.key(), msg.value())] = msg


def new_producer(**extra) -> Producer:
    cfg = {"bootstrap.servers": BROKERS, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    cfg.update(extra)
    return Producer(cfg)


def produce_all(producer: Producer, records) -> Produced:
    """records: (topic, key, value, partition or None, timestamp ms or None)."""
    done = Produced()
    for topic, key, value, partition, ts in records:
        kw = {"on_delivery": done}
        if partition is not None:
            kw["partition"] = partition
        if ts is not None:
            kw["timestamp"] = ts
        while True:
            try:
                producer.produce(topic, value=value, key=key, **kw)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(30)
    assert left == 0, f"{left} records not delivered within 30 s"
    assert not done.errors, f"delivery errors: {done.errors[:5]}"
    return done


class TopicReader:
    """Reads every partition of a topic from the beginning (no group)."""

    def __init__(self, topic: str):
        self.topic = topic
        self.consumer = Consumer({
            "bootstrap.servers": BROKERS,
            "group.id": "foreign-test-" + uuid.uuid4().hex,  # never joined: assign() only
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        })
        n = partitions_of(topic)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(n)])

    def poll(self, timeout: float):
        msgs = self.consumer.consume(num_messages=1000, timeout=timeout)
        out = []
        for m in msgs:
            if m.error():
                raise KafkaException(m.error())
            out.append(m)
        return out

    def close(self):
        self.consumer.close()


# --- tests ---

def test_partition_formula_matches_documented_vectors():
    vectors = [  # docs/topics.md, P = 12
        ("invoice-42", 0x59857CA1, 9),
        ("user:1001", 0x4F7C1BF6, 2),
        ("a", 0xE40C292C, 0),
        ("payments/retry-7", 0xA9EA4987, 5),
        ("1468509572224", 0x80000000, 8),
    ]
    for key, h, p in vectors:
        assert fnv1a32(key.encode()) == h, key
        assert chronos_partition(key.encode(), 12) == p, key


def test_librdkafka_fnv1a_partitioner_agrees():
    """docs/topics.md says librdkafka's partitioner=fnv1a is compatible:
    check it on a scratch topic, for keys with and without the high bit."""
    n = partitions_of(JOBS)
    scratch = PREFIX + "foreign-scratch-" + uuid.uuid4().hex[:8]
    adm = AdminClient({"bootstrap.servers": BROKERS})
    for fut in adm.create_topics([NewTopic(scratch, num_partitions=n, replication_factor=1)]).values():
        fut.result(30)
    try:
        keys = [f"k-{i}-ä€".encode() for i in range(400)] + [b"1468509572224", b"a", b"payments/retry-7"]
        assert any(fnv1a32(k) >= 1 << 31 and fnv1a32(k) % n != chronos_partition(k, n) for k in keys)
        prod = new_producer(partitioner="fnv1a", **{"topic.metadata.propagation.max.ms": 60000})
        done = produce_all(prod, [(scratch, k, b"x", None, None) for k in keys])
        wrong = [(k, m.partition(), chronos_partition(k, n))
                 for (_, k, _), m in done.reports.items() if m.partition() != chronos_partition(k, n)]
        assert len(done.reports) == len(keys)
        assert not wrong, f"librdkafka fnv1a disagrees on {len(wrong)} keys, e.g. {wrong[:5]}"
    finally:
        for fut in adm.delete_topics([scratch]).values():
            try:
                fut.result(30)
            except Exception:  # best effort
                pass


def job_ids():
    """300 ids: plain, with UTF-8, JSON-special and HTML-special characters."""
    run = uuid.uuid4().hex[:6]
    ids = []
    for i in range(300):
        if i % 10 == 3:
            ids.append(f"py-{run}/ä€😀-{i}")
        elif i % 10 == 7:
            ids.append(f'py-{run} "quoted" <&> \\ {i}')
        else:
            ids.append(f"py-{run}-{i:03d}")
    return ids


def payload_for(i):
    """Varied payloads (some none) whose compact form is what Chronos must echo."""
    k = i % 6
    if k == 0:
        return None
    if k == 1:
        return {"i": i, "s": "x<&>é\u2028", "nested": {"a": [1, 2.5, True, None]}}
    if k == 2:
        return [i, "two", {"three": 3}]
    if k == 3:
        return f"string payload {i}"
    if k == 4:
        return i * 1000003
    return {"big": "y" * 2000, "i": i}


def test_put_300_jobs_and_every_fire_arrives_as_documented():
    n = partitions_of(JOBS)
    assert partitions_of(DISPATCH) == n
    now = dt.datetime.now(dt.timezone.utc)
    # An even second at least 12 s ahead: time for the puts to be applied
    # before the first fire, so every fire is an ordinary (not late) one.
    base = (now + dt.timedelta(seconds=12)).replace(microsecond=0)
    if base.second % 2:
        base += dt.timedelta(seconds=1)
    sec = lambda s: base + dt.timedelta(seconds=s)  # noqa: E731

    ids = job_ids()
    expected = {}  # fire_id -> (job id, scheduled_at, payload or None)
    job_payload = {}
    records = []
    for i, jid in enumerate(ids):
        payload = payload_for(i)
        job_payload[jid] = payload
        if i < 200:
            # one-shot "at" jobs over 10 s; some with fractional seconds and
            # some written with a +02:00 offset (fire_id is in UTC).
            at = sec(i % 10)
            if i % 20 == 5:
                at += dt.timedelta(milliseconds=250)
            elif i % 20 == 15:
                at += dt.timedelta(microseconds=500000)
            if i % 4 == 1:
                at_s = at.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()
            else:
                at_s = at.isoformat().replace("+00:00", "Z")
            job = {"at": at_s}
            fires = [at]
        elif i < 250:
            # cron with seconds, every 2 s, inside an inclusive 4 s window.
            job = {"cron": "*/2 * * * * *", "start": fmt_time(sec(0)), "end": fmt_time(sec(4))}
            if i % 2:
                job["tz"] = "Europe/Berlin"
            fires = [sec(0), sec(2), sec(4)]
        else:
            # every 2 s with start as the origin, inside [start, end].
            job = {"every": "2s", "start": fmt_time(sec(1)), "end": fmt_time(sec(5))}
            fires = [sec(1), sec(3), sec(5)]
        if payload is not None:
            job["payload"] = payload
        cmd = {"v": 1, "op": "put", "job": job}
        if i % 3 == 0:
            cmd["id"] = jid
        key = jid.encode()
        records.append((JOBS, key, compact(cmd), chronos_partition(key, n), None))
        for f in fires:
            expected[jid + "@" + fmt_time(f)] = (jid, f, payload)
    assert len(expected) == 200 + 50 * 3 + 50 * 3

    reader = TopicReader(DISPATCH)  # before producing: it reads from the beginning anyway
    try:
        done = produce_all(new_producer(), records)
        assert len(done.reports) == len(records)
        for (_, key, _), m in done.reports.items():
            assert m.partition() == chronos_partition(key, n)
        assert dt.datetime.now(dt.timezone.utc) < base, "the puts took too long; fires would be late"

        seen = {}  # fire_id -> count
        problems = []
        deadline = time.monotonic() + DISPATCH_TIMEOUT
        settle_until = None
        while True:
            for m in reader.poll(0.5):
                fid = check_dispatch(m, n, expected, job_payload, problems)
                if fid is not None:
                    seen[fid] = seen.get(fid, 0) + 1
            if settle_until is None and expected.keys() <= seen.keys():
                settle_until = time.monotonic() + 4  # extra fires would show up now
            if settle_until is not None and time.monotonic() >= settle_until:
                break
            if time.monotonic() >= deadline:
                break
        missing = sorted(expected.keys() - seen.keys())
        dups = {k: c for k, c in seen.items() if c > 1}
        if dups:
            print(f"duplicate dispatches (allowed, at least once): {len(dups)}: {list(dups.items())[:10]}")
        assert not problems, f"{len(problems)} schema problems, e.g.:\n" + "\n".join(problems[:20])
        assert not missing, f"{len(missing)} of {len(expected)} fires missing after {DISPATCH_TIMEOUT}s, e.g. {missing[:10]}"
        print(f"{len(expected)} fires of {len(ids)} jobs arrived; {sum(seen.values())} events")
    finally:
        reader.close()


def check_dispatch(m, n, expected, job_payload, problems):
    """Checks one chronos-dispatch record against docs/topics.md. Returns its
    fire_id when it belongs to this test's jobs, else None."""
    key = m.key()
    try:
        jid = key.decode("utf-8")
    except (AttributeError, UnicodeDecodeError):
        problems.append(f"key {key!r} is not UTF-8")
        return None
    if jid not in job_payload:
        return None  # another test's job
    err = lambda s: problems.append(f"{jid}: {s}: {m.value()[:300]!r}")  # noqa: E731
    try:
        d = json.loads(m.value())
    except ValueError as e:
        err(f"not JSON: {e}")
        return None
    if not isinstance(d, dict):
        err("not a JSON object")
        return None
    if d.get("v") != 1 or type(d.get("v")) is not int:
        err("v is not the integer 1")
    for f, t in (("fire_id", str), ("job_id", str), ("trigger", str), ("scheduled_at", str),
                 ("fired_at", str), ("missed", int)):
        if f not in d:
            err(f"required field {f} missing")
            return None
        if type(d[f]) is not t:
            err(f"{f} is {type(d[f]).__name__}, want {t.__name__}")
            return None
    if d["job_id"] != jid:
        err("job_id != record key")
    if m.partition() != chronos_partition(key, n):
        err(f"on partition {m.partition()}, want the command's partition {chronos_partition(key, n)}")
    if d["trigger"] != "schedule":
        err(f"trigger {d['trigger']!r}, want schedule")
    if d["missed"] != 0:
        err(f"missed {d['missed']}, want 0 (no fire was late)")
    for f in ("bucket", "trigger_id"):
        if f in d:
            err(f"{f} present on a scheduled fire of a job without bucket")
    try:
        sched = parse_time(d["scheduled_at"])
        fired = parse_time(d["fired_at"])
    except AssertionError as e:
        err(str(e))
        return d["fire_id"]
    if d["fire_id"] != jid + "@" + d["scheduled_at"]:
        err("fire_id != job_id + '@' + scheduled_at")
    if d["fire_id"] not in expected:
        err(f"unexpected fire {d['fire_id']}")
        return d["fire_id"]
    _, want_at, payload = expected[d["fire_id"]]
    if sched != want_at:
        err(f"scheduled_at {sched}, want {want_at}")
    if fired < sched:
        err(f"fired_at {d['fired_at']} before scheduled_at")
    if payload is None:
        if "payload" in d:
            err("payload present for a job without one")
    elif "payload" not in d:
        err("payload missing")
    elif compact(d["payload"]) != compact(payload):
        err(f"payload {compact(d['payload'])[:100]!r} != {compact(payload)[:100]!r}")
    elif compact(payload) not in m.value():
        err("payload is not the compacted bytes of the put")
    return d["fire_id"]


def test_malformed_and_unknown_field_commands_are_rejected_with_original_bytes():
    n = partitions_of(JOBS)
    run = uuid.uuid4().hex[:6]
    ts = int(time.time() * 1000)
    bad = [
        # (key, value, code, field)
        (f"py-bad-{run}".encode(), b'{"v":1,"op":"put","job":{"every":"1s"}\xff', "malformed", None),
        (f"py-unknown-{run}".encode(), b'{"v":1,"op":"put","job":{"every":"1s","colour":"red"}}',
         "unknown_field", None),
    ]
    done = produce_all(new_producer(), [(JOBS, k, v, chronos_partition(k, n), ts) for k, v, _, _ in bad])
    where = {(k, v): (m.partition(), m.offset()) for (_, k, v), m in done.reports.items()}

    reader = TopicReader(REJECTS)
    found = {}
    try:
        deadline = time.monotonic() + REJECT_TIMEOUT
        while len(found) < len(bad) and time.monotonic() < deadline:
            for m in reader.poll(0.5):
                if m.key() in {k for k, _, _, _ in bad}:
                    found[m.key()] = m
    finally:
        reader.close()
    for key, value, code, _ in bad:
        assert key in found, f"no reject for {key!r} within {REJECT_TIMEOUT}s"
        m = found[key]
        r = json.loads(m.value())
        part, off = where[(key, value)]
        assert r["v"] == 2 and type(r["v"]) is int
        assert r["code"] == code, r
        assert isinstance(r["reason"], str) and r["reason"]
        assert r["topic"] == JOBS
        assert r["partition"] == part and r["offset"] == off, r
        # Short records: the whole key and value, verbatim, with their sizes
        # and the value's SHA-256 (longer ones carry a 1 KiB prefix).
        assert base64.b64decode(r["key"]) == key and r["key_size"] == len(key)
        assert base64.b64decode(r["value"]) == value, "the original bytes, verbatim"
        assert r["value_size"] == len(value)
        assert r["value_sha256"] == hashlib.sha256(value).hexdigest()
        assert not r.get("truncated", False)
        assert parse_time(r["rejected_at"]) == dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc), \
            "rejected_at is the timestamp of the rejected record"
        assert m.partition() == part, "a reject is on the partition number of the rejected record"
        if "field" in r:
            assert isinstance(r["field"], str)


def test_bucket_trigger_fires_every_job_of_the_bucket_once_per_trigger():
    """Puts 100 jobs in one bucket (cron far in the future, so only the
    trigger fires them) and produces a bucket trigger as docs/topics.md
    describes. The puts and the trigger travel on different topics, so a
    trigger may overtake puts: it is re-sent with a new trigger id until one
    trigger id has fired all 100 jobs."""
    n = partitions_of(JOBS)
    run = uuid.uuid4().hex[:6]
    bucket = f"py-bucket-{run}"
    ids = [f"py-b-{run}-{i:03d}" for i in range(100)]
    ts = int(time.time() * 1000)
    puts = []
    for i in ids:
        k = i.encode()
        v = compact({"v": 1, "op": "put", "id": i,
                     "job": {"cron": "0 0 1 1 *", "bucket": bucket, "payload": {"own": i}}})
        puts.append((JOBS, k, v, chronos_partition(k, n), ts))
    produce_all(new_producer(), puts)

    reader = TopicReader(DISPATCH)
    by_trigger = {}
    try:
        for attempt in range(8):
            trigger_id = f"py-trigger-{run}-{attempt}"
            value = compact({"v": 1, "bucket": bucket, "trigger_id": trigger_id, "payload": {"override": attempt}})
            key = bucket.encode()
            produce_all(new_producer(), [(BUCKET_TRIGGERS, key, value,
                                          chronos_partition(key, partitions_of(BUCKET_TRIGGERS)), None)])
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                for m in reader.poll(0.5):
                    e = json.loads(m.value())
                    if e.get("bucket") != bucket:
                        continue
                    assert e["v"] == 1 and e["trigger"] == "bucket", e
                    assert m.key().decode() == e["job_id"]
                    assert e["fire_id"] == e["job_id"] + "@" + e["trigger_id"], e
                    assert e["missed"] == 0
                    assert e["payload"] == {"override": int(e["trigger_id"].rsplit("-", 1)[1])}, e
                    by_trigger.setdefault(e["trigger_id"], []).append(e["job_id"])
            done = [t for t, got in by_trigger.items() if sorted(set(got)) == sorted(ids)]
            if done:
                break
    finally:
        reader.close()
    assert done, f"no trigger fired all 100 jobs: {[(t, len(set(g))) for t, g in by_trigger.items()]}"
    for t, got in by_trigger.items():
        assert len(got) == len(set(got)), f"trigger {t} fired a job twice"
        assert set(got) <= set(ids)


# --- executor outcomes (docs/topics.md, "Results") ---

RESULTS = PREFIX + "chronos-results"
API = os.environ.get("CHRONOS_API", "")


def api_call(method: str, path: str, body=None):
    import urllib.request
    req = urllib.request.Request(API + path, method=method, data=None if body is None else compact(body),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


@pytest.mark.skipif(not API, reason="CHRONOS_API is not set")
def test_executor_reports_outcomes_and_history_shows_them():
    """An executor written from docs/topics.md: it consumes its job's
    dispatch events and reports on chronos-results (started, then succeeded
    or failed, with times, attempt and error), keyed and partitioned like
    commands. GET /v1/jobs/{id}/fires then shows each reported fire with its
    delay, outcome and duration, and /history shows who created the job. A
    malformed result is rejected like any bad input."""
    n = partitions_of(RESULTS)
    jid = f"py-exec-{uuid.uuid4().hex[:6]}"
    api_call("PUT", "/v1/jobs/" + jid, {"every": "1s"})
    key = jid.encode()
    reader = TopicReader(DISPATCH)
    reported = {}  # fire_id -> (status, scheduled_at)
    try:
        deadline = time.monotonic() + DISPATCH_TIMEOUT
        while len(reported) < 4 and time.monotonic() < deadline:
            for m in reader.poll(0.5):
                if m.key() != key or len(reported) >= 4:
                    continue
                e = json.loads(m.value())
                fired = parse_time(e["fired_at"])
                start, end = fired + dt.timedelta(milliseconds=100), fired + dt.timedelta(milliseconds=1600)
                base = {"v": 1, "fire_id": e["fire_id"], "scheduled_at": e["scheduled_at"]}
                failed = len(reported) % 2 == 1
                final = dict(base, status="failed" if failed else "succeeded", attempt=1,
                             started_at=fmt_time(start), finished_at=fmt_time(end))
                if failed:
                    final["error"] = "exit status 2"
                records = [(RESULTS, key, compact(dict(base, status="started", started_at=fmt_time(start))), None, None),
                           (RESULTS, key, compact(final), None, None)]
                if len(reported) == 0:
                    records.reverse()  # the outcome before its start: order does not matter
                produce_all(new_producer(), [(t, k, v, chronos_partition(k, n), ts) for t, k, v, _, ts in records])
                reported[e["fire_id"]] = (final["status"], e["scheduled_at"])
    finally:
        reader.close()
    assert len(reported) == 4, f"only {len(reported)} fires of {jid} arrived"
    bad = compact({"v": 1, "fire_id": jid + "@x", "scheduled_at": fmt_time(dt.datetime.now(dt.timezone.utc)), "status": "done",
                   "finished_at": fmt_time(dt.datetime.now(dt.timezone.utc))})
    produce_all(new_producer(), [(RESULTS, key, bad, chronos_partition(key, n), None)])

    deadline = time.monotonic() + 60
    while True:
        fires = {f["fire_id"]: f for f in api_call("GET", f"/v1/jobs/{jid}/fires")["fires"]}
        if all(fid in fires and fires[fid]["status"] == st for fid, (st, _) in reported.items()):
            break
        assert time.monotonic() < deadline, f"history never showed the outcomes: {fires}"
        time.sleep(0.5)
    for fid, (status, scheduled_at) in reported.items():
        f = fires[fid]
        print(f"{fid}: delay {f['delay_seconds']:.3f}s, {f['status']}, duration {f['duration_seconds']}s")
        assert f["scheduled_at"] == scheduled_at and f["trigger"] == "schedule"
        assert 0 <= f["delay_seconds"] < 30, f
        assert f["attempt"] == 1 and abs(f["duration_seconds"] - 1.5) < 1e-6, f
        assert f.get("error", "") == ("exit status 2" if status == "failed" else ""), f
    changes = api_call("GET", f"/v1/jobs/{jid}/history")["changes"]
    assert changes[-1]["op"] == "put" and changes[-1]["actor"] == "anonymous", changes

    reader = TopicReader(REJECTS)
    try:
        deadline = time.monotonic() + REJECT_TIMEOUT
        while True:
            rej = [json.loads(m.value()) for m in reader.poll(0.5)]
            rej = [r for r in rej if r["topic"] == RESULTS and base64.b64decode(r["value"]) == bad]
            if rej:
                break
            assert time.monotonic() < deadline, "the malformed result was not rejected"
    finally:
        reader.close()
    assert rej[0]["code"] == "invalid_field" and rej[0]["field"] == "status", rej[0]
    api_call("DELETE", "/v1/jobs/" + jid)
