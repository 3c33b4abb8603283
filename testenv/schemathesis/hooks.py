"""Schemathesis hooks for Chronos (run.sh loads them as SCHEMATHESIS_HOOKS).

docs/openapi.json states every rule the server enforces, but some rules are
beyond what a generator can derive from JSON Schema: the formats `cron`,
`go-duration` and `iana-time-zone` (a grammar, a range, a database), and
four rules across fields or state (start/end/at order; jitter at most the
schedule's gap; a backfill's from < to <= now; a cursor must be one the server issued). The formats get strategies that draw only valid values;
before_call makes a positive (schema-valid) case follow the cross-field
rules. Negative cases are left alone: the server must refuse them.
"""

import base64
import datetime
import re

import schemathesis
from hypothesis import strategies as st

# Cron: 5 fields, or 6 with seconds first, or a descriptor; days of month
# 1-28 so that every expression matches some time.
_minute = st.sampled_from(["*", "0", "5", "*/15", "0-30/10", "1,31,59"])
_hour = st.sampled_from(["*", "0", "9", "9-17", "*/6", "0,12"])
_dom = st.sampled_from(["*", "1", "15", "1-7", "L", "L-2", "15W", "LW", "?"])
_month = st.sampled_from(["*", "1", "6-8", "*/3", "jan,jul"])
_dow = st.sampled_from(["*", "1-5", "0", "mon", "5L", "1#2", "?"])
_five = st.tuples(_minute, _hour, _dom, _month, _dow)
_cron = st.one_of(
    _five.map(" ".join),
    st.tuples(st.sampled_from(["0", "30", "*/10"]), _five).map(lambda t: t[0] + " " + " ".join(t[1])),
    st.sampled_from(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"]),
)
schemathesis.openapi.format("cron", _cron)

# Go durations from 1s to 168h: valid as `every` (at least 1s) and as
# `misfire_grace` (0s to 168h).
_duration = st.one_of(
    st.integers(1, 3600).map(lambda s: f"{s}s"),
    st.integers(1, 600).map(lambda m: f"{m}m"),
    st.tuples(st.integers(1, 167), st.integers(0, 59)).map(lambda t: f"{t[0]}h{t[1]}m"),
    st.sampled_from(["1.5s", "2m30s", "168h", "1h0m0s", "1000ms"]),
)
schemathesis.openapi.format("go-duration", _duration)

schemathesis.openapi.format("iana-time-zone", st.sampled_from([
    "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
    "Pacific/Chatham", "America/Sao_Paulo", "Africa/Casablanca", "Etc/GMT+12",
]))

# Times within years 1970-2199: JSON Schema's date-time allows any year,
# while a schedule's times must have a UTC year from 1 to 9999 and not be
# the zero time (the document says so).
schemathesis.openapi.format("date-time", st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(2199, 12, 31),
    timezones=st.sampled_from([datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]),
).map(lambda d: d.isoformat()))


# Dates (exclude.dates) that exist, years 1 to 9999.
schemathesis.openapi.format("date", st.dates(
    min_value=datetime.date(1, 1, 1), max_value=datetime.date(9999, 12, 31),
).map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}"))


def _time(s):
    """s as an aware datetime, None when it is not one."""
    try:
        t = datetime.datetime.fromisoformat(s)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else None

_CURSOR = re.compile(r"^[0-9]+/")


def _issued_cursor(c):
    """Whether c looks like a cursor the server issued (one from next_cursor)."""
    try:
        return bool(_CURSOR.match(base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)).decode()))
    except Exception:
        return False


@schemathesis.hook
def before_call(ctx, case, kwargs):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    if isinstance(case.query, dict) and "cursor" in case.query and not _issued_cursor(str(case.query["cursor"])):
        # A generator cannot make a cursor the server issued; the stateful
        # phase passes real ones (next_cursor).
        del case.query["cursor"]
    body = case.body
    # A backfill's range (the body of POST /v1/jobs/{id}/backfill, or an
    # import line with op backfill) must be non-empty and in the past: a
    # range [from, to) with from < to <= now. Whether the job's schedule
    # has 1 to 100,000 times in it depends on the job (409 otherwise).
    ranges = [body] if isinstance(body, dict) else [c for c in body if isinstance(c, dict)] if isinstance(body, list) else []
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
    for r in ranges:
        lo, hi = _time(r.get("from")), _time(r.get("to"))
        if not (lo and hi):
            continue
        if hi < lo:
            lo, hi = hi, lo
        if hi > now:
            hi = now
        if lo >= hi:
            lo = hi - datetime.timedelta(days=1)
        r["from"], r["to"] = lo.isoformat(), hi.isoformat()
    # A job definition is the body of a PUT, or the "job" of an import line.
    jobs = [body] if isinstance(body, dict) else [c.get("job") for c in body if isinstance(c, dict)] if isinstance(body, list) else []
    for job in jobs:
        if not isinstance(job, dict):
            continue
        start, end, at = (_time(job.get(f)) for f in ("start", "end", "at"))
        if start and end and end < start:
            job["start"], job["end"] = job["end"], job["start"]
            start, end = end, start
        if at and ((start and at < start) or (end and at > end)):
            job["at"] = job["start"] if start else job["end"]
        # jitter is at most 1h and the schedule's shortest gap; the drawn
        # cron and every values have gaps of 1s or more, but the union of
        # several schedules may have shorter ones (every 1.5s beside a cron).
        if isinstance(job.get("jitter"), str) and job["jitter"] not in ("", "0s"):
            job["jitter"] = "1s"
            if isinstance(job.get("schedules"), list) and len(job["schedules"]) > 1:
                job["jitter"] = None
            # nor with named calendars
            ex = job.get("exclude")
            if isinstance(ex, dict) and isinstance(ex.get("calendars"), list) and ex["calendars"]:
                job["jitter"] = None
        # With n schedules, max_fires is at most 100000 // n.
        n = len(job["schedules"]) if isinstance(job.get("schedules"), list) and job["schedules"] else 1
        if isinstance(job.get("max_fires"), int) and job["max_fires"] > 100000 // n:
            job["max_fires"] = 100000 // n
        # Each member's at lies within start and end, like a job's.
        for m in job.get("schedules") or []:
            mat = _time(m.get("at")) if isinstance(m, dict) else None
            if mat and ((start and mat < start) or (end and mat > end)):
                m["at"] = job["start"] if start else job["end"]
        # An excluded range is non-empty: from < to.
        exclude = job.get("exclude")
        for r in (exclude.get("ranges") or []) if isinstance(exclude, dict) else []:
            lo, hi = _time(r.get("from")), _time(r.get("to"))
            if lo and hi and not lo < hi:
                lo, hi = min(lo, hi), max(lo, hi)
                if lo == hi:
                    hi = lo + datetime.timedelta(seconds=1)
                r["from"], r["to"] = lo.isoformat(), hi.isoformat()


@schemathesis.check
def put_read_your_writes(ctx, response, case):
    """A PUT the server took (2xx) answers 200 with the job and its ETag.

    PUT /v1/jobs/{id} waits up to 3 s for this instance's job view to show
    the definition it wrote; 202 means it did not see it. On this run's
    idle, single-instance, single-writer loopback setup the view follows in
    milliseconds, so a 202 means the server failed to recognize its own
    write (issue 20: a payload with <, >, & or U+2028 was stored
    HTML-escaped and every such PUT answered 202 after 3 s).
    """
    if case.method.upper() != "PUT" or (case.operation.path or "") != "/v1/jobs/{id}" or not 200 <= response.status_code < 300:
        return None  # PUT /v1/calendars/{name} writes no job (and waits for no view)
    if response.status_code != 200 or not response.headers.get("etag"):
        raise AssertionError(
            f"PUT answered {response.status_code} without the job: the instance did not see its own write "
            f"within the read-your-writes wait (body {response.text[:200]})"
        )
    return None


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx, value):
    """POST /v1/import's body: the document's array, one item per line."""
    import json as _json

    items = value if isinstance(value, list) else [value]
    return "".join(_json.dumps(v, ensure_ascii=False) + "\n" for v in items).encode("utf-8")


_HISTORY = re.compile(r"^/v1/jobs/\{id\}/(fires|history)$")


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    """Keep every failure but use_after_free on a job's fires and history.

    A job's history outlives it: after DELETE /v1/jobs/{id} its fires and
    changes stay readable (docs/openapi.json says so), while use_after_free
    expects every /v1/jobs/{id}/... to answer 404. Its other checks stay.
    """
    return not (getattr(failure, "code", "") == "ST301" and _HISTORY.match(case.operation.path or ""))
