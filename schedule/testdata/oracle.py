#!/usr/bin/env python3
"""Brute-force oracle for Chronos cron schedules: calendar items and DST policies.

It shares no code and no algorithm with schedule/ (Go). It knows nothing of
time-zone transitions: it reads the zone with Python's zoneinfo (from the
same zoneinfo.zip the Go binary carries, so both sides use the same rules)
and tabulates the wall-clock reading of EVERY minute over the whole range.
A wall time W that an expression matches then fires at:

  - the instants whose reading is W: the first (overlap "first"), the last
    ("last") or all of them ("both");
  - when no minute reads W (a spring-forward gap): the first instant whose
    reading is after W (gap "shift"), or nowhere (gap "skip").

Fires are a set: equal instants count once. Calendar items are matched by
direct definition on each date (L-n = n days before the last, nW = the
weekday nearest day n within the month, LW = the last weekday, d#n = the nth
weekday d, dL = the last weekday d); day-of-month and day-of-week combine as
robfig/Vixie cron: if either field is "*" or "?" both must match, else either.

Usage:
  oracle.py                  # writes the full fixture (oracle.json) to stdout
  oracle.py --sample         # a small fixture: one zone, two years (for the Go test that reruns it)
  oracle.py --dump EXPR ZONE GAP OVERLAP   # every fire, one Unix second a line (debugging)
  oracle.py --fires EXPR ZONE GAP OVERLAP FROM TO   # the fires in [FROM, TO) (Unix seconds), one a line
  oracle.py --sets           # the fixture of several schedules with exclusions (oracle_sets.json)
  oracle.py --sets-sample    # a small one (one zone, two years)

Several schedules with exclusions (--sets): the union of the members'
fires (each cron member by the walk above under its own DST policy, each
"every" member as the multiples of its period since the Unix epoch),
as a set, without the instants in a range [from, to) and those whose wall
reading (minute by minute, as above) falls on an excluded date. The dates
are chosen at random, plus every date on which the zone's offset changes
(the days DST shortens or lengthens) and Christmas of each year.
"""

import bisect
import calendar
import datetime as dt
import hashlib
import io
import itertools
import json
import os
import random
import sys
import zipfile
from array import array
from zoneinfo import ZoneInfo

HERE = os.path.dirname(os.path.abspath(__file__))
ZIP = os.path.join(HERE, "..", "zoneinfo.zip")

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "America/Santiago"]
YEARS = (2021, 2032)  # instants from Jan 1 of the first to Jan 1 of the second (11 years)
MARGIN = 3 * 86400  # fires are compared in [start + MARGIN, end - MARGIN)
POLICIES = [(g, o) for g in ("shift", "skip") for o in ("first", "last", "both")]

CURATED = [
    "0 0 L * *", "0 12 L-2 * *", "30 9 15W * *", "0 18 LW * *", "0 9 1W * *", "0 9 31W * *",
    "0 10 * * 1#2", "0 10 * * 5L", "0 0 * 2 0#5", "0 8 * * 3#5",
    "*/15 * * * *", "30 2 * * *", "30 1 * * *", "0,30 1-3 * * *", "0 0 * * *", "45 2 * * 0#1",
    "0 2 * * 0L", "15 1,2 * * 0#1", "30 1 * * 0#1", "30 2 * * 0#2", "0 0,23 * * 0#1",
    "0 2 L * 0L", "30 2 1W * 0#1", "0 0 LW * 6L",
]

MINUTES = ["0", "30", "*/30", "15,45", "0-59/20", "59", "45", "0,15"]
HOURS = ["*/4", "2", "1-3", "0,2", "*/6", "1,2,3", "0", "23", "3", "22-23"]
DOMS = ["*", "?", "L", "L-1", "L-3", "15W", "1W", "31W", "LW", "1,L", "L,15", "13", "31", "1-7", "*"]
MONTHS = ["*", "*", "*", "2", "1-6", "*/2", "3,10", "4,9,10", "mar-apr"]
DOWS = ["*", "?", "5L", "0L", "1#1", "5#5", "0#2", "3#3,5L", "1-5", "mon", "fri", "6", "2#4", "*", "sun#1", "0#1,0L"]


def generated(n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        e = " ".join(rng.choice(f) for f in (MINUTES, HOURS, DOMS, MONTHS, DOWS))
        if e not in out:
            out.append(e)
    return out


# ---- cron matching, by definition -------------------------------------------------

MONTH_NAMES = {m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}
DOW_NAMES = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}


def value(s, names):
    s = s.lower()
    return names[s] if s in names else int(s)


def plain_set(field, lo, hi, names):
    """Values of a field without calendar items (*, ?, a, a-b, */s, a-b/s, a/s, lists)."""
    out = set()
    for item in field.split(","):
        step, has_step = 1, "/" in item
        if has_step:
            item, s = item.split("/")
            step = int(s)
        if item in ("*", "?"):
            a, b = lo, hi
        elif "-" in item:
            a, b = (value(x, names) for x in item.split("-"))
        else:
            a = value(item, names)
            b = hi if has_step else a
        out.update(range(a, b + 1, step))
    return out


class Cron:
    def __init__(self, expr):
        mi, h, dom, mo, dow = expr.split()
        self.minutes = sorted(plain_set(mi, 0, 59, {}))
        self.hours = sorted(plain_set(h, 0, 23, {}))
        self.months = plain_set(mo, 1, 12, MONTH_NAMES)
        self.dom_star = dom in ("*", "?")
        self.dow_star = dow in ("*", "?")
        self.dom_plain, self.dom_cal = set(), []
        for it in dom.split(","):
            u = it.upper()
            if u == "L":
                self.dom_cal.append(("L", 0))
            elif u == "LW":
                self.dom_cal.append(("LW", 0))
            elif u.startswith("L-"):
                self.dom_cal.append(("L", int(u[2:])))
            elif u.endswith("W"):
                self.dom_cal.append(("W", int(u[:-1])))
            else:
                self.dom_plain |= plain_set(it, 1, 31, {})
        self.dow_plain, self.dow_cal = set(), []
        for it in dow.split(","):
            u = it.lower()
            if "#" in u:
                d, n = u.split("#")
                self.dow_cal.append(("#", value(d, DOW_NAMES), int(n)))
            elif u.endswith("l"):
                self.dow_cal.append(("L", value(u[:-1], DOW_NAMES), 0))
            else:
                self.dow_plain |= plain_set(it, 0, 6, DOW_NAMES)

    def day(self, y, m, d):
        dim = calendar.monthrange(y, m)[1]
        wd = (dt.date(y, m, d).weekday() + 1) % 7  # 0 = Sunday

        def weekday_of(day):
            return (dt.date(y, m, day).weekday() + 1) % 7

        dom_ok = d in self.dom_plain
        for kind, n in self.dom_cal:
            if kind == "L":
                dom_ok |= d == dim - n
            elif kind == "LW":
                last = dim
                while weekday_of(last) in (0, 6):
                    last -= 1
                dom_ok |= d == last
            elif n <= dim:  # nW
                t, w = n, weekday_of(n)
                if w == 6:
                    t = n + 2 if n == 1 else n - 1
                elif w == 0:
                    t = n - 2 if n == dim else n + 1
                dom_ok |= d == t
        dow_ok = wd in self.dow_plain
        for kind, wday, n in self.dow_cal:
            if kind == "#":
                dow_ok |= wd == wday and (d - 1) // 7 + 1 == n
            else:
                dow_ok |= wd == wday and d + 7 > dim
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def walls(self, lo, hi):
        """Matching wall times (seconds since 1970-01-01T00:00 wall) in [lo, hi]."""
        epoch = dt.date(1970, 1, 1).toordinal()
        out = []
        for o in range(lo // 86400, hi // 86400 + 1):
            date = dt.date.fromordinal(o + epoch)
            if date.month not in self.months or not self.day(date.year, date.month, date.day):
                continue
            for h in self.hours:
                for mi in self.minutes:
                    w = o * 86400 + h * 3600 + mi * 60
                    if lo <= w <= hi:
                        out.append(w)
        return out


# ---- the zone, minute by minute -----------------------------------------------------

def year_bounds(years):
    return tuple(int(dt.datetime(y, 1, 1, tzinfo=dt.timezone.utc).timestamp()) for y in years)


class Zone:
    def __init__(self, name, bounds):
        with zipfile.ZipFile(ZIP) as z:
            tz = ZoneInfo.from_file(io.BytesIO(z.read(name)), key=name)
        self.start, self.end = bounds
        self.wall = array("q")
        offsets = set()
        utc = dt.timezone.utc
        for u in range(self.start, self.end, 60):
            off = int(dt.datetime.fromtimestamp(u, utc).astimezone(tz).utcoffset().total_seconds())
            offsets.add(off)
            self.wall.append(u + off)
        self.offsets = sorted(offsets)
        self.highest = array("q", itertools.accumulate(self.wall, max))

    def instants(self, w):
        """Every minute instant whose wall reading is w, in order."""
        out = []
        for off in self.offsets:
            u = w - off
            i = (u - self.start) // 60
            if 0 <= i < len(self.wall) and self.wall[i] == w:
                out.append(u)
        return sorted(out)

    def after(self, w):
        """The first minute instant whose wall reading is after w."""
        i = bisect.bisect_right(self.highest, w)
        return self.start + 60 * i if i < len(self.wall) else None


def fires(cron_walls, zone, gap, overlap):
    out = set()
    for w in cron_walls:
        us = zone.instants(w)
        if not us:
            if gap == "shift":
                u = zone.after(w)
                if u is not None:
                    out.add(u)
            continue
        if overlap == "first":
            out.add(us[0])
        elif overlap == "last":
            out.add(us[-1])
        else:
            out.update(us)
    lo, hi = zone.start + MARGIN, zone.end - MARGIN
    return sorted(u for u in out if lo <= u < hi)


def cases(exprs, zones, years):
    out = []
    for name in zones:
        zone = Zone(name, year_bounds(years))
        for expr in exprs:
            c = Cron(expr)
            ws = c.walls(zone.start + 2 * 86400, zone.end - 2 * 86400)
            for gap, overlap in POLICIES:
                f = fires(ws, zone, gap, overlap)
                digest = hashlib.sha256("".join(f"{u}\n" for u in f).encode()).hexdigest()
                out.append({"cron": expr, "tz": name, "gap": gap, "overlap": overlap,
                            "from": zone.start + MARGIN, "to": zone.end - MARGIN,
                            "count": len(f), "sha256": digest, "head": f[:3]})
    return out


def transition_dates(zone):
    """The local dates on which the zone's offset changes."""
    out = set()
    for i in range(1, len(zone.wall)):
        if zone.wall[i] - zone.wall[i - 1] != 60:
            out.add(dt.datetime.fromtimestamp(zone.wall[i], dt.timezone.utc).date())
            out.add(dt.datetime.fromtimestamp(zone.wall[i - 1], dt.timezone.utc).date())
    return sorted(out)


def wall_date(zone, u):
    """The local date of instant u (the reading of its minute)."""
    w = zone.wall[(u - zone.start) // 60] + (u - zone.start) % 60
    return dt.datetime.fromtimestamp(w, dt.timezone.utc).date()


def set_cases(zones, years, n, seed):
    rng = random.Random(seed)
    pool = CURATED + generated(30, 20261130)
    out = []
    for name in zones:
        zone = Zone(name, year_bounds(years))
        lo, hi = zone.start + MARGIN, zone.end - MARGIN
        walls = {}
        trans = transition_dates(zone)
        for _ in range(n):
            members, union = [], set()
            for _ in range(rng.randint(2, 4)):
                if rng.random() < 0.25:
                    every = rng.choice([3600, 5400, 86400, 7 * 3600 + 60, 6 * 86400 + 3600])
                    members.append({"every": every})
                    union.update(range(-(-lo // every) * every, hi, every))
                    continue
                expr = rng.choice(pool)
                gap, overlap = rng.choice(POLICIES)
                members.append({"cron": expr, "gap": gap, "overlap": overlap})
                if expr not in walls:
                    walls[expr] = Cron(expr).walls(zone.start + 2 * 86400, zone.end - 2 * 86400)
                union.update(fires(walls[expr], zone, gap, overlap))
            days = sorted(set(rng.sample(trans, min(len(trans), rng.randint(0, 30))))
                          | {dt.date(y, 12, 25) for y in range(*years)}
                          | {dt.date.fromordinal(rng.randint(dt.date(years[0], 1, 1).toordinal(), dt.date(years[1], 1, 1).toordinal()))
                             for _ in range(rng.randint(0, 200))})
            ranges = []
            for _ in range(rng.randint(0, 20)):
                a = rng.randint(lo, hi)
                ranges.append([a, a + rng.randint(1, 30 * 86400)])
            dayset = set(days)
            f = sorted(u for u in union if lo <= u < hi
                       and not any(a <= u < b for a, b in ranges)
                       and wall_date(zone, u) not in dayset)
            digest = hashlib.sha256("".join(f"{u}\n" for u in f).encode()).hexdigest()
            out.append({"members": members, "tz": name, "dates": [d.isoformat() for d in days], "ranges": ranges,
                        "from": lo, "to": hi, "count": len(f), "sha256": digest, "head": f[:3]})
    return out


def main(argv):
    if argv[1:2] in (["--sets"], ["--sets-sample"]):
        if argv[1] == "--sets":
            res = set_cases(ZONES, YEARS, 8, 20261201)
        else:
            res = set_cases(["Australia/Lord_Howe"], (2026, 2028), 4, 7)
        json.dump({"generator": "schedule/testdata/oracle.py " + " ".join(argv[1:]), "sets": res},
                  sys.stdout, indent=0)
        sys.stdout.write("\n")
        return
    if argv[1:2] == ["--dump"]:
        expr, name, gap, overlap = argv[2:6]
        zone = Zone(name, year_bounds(YEARS))
        ws = Cron(expr).walls(zone.start + 2 * 86400, zone.end - 2 * 86400)
        for u in fires(ws, zone, gap, overlap):
            print(u)
        return
    if argv[1:2] == ["--fires"]:
        expr, name, gap, overlap = argv[2:6]
        lo, hi = int(argv[6]), int(argv[7])
        zone = Zone(name, (lo - MARGIN, hi + MARGIN))
        ws = Cron(expr).walls(zone.start + 2 * 86400, zone.end - 2 * 86400)
        for u in fires(ws, zone, gap, overlap):
            if lo <= u < hi:
                print(u)
        return
    if argv[1:2] == ["--sample"]:
        exprs = CURATED[:6] + ["0,30 1-3 * * *", "30 1 * * 0#1", "15 1,2 * * 0#1"] + generated(3, 7)
        res = cases(exprs, ["Australia/Lord_Howe"], (2026, 2028))
    else:
        res = cases(CURATED + generated(30, 20261130), ZONES, YEARS)
    json.dump({"generator": "schedule/testdata/oracle.py " + " ".join(argv[1:]), "cases": res},
              sys.stdout, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
