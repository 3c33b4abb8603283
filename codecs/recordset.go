package codecs

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/chronos-scheduler/chronos/schedule"
)

// hasScheduleSet reports whether s has further schedules or exclusions,
// which a job record keeps in an extension (format 6).
func hasScheduleSet(s schedule.Spec) bool { return len(s.Also) > 0 || !s.Exclude.IsZero() }

// appendScheduleSet writes the extension of s's further schedules (each:
// cron, every, at, tz, DST gap and overlap) and exclusions (zone, dates,
// ranges).
func appendScheduleSet(w []byte, s schedule.Spec) []byte {
	e := binary.AppendUvarint(nil, uint64(len(s.Also)))
	for _, m := range s.Also {
		e = appendBytes(e, []byte(m.Cron))
		e = binary.AppendVarint(e, int64(m.Every))
		e = appendTime(e, m.At)
		e = appendBytes(e, []byte(m.TZ))
		e = appendBytes(e, []byte(m.DST.Gap))
		e = appendBytes(e, []byte(m.DST.Overlap))
	}
	x := s.Exclude
	e = appendBytes(e, []byte(x.TZ))
	e = binary.AppendUvarint(e, uint64(len(x.Dates)))
	for _, d := range x.Dates {
		e = binary.AppendVarint(e, int64(d.Year))
		e = append(e, byte(d.Month), byte(d.Day))
	}
	e = binary.AppendUvarint(e, uint64(len(x.Ranges)))
	for _, r := range x.Ranges {
		e = appendTime(appendTime(e, r.From), r.To)
	}
	if len(x.Calendars) > 0 { // absent: none (the form before calendars)
		e = binary.AppendUvarint(e, uint64(len(x.Calendars)))
		for _, c := range x.Calendars {
			e = appendBytes(e, []byte(c))
		}
	}
	w = append(w, extScheduleSet)
	return appendBytes(w, e)
}

// readScheduleSet reads the extension appendScheduleSet wrote into s.
func readScheduleSet(rd *reader, s *schedule.Spec) error {
	n := rd.uvarint()
	if n > uint64(len(rd.b)) {
		return errShort
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		m := schedule.Spec{Cron: string(rd.bytes()), Every: time.Duration(rd.varint()), At: rd.time(), TZ: string(rd.bytes())}
		m.DST = schedule.DST{Gap: string(rd.bytes()), Overlap: string(rd.bytes())}
		s.Also = append(s.Also, m)
	}
	s.Exclude.TZ = string(rd.bytes())
	if n = rd.uvarint(); n > uint64(len(rd.b)) {
		return errShort
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		s.Exclude.Dates = append(s.Exclude.Dates, schedule.Date{Year: int(rd.varint()), Month: time.Month(rd.byte()), Day: int(rd.byte())})
	}
	if n = rd.uvarint(); n > uint64(len(rd.b)) {
		return errShort
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		s.Exclude.Ranges = append(s.Exclude.Ranges, schedule.Range{From: rd.time(), To: rd.time()})
	}
	if rd.err == nil && len(rd.b) > 0 {
		if n = rd.uvarint(); n == 0 || n > uint64(len(rd.b)) {
			return errShort // never written empty
		}
		for i := uint64(0); i < n && rd.err == nil; i++ {
			s.Exclude.Calendars = append(s.Exclude.Calendars, string(rd.bytes()))
		}
	}
	if rd.err == nil && len(rd.b) != 0 {
		return errors.New("trailing bytes in the schedule set")
	}
	return rd.err
}

func boolCount(v bool) int {
	if v {
		return 1
	}
	return 0
}
