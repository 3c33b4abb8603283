package main

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memLimitShare is the part of the cgroup's memory limit given to Go as its
// soft limit when GOMEMLIMIT is not set: the 10% under the limit that
// docs/configuration.md ("Sizing a pod") asks for.
const memLimitShare = 0.9

// autoMemoryLimit sets Go's soft memory limit (runtime/debug.SetMemoryLimit)
// to memLimitShare of the memory limit of the cgroup this process runs in,
// unless GOMEMLIMIT is set (to anything: "off" keeps Go's default). It
// returns the limit it set and the cgroup's, or 0s when it set none (no
// GOMEMLIMIT to replace, no limit found).
//
// Why: Pebble allocates its memtables and block caches from Go's heap in a
// binary built without cgo, as the shipped image is, and Go's collector then
// lets the heap grow to twice what is live before it collects (GOGC=100). A
// `chronos run` holding 1,000,000 jobs peaked at 1,465 MiB that way against
// 917 MiB with GOMEMLIMIT=900MiB (docs/performance.md). A pod with a memory
// limit but no GOMEMLIMIT would be killed long before its live memory
// reached the limit.
func autoMemoryLimit(root string) (set, cgroup int64) {
	// Empty is not set: Go reads an empty GOMEMLIMIT as no limit, and a pod
	// given `GOMEMLIMIT: ""` would otherwise run without one (adversary
	// round 64).
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, 0
	}
	cgroup, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0, 0
	}
	set = int64(float64(cgroup) * memLimitShare)
	debug.SetMemoryLimit(set)
	return set, cgroup
}

// cgroupMemoryLimit returns the smallest memory limit of this process's
// cgroup and its ancestors, read under root ("/" on a running system) from
// proc/self/cgroup and the cgroup file system: memory.max (cgroup v2) or
// memory/memory.limit_in_bytes (v1). false: no limit ("max", or v1's
// near-2^63 "unlimited"), or no cgroup file system.
func cgroupMemoryLimit(root string) (int64, bool) {
	f, err := os.Open(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var dirs []string // cgroup directories to read, with their file's name
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			dirs = append(dirs, ancestors(filepath.Join(root, "sys/fs/cgroup"), parts[2], "memory.max")...)
		case hasController(parts[1], "memory"):
			dirs = append(dirs, ancestors(filepath.Join(root, "sys/fs/cgroup/memory"), parts[2], "memory.limit_in_bytes")...)
		}
	}
	best, found := int64(0), false
	for _, file := range dirs {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<62 { // "max", or v1's unlimited
			continue
		}
		if !found || v < best {
			best, found = v, true
		}
	}
	return best, found
}

// ancestors returns the file name in the cgroup directory p under mount
// and in each of its ancestors up to the mount itself. In a container with
// its own cgroup namespace p is "/" (the mount is its cgroup); in one
// without, the host's path is not under the container's mount, and only
// the mount's own file is found.
func ancestors(mount, p, name string) []string {
	var out []string
	for p = path.Clean("/" + p); ; p = path.Dir(p) {
		out = append(out, filepath.Join(mount, p, name))
		if p == "/" {
			return out
		}
	}
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}
