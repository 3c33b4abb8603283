package views

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/codecs"
	"github.com/chronos-scheduler/chronos/schedule"
	"github.com/chronos-scheduler/chronos/store"
	"github.com/chronos-scheduler/chronos/topology"
)

// Jobs is a goka View over the scheduler's job table, kept in Pebble stores
// (one per partition, with a bucket index) and up to date while it runs.
// Safe for concurrent use.
type Jobs struct {
	view       *clients.View
	partitions int32
	shardKeys  []string
	stores     store.Registry
	schedules  *schedule.Cache
	// RecoveryL0CompactionThreshold is that of the view's stores
	// (store.Options): used while a store recovers from an empty
	// directory; set it before Run. 0: Pebble's default.
	RecoveryL0CompactionThreshold int
	// Calendars, when set, are the named calendars next fires skip (as
	// they are now); nil: next fires ignore named calendars.
	Calendars schedule.CalendarSource
}

// NewJobs creates the view; Run keeps it up to date.
func NewJobs(kafka clients.Config, layout topology.Layout, dataDir string, log *slog.Logger) (*Jobs, error) {
	keys, err := topology.ShardKeys(layout.Partitions)
	if err != nil {
		return nil, err
	}
	j := &Jobs{partitions: layout.Partitions, shardKeys: keys, schedules: schedule.NewCache(10_000)}
	builder := j.stores.Builder(dataDir, func(int32) store.Options {
		// A fresh view store indexes once, when its recovery is done.
		return store.Options{Indexer: bucketIndexer, DeferIndexOnRecovery: true, KeyFilter: true, RecoveryL0CompactionThreshold: j.RecoveryL0CompactionThreshold, Logger: func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }}
	})
	opts := append(kafka.GokaViewOptions(), goka.WithViewAutoReconnect())
	j.view, err = clients.NewView(kafka.Brokers, layout.SchedulerTable(), new(codec.Bytes), builder, opts...)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	return j, nil
}

// bucketIndexer indexes job records by bucket (the view keeps no due
// index). It reads the bucket alone (codecs.JobBucket): decoding whole
// records was half of the index pass at the end of a recovery. A value
// that is not a job record is not indexed.
func bucketIndexer(_ store.Reader, _ string, value []byte) (store.Entry, error) {
	b, ok := codecs.JobBucket(value)
	if !ok {
		return store.Entry{}, nil
	}
	return store.Entry{Bucket: string(b)}, nil
}

// Run keeps the view up to date until ctx is done.
func (j *Jobs) Run(ctx context.Context) error { return j.view.Run(ctx) }

// Ready reports whether the view has caught up with the table.
func (j *Jobs) Ready() error {
	if err := j.view.Err(); err != nil {
		return fmt.Errorf("job view stopped (restart the process): %w", err)
	}
	if !j.view.Recovered() {
		return errors.New("job view is recovering")
	}
	return nil
}

// Job is the read model of one job.
type Job struct {
	ID        string        `json:"id"`
	Version   uint64        `json:"version"`
	Status    string        `json:"status"`
	Job       codecs.JobDef `json:"job"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	// NextFires are the next (up to 5) scheduled fires; empty unless active.
	NextFires []time.Time `json:"next_fires"`
	// LastFire is the latest scheduled fire the job's shard has passed.
	LastFire *LastFire `json:"last_fire,omitempty"`
	// RemainingFires is how many scheduled times the job's max_fires still
	// allows (absent without a limit).
	RemainingFires *uint64 `json:"remaining_fires,omitempty"`
	// Pause says why and by whom a paused job was paused (absent when it
	// is not paused, or was paused without a note or an actor).
	Pause *Pause `json:"pause,omitempty"`
	// Backfill is the job's backfill in progress (absent: none).
	Backfill *codecs.BackfillStatus `json:"backfill,omitempty"`
	// LimitEnd is the last scheduled time the job's max_fires allows (zero:
	// no limit): its schedule ends there, for any listing of its times.
	LimitEnd time.Time `json:"-"`
}

// Pause is a paused job's note.
type Pause struct {
	Note string `json:"note,omitempty"`
	// By is who paused it: the API token's name, as the history shows it.
	By string `json:"by,omitempty"`
	// At is when it was paused (the pause command's record time).
	At time.Time `json:"at"`
}

// LastFire is a job's latest scheduled fire.
type LastFire struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	FireID      string    `json:"fire_id"`
}

// ErrNotFound is returned by Get for an unknown job.
var ErrNotFound = errors.New("views: no such job")

// Get returns a job's read model.
func (j *Jobs) Get(id string) (*Job, error) {
	rec, err := j.record(id)
	if err != nil {
		return nil, err
	}
	return j.readModel(id, rec)
}

// Version returns a job's version (0 if it does not exist).
func (j *Jobs) Version(id string) (uint64, error) {
	rec, err := j.record(id)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return rec.Version, nil
}

func (j *Jobs) record(id string) (*codecs.JobRecord, error) {
	if strings.HasPrefix(id, topology.ShardKeyPrefix) {
		return nil, ErrNotFound
	}
	v, err := j.view.Get(id)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	b, _ := v.([]byte)
	if len(b) == 0 {
		return nil, ErrNotFound
	}
	rec, err := codecs.DecodeJobRecord(b)
	if err == nil && rec.Status == codecs.StatusDeleted {
		return nil, ErrNotFound // a deleted job's tombstone
	}
	return rec, err
}

func (j *Jobs) readModel(id string, rec *codecs.JobRecord) (*Job, error) {
	out := &Job{ID: id, Version: rec.Version, Status: rec.Status.String(), Job: rec.Job.Def(),
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, NextFires: []time.Time{}, Backfill: rec.Backfill.Status(),
		LimitEnd: rec.LimitEnd}
	if rec.Status == codecs.StatusPaused && rec.Pause != (codecs.PauseNote{}) {
		out.Pause = &Pause{Note: rec.Pause.Note, By: rec.Pause.By, At: rec.UpdatedAt}
	}
	sched, err := j.schedules.Get(rec.Job.Spec)
	if err != nil {
		return out, nil
	}
	w, err := j.watermark(topology.Partition(id, j.partitions))
	if err != nil {
		return nil, err
	}
	// Handled through: a job that still owes fires behind the watermark
	// (a late put) shows them as next fires, not as its last fire.
	h := rec.HandledThrough(w)
	if rec.Status == codecs.StatusCompleted && w.Before(h) {
		h = w
	}
	if n, ok := rec.RemainingFires(id, sched, h); ok {
		out.RemainingFires = &n
	}
	// h is a due time; a jittered job's fires show their scheduled times.
	sched = codecs.JobSchedule(id, rec, sched)
	if last := schedule.Last(sched, rec.CreatedAt, h); !last.IsZero() {
		last = codecs.Scheduled(sched, last)
		out.LastFire = &LastFire{ScheduledAt: last, FireID: codecs.ScheduledFireID(id, last)}
	}
	if rec.Status == codecs.StatusActive {
		// Its next fire is its due time, by the scheduler index's rule
		// (codecs.JobRecord.Due); a jittered one shows its scheduled times.
		var scheduled func(time.Time) time.Time
		if d, ok := sched.(*codecs.DueSchedule); ok {
			scheduled = d.Scheduled
		}
		cal := schedule.WithCalendars(sched, rec.Job.Spec.Exclude, j.Calendars, scheduled)
		first := rec.Due(w, sched)
		if !first.IsZero() && cal != sched {
			// Named calendars as they are now: the scheduler decides at
			// each time, so a later change may still move these.
			first = cal.Next(first.Add(-time.Nanosecond))
		}
		if !first.IsZero() {
			out.NextFires = append(append(out.NextFires, first), schedule.NextN(cal, first, 4)...)
		}
		for i, t := range out.NextFires {
			out.NextFires[i] = codecs.Scheduled(sched, t)
		}
	}
	return out, nil
}

func (j *Jobs) watermark(p int32) (time.Time, error) {
	v, err := j.view.Get(j.shardKeys[p])
	if err != nil {
		return time.Time{}, fmt.Errorf("views: %w", err)
	}
	b, _ := v.([]byte)
	rec, err := codecs.DecodeShardHead(b) // the watermark only, not the bulk state
	return rec.Watermark, err
}

// Summary is one row of a job listing.
type Summary struct {
	ID      string `json:"id"`
	Version uint64 `json:"version"`
	Status  string `json:"status"`
	Bucket  string `json:"bucket,omitempty"`
}

// maxListScan bounds the keys one List call reads: deleted jobs' tombstones
// (kept codecs.DeletedRetention) are skipped, and millions of them between
// two live jobs would otherwise make one small page read them all. A call
// that reaches it answers the jobs it found, even none, with a cursor.
const maxListScan = 10_000

// List returns up to limit jobs, all or one bucket's, in a stable order
// (partition, then id), after the opaque cursor; the returned cursor is ""
// at the end. It is ListWhere with only a bucket.
func (j *Jobs) List(bucket, cursor string, limit int) ([]Summary, string, error) {
	return j.ListWhere(Filter{Bucket: bucket}, cursor, limit)
}

// Filter selects the jobs ListWhere returns; each empty field selects all.
type Filter struct {
	// Bucket keeps the jobs of one bucket (read from the bucket index).
	Bucket string
	// Prefix keeps the jobs whose id starts with it; without Bucket the
	// scan of each partition starts at Prefix and ends after its last id.
	Prefix string
	// Status keeps the jobs in one state ("active", "paused",
	// "completed"); the others are read and count against the scan budget.
	Status string
}

// ListWhere returns up to limit jobs that f selects, in a stable order
// (partition, then id), after the opaque cursor; the returned cursor is ""
// at the end. One call reads at most maxListScan keys (plus one per
// partition to find its end), so a page may be short, even empty, with a
// cursor when few jobs match. Safe for concurrent use.
func (j *Jobs) ListWhere(f Filter, cursor string, limit int) ([]Summary, string, error) {
	p, after, err := decodeCursor(cursor, j.partitions)
	if err != nil {
		return nil, "", err
	}
	out := []Summary{}
	scanned := 0
	for ; p < j.partitions; p, after = p+1, "" {
		st := j.stores.Get(p)
		if st == nil {
			return nil, "", fmt.Errorf("views: partition %d is not open", p)
		}
		// Keep reading this partition until the page is full, the scan
		// budget is spent or the partition (or its ids with f.Prefix) ends:
		// keys that are not jobs a reader sees (deleted jobs' tombstones,
		// other states) do not end it early.
	partition:
		for {
			want := min(limit-len(out), maxListScan-scanned) + 1
			keys, sums, err := j.keys(st, f, after, want)
			if err != nil {
				return nil, "", err
			}
			for i, k := range keys {
				if len(out) == limit || scanned == maxListScan {
					return out, encodeCursor(p, after), nil
				}
				if f.Prefix != "" && !strings.HasPrefix(k, f.Prefix) && k > f.Prefix {
					break partition // ids are sorted: none after k has the prefix
				}
				scanned++
				after = k
				if !strings.HasPrefix(k, f.Prefix) {
					continue
				}
				var s Summary
				var ok bool
				if sums != nil {
					s, ok = sums[i].Summary, sums[i].ok
				} else {
					s, ok = j.summary(st, k, nil)
				}
				if ok && (f.Status == "" || s.Status == f.Status) {
					out = append(out, s)
				}
			}
			if len(keys) < want {
				break // the partition ends
			}
		}
	}
	return out, "", nil
}

// keys returns up to limit keys of a partition after after: those of
// f.Bucket's index (sums nil: the caller looks each up), or of the table
// starting at f.Prefix with each one's summary, decoded by the same scan
// as it reads the record (no point lookup per job, and no record kept:
// adversary 18e measured a page of 1000 jobs with 64 KiB payloads holding
// 70 MiB when the records were copied out first).
func (j *Jobs) keys(st *store.Store, f Filter, after string, limit int) (keys []string, sums []listed, err error) {
	if f.Bucket != "" {
		keys, err := st.BucketKeys(f.Bucket, after, limit)
		return keys, nil, err
	}
	it, err := st.Iterator()
	if err != nil {
		return nil, nil, err
	}
	defer it.Release()
	ok := it.Next()
	switch {
	case f.Prefix > after:
		ok = it.Seek([]byte(f.Prefix)) // the prefix itself may be an id
		after = ""
	case after != "":
		ok = it.Seek([]byte(after))
	}
	sums = []listed{}
	for ; ok && len(keys) < limit; ok = it.Next() {
		k := string(it.Key())
		if (after != "" && k == after) || strings.HasPrefix(k, topology.ShardKeyPrefix) {
			continue
		}
		v, err := it.Value()
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		s, found := summarize(k, v)
		sums = append(sums, listed{s, found})
	}
	return keys, sums, it.Err()
}

// listed is a summary read by a scan; ok false: not a job a reader sees.
type listed struct {
	Summary
	ok bool
}

// summary decodes a job's row; v is its value when the caller read it,
// nil to look it up.
func (j *Jobs) summary(st *store.Store, id string, v []byte) (Summary, bool) {
	if v == nil {
		var err error
		if v, err = st.Get(id); err != nil {
			return Summary{}, false
		}
	}
	return summarize(id, v)
}

// summarize decodes a job's row from its record v; the summary holds
// nothing of v.
func summarize(id string, v []byte) (Summary, bool) {
	if len(v) == 0 {
		return Summary{}, false
	}
	rec, err := codecs.DecodeJobRecord(v)
	if err != nil || rec.Status == codecs.StatusDeleted {
		return Summary{}, false
	}
	return Summary{ID: id, Version: rec.Version, Status: rec.Status.String(), Bucket: rec.Job.Bucket}, true
}

func encodeCursor(p int32, after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(int(p)) + "/" + after))
}

func decodeCursor(c string, partitions int32) (int32, string, error) {
	if c == "" {
		return 0, "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	ps, after, ok := strings.Cut(string(b), "/")
	p, err := strconv.ParseInt(ps, 10, 32) // 2^32 must not wrap to 0
	if !ok || err != nil || p < 0 || p >= int64(partitions) {
		return 0, "", ErrBadCursor
	}
	return int32(p), after, nil
}

// ErrBadCursor is returned by List for a cursor it did not issue.
var ErrBadCursor = errors.New("views: invalid cursor")
