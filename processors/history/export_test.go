package history

import "github.com/chronos-scheduler/chronos/codecs"

// Oracle is the kept fires of a job by definition (see oracle), for the
// broker tests of package history_test.
func Oracle(ds []codecs.Dispatch, rs []codecs.Result, keep int) []codecs.FireEntry {
	var ins []input
	for i := range ds {
		d := ds[i]
		ins = append(ins, input{suffix: d.FireID[len(d.JobID)+1:], d: &d})
	}
	for i := range rs {
		r := rs[i]
		ins = append(ins, input{suffix: r.Suffix, r: &r})
	}
	return oracle(ins, keep)
}
