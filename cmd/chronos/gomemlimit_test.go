package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fakeRoot writes files (path relative to the root: contents) under a
// temporary root and returns it.
func fakeRoot(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupMemoryLimit(t *testing.T) {
	const gi = 1 << 30
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64 // 0: none
	}{
		{"v2 in its own namespace", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1073741824\n"}, gi},
		{"v2 unlimited", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"v2 a systemd unit: the smallest of the cgroup and its ancestors", map[string]string{
			"proc/self/cgroup":                                      "0::/system.slice/chronos.service\n",
			"sys/fs/cgroup/memory.max":                              "max\n",
			"sys/fs/cgroup/system.slice/memory.max":                 "4294967296\n",
			"sys/fs/cgroup/system.slice/chronos.service/memory.max": "536870912\n",
		}, gi / 2},
		{"v2 a parent tighter than the cgroup", map[string]string{
			"proc/self/cgroup":                       "0::/kubepods/pod1\n",
			"sys/fs/cgroup/kubepods/memory.max":      "268435456\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max": "max\n",
		}, gi / 4},
		{"v1 memory controller among others", map[string]string{
			"proc/self/cgroup":                                      "12:pids:/\n4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n1:name=systemd:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n",
		}, 2 * gi},
		{"v1 unlimited (this machine)", map[string]string{
			"proc/self/cgroup":                           "9:name=systemd:/\n3:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"v1 without a cgroup namespace: the host path is not mounted", map[string]string{
			"proc/self/cgroup":                           "3:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "805306368\n",
		}, 3 * gi / 4},
		{"no cgroup file system", map[string]string{"proc/self/cgroup": "0::/\n"}, 0},
		{"no /proc", map[string]string{}, 0},
		{"garbage", map[string]string{"proc/self/cgroup": "nonsense\n0::/\n", "sys/fs/cgroup/memory.max": "lots\n"}, 0},
	} {
		got, ok := cgroupMemoryLimit(fakeRoot(t, c.files))
		if ok != (c.want != 0) || got != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, got, ok, c.want)
		}
	}
}

// TestAutoMemoryLimit checks that the limit is set to 90% of the cgroup's
// only when GOMEMLIMIT is not set.
func TestAutoMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	root := fakeRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000000\n"})

	t.Setenv("GOMEMLIMIT", "off")
	if set, _ := autoMemoryLimit(root); set != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Fatalf("GOMEMLIMIT=off: set %d, limit now %d", set, debug.SetMemoryLimit(-1))
	}
	os.Unsetenv("GOMEMLIMIT") // t.Setenv restores it after the test
	set, cgroup := autoMemoryLimit(root)
	if cgroup != 1e9 || set != 9e8 || debug.SetMemoryLimit(-1) != 9e8 {
		t.Fatalf("set %d of %d, limit now %d; want 900000000 of 1000000000", set, cgroup, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if set, _ := autoMemoryLimit(fakeRoot(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})); set != 0 ||
		debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("no cgroup limit: set %d", set)
	}
}
