package schedule

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"io"
	"slices"
	"sync"
	"time"
)

// zoneinfoZip is the IANA time-zone database this binary carries: a copy of
// Go's $GOROOT/lib/time/zoneinfo.zip. Every zone name is resolved from it
// and only from it, never from the host's /usr/share/zoneinfo or ZONEINFO,
// so every instance (and the HTTP API, and the CLI) agrees on which names
// exist and on their rules, whatever the hosts have installed. Names that
// only some hosts have (posixrules, localtime, right/..., posix/...) are
// unknown. Refresh it with a Go upgrade:
//
//go:generate sh -c "cp \"$(go env GOROOT)/lib/time/zoneinfo.zip\" zoneinfo.zip"
//go:embed zoneinfo.zip
var zoneinfoZip []byte

var zoneDB = sync.OnceValues(func() (map[string]*zip.File, error) {
	zr, err := zip.NewReader(bytes.NewReader(zoneinfoZip), int64(len(zoneinfoZip)))
	if err != nil {
		return nil, err
	}
	m := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			m[f.Name] = f
		}
	}
	return m, nil
})

// Zones returns the names of every zone the carried database has, sorted.
// "UTC" is one of them; "" (UTC) and "Local" are not.
func Zones() []string {
	db, err := zoneDB()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(db))
	for n := range db {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// loadZone loads a zone from the carried database; ok is false for a name
// it does not have.
func loadZone(name string) (loc *time.Location, ok bool) {
	db, err := zoneDB()
	if err != nil {
		return nil, false
	}
	f, found := db[name]
	if !found {
		return nil, false
	}
	rc, err := f.Open()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return nil, false
	}
	loc, err = time.LoadLocationFromTZData(name, data)
	return loc, err == nil
}

// Location returns the zone a Spec's TZ names, from the carried database
// ("" and "UTC": UTC; "Local" and unknown names: an *Error for field "tz").
// For showing times in a job's zone exactly as the scheduler computes them.
func Location(name string) (*time.Location, error) { return loadLocation(name) }
