package schedule

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestZonesComeFromTheCarriedDatabase: names that exist only in some hosts'
// databases are unknown, whatever this host has; every carried name works.
func TestZonesComeFromTheCarriedDatabase(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"posixrules", "localtime", "right/UTC", "posix/Europe/Berlin", "posix/UTC", "Local",
		"europe/berlin", "Europe/Berlin/", "/Europe/Berlin", "../zoneinfo/UTC", "Europe/../UTC", "zone.tab", "tzdata.zi", "Mars/Olympus"} {
		_, err := Parse(Spec{Cron: "@daily", TZ: name})
		require.Error(t, err, "%q must be refused", name)
		var se *Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, "tz", se.Field)
	}
	// This host may have some of them: the result must not depend on it.
	if _, err := os.Stat("/usr/share/zoneinfo/posixrules"); err == nil {
		_, err := time.LoadLocation("posixrules")
		require.NoError(t, err, "the host has posixrules, yet Chronos refuses it")
	}
	zones := Zones()
	require.Greater(t, len(zones), 400)
	require.Contains(t, zones, "Europe/Berlin")
	require.Contains(t, zones, "UTC")
	for _, name := range zones {
		require.False(t, strings.HasPrefix(name, "right/") || strings.HasPrefix(name, "posix/") || name == "posixrules" || name == "localtime", name)
		loc, err := Location(name)
		require.NoError(t, err, name)
		require.Equal(t, name, loc.String())
		_, err = Parse(Spec{Cron: "0 9 * * *", TZ: name})
		require.NoError(t, err, name)
	}
	// The carried rules are used: Berlin is UTC+1 in January, UTC+2 in July.
	berlin, err := Location("Europe/Berlin")
	require.NoError(t, err)
	_, off := time.Date(2026, 1, 15, 12, 0, 0, 0, berlin).Zone()
	require.Equal(t, 3600, off)
	_, off = time.Date(2026, 7, 15, 12, 0, 0, 0, berlin).Zone()
	require.Equal(t, 7200, off)
	for _, name := range []string{"", "UTC"} {
		loc, err := Location(name)
		require.NoError(t, err)
		require.Equal(t, time.UTC, loc)
	}
}
