package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"weak"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// Adversary round 65: the one-pass growth of the key filter (2985fce).
// Single-goroutine tests: cost, size and estimate attacks.

// adv65Fresh opens a fresh store (no Indexer, the history group's shape,
// unless indexed), writes n keys in its recovery, and marks it recovered:
// the filter is built at 1.25x n in one pass.
func adv65Fresh(t *testing.T, n int, indexed bool, least int) *Store {
	t.Helper()
	opts := Options{FS: vfs.NewMem(), Logger: quiet, KeyFilter: true}
	if indexed {
		opts.Indexer = testIndexer
		opts.DeferIndexOnRecovery = true
	}
	s := New("/db", opts)
	s.filterMin = least
	require.NoError(t, s.Open())
	t.Cleanup(func() { _ = s.Close() })
	for i := range n {
		require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
	}
	require.NoError(t, s.MarkRecovered())
	require.NotNil(t, s.filter.Load())
	return s
}

// adv65NextAbsent returns the first key from keyN(*next) on that the
// filter says the table lacks (its Set overflows a full filter), and moves
// *next past it.
func adv65NextAbsent(s *Store, next *int) string {
	for {
		k := keyN(*next)
		*next++
		if s.filterAbsent(k) {
			return k
		}
	}
}

// adv65Pass counts the passes over the table the filter builds make: one
// per filter allocated (a build pass) and one per counting pass.
type adv65Pass struct{ allocs, counts int }

func (p *adv65Pass) hook(s *Store) {
	s.onFilterAlloc = func(*keyFilter) { p.allocs++ }
	s.onFilterCount = func() { p.counts++ }
}

func (p *adv65Pass) passes() int { return p.allocs + p.counts }

// TestAdversary65SteadyChurnPassesPerGrowth: promise 3. The scheduler's
// normal life: a table of a steady size whose one-shot jobs are
// registered and purged (each new key's Set, then the Delete of the
// oldest). The filter fills with the new keys (f.keys counts the purged
// ones) and grows; the estimate it passes, f.keys = limit+1, is always
// more than twice the count (limit was 2x the count at the last
// rebuild), so every growth after the second reads the table three
// times: a pass sized by the estimate, a counting pass, a pass sized by
// the count. Before 2985fce a growth read it twice (count, build); the
// commit promises once. FAILS on 2985fce.
func TestAdversary65SteadyChurnPassesPerGrowth(t *testing.T) {
	const live = 2000
	s := adv65Fresh(t, live, false, 8)
	var p adv65Pass
	p.hook(s)
	growths, deleteRebuilds := 0, 0
	last := s.filter.Load()
	oldest, next := 0, live
	for range 30_000 {
		require.NoError(t, s.Set(keyN(next), []byte("v")))
		next++
		if f := s.filter.Load(); f != last {
			growths++
			last = f
		}
		require.NoError(t, s.Delete(keyN(oldest)))
		oldest++
		if f := s.filter.Load(); f != last {
			deleteRebuilds++
			last = f
		}
	}
	f := s.filter.Load()
	require.NotNil(t, f)
	for i := oldest; i < next; i++ {
		require.True(t, f.mayContain(filterHash(keyN(i))), "%s is in the table, the filter says absent", keyN(i))
	}
	t.Logf("table %d keys; %d growth rebuilds, %d rebuilds by deletions; %d filters allocated, %d counting passes: %.2f passes over the table per rebuild",
		live, growths, deleteRebuilds, p.allocs, p.counts, float64(p.passes())/float64(growths+deleteRebuilds))
	require.Positive(t, growths)
	require.LessOrEqual(t, p.passes(), 2*(growths+deleteRebuilds),
		"steady one-shot churn: %d rebuilds read the table %d times (count %d, build %d): more than the two passes a rebuild by count took before 2985fce, and the commit promises one",
		growths+deleteRebuilds, p.passes(), p.counts, p.allocs)
}

// TestAdversary65GrowthRebuildFourTimesTable: promise 2 against the
// documented size (Options.KeyFilter and docs/configuration.md: "1.25x
// (after MarkRecovered) to 2x (after a rebuild) the table's keys", ~1.6-2.5
// bytes a job). A growth rebuild sized by the estimate keeps an estimate
// up to twice the count, so its filter has room for up to 4x the table's
// keys. Reached by ordinary writes: a table of 4000 jobs, 2500 of them
// purged, then new registrations until the filter fills. The brief's
// bound (4x the table's need, 1.25 a key: 5x the keys) holds; the
// documented 2x does not. FAILS on 2985fce (at the documented bound).
func TestAdversary65GrowthRebuildFourTimesTable(t *testing.T) {
	const n = 4000
	s := adv65Fresh(t, n, true, 8)
	f := s.filter.Load()
	// New keys the filter needs to fill: one per key that sets a bit; the
	// table at the growth is then n - purged + added.
	need := f.limit - f.keys + 1
	purged := n + need - (f.limit+1+1)/2 // the table at the growth: about (limit+1)/2
	for i := range purged {
		require.NoError(t, s.Delete(keyN(i)))
	}
	require.Same(t, f, s.filter.Load(), "no rebuild by deletions yet (%d deletes, limit %d)", purged, f.limit)
	live := n - purged
	next := n
	for s.filter.Load() == f {
		require.NoError(t, s.Set(keyN(next), val(at(next%100), "b")))
		next++
		live++
	}
	g := s.filter.Load()
	require.NotNil(t, g)
	table := len(tableState(t, s))
	require.Equal(t, live, table)
	for i := purged; i < next; i++ {
		require.True(t, g.mayContain(filterHash(keyN(i))), keyN(i))
	}
	ratio := float64(g.limit) / float64(table)
	t.Logf("old filter limit %d (keys %d at the build), table at the growth %d: new filter limit %d = %.2fx the table's keys, %d bits (%.1f bits a key, %.2f bytes a job)",
		f.limit, n, table-1, g.limit, ratio, adv46bBits(g), float64(adv46bBits(g))/float64(table), float64(adv46bBits(g))/8/float64(table))
	// The brief's promise: at most 4x what the table needs (1.25 a key).
	require.LessOrEqual(t, g.limit, 4*max(table+table/4, s.filterMin), "more than 4x the table's need")
	// The documented one: 2x the table's keys after a rebuild (2.5 bytes a
	// job at most); a quarter more allowed for slack.
	require.LessOrEqual(t, ratio, 2.5,
		"a growth rebuild made a filter with room for %.2fx the table's %d keys (%d bits, %.2f bytes a job); documented: 2x after a rebuild, ~1.6-2.5 bytes a job",
		ratio, table, adv46bBits(g), float64(adv46bBits(g))/8/float64(table))
}

// adv65PurgedBurst: a burst of 40,000 one-shot jobs registered (the
// filter grows to twice it), purged (fewer deletions than the filter's
// room: no rebuild), then a stream of jobs each purged after its Set
// until the filter is full: the next new key overflows it. It returns the
// store, its full filter, the table's size, and the next key's number.
func adv65PurgedBurst(t *testing.T, least int) (*Store, *keyFilter, int, int) {
	t.Helper()
	s := adv65Fresh(t, 0, false, least)
	const burst = 40_000
	for i := range burst {
		require.NoError(t, s.Set(keyN(i), []byte("v")))
	}
	f := s.filter.Load()
	require.NotNil(t, f)
	// Purge all but a few, staying below the filter's room for deletions.
	live := 0
	for i := range burst {
		if f.deletes < f.limit-1 && i >= 8 {
			require.NoError(t, s.Delete(keyN(i)))
		} else {
			live++
		}
	}
	require.Same(t, f, s.filter.Load(), "no rebuild by deletions (limit %d)", f.limit)
	// The stream: each job registered, then purged (while the filter has
	// room for the deletion). Stop just before the filter overflows, so
	// that the growth is measured on its own.
	next := burst
	for f.keys < f.limit {
		require.NoError(t, s.Set(keyN(next), []byte("v")))
		if f.deletes < f.limit-1 {
			require.NoError(t, s.Delete(keyN(next)))
		} else {
			live++
		}
		next++
		require.Same(t, f, s.filter.Load())
	}
	return s, f, live, next
}

// TestAdversary65PurgedBurstGuessedAllocation: promise 2, the transient
// size. A burst of one-shot jobs registered (the filter grows to twice
// it), then fired and purged (fewer deletions than the filter's room: no
// rebuild), then a stream of one-shot jobs, each purged soon after it is
// registered: the filter fills with new keys while the table stays tiny.
// Its growth allocates a filter sized by the estimate, 2*(limit+1), twice
// the old filter's size, for a table of a few keys, before the count
// shows the estimate too large and a small one is built. No two filters
// are held at once (the old one is dropped first), but the peak of the
// rebuild is twice the largest filter the store ever had, not the table's
// need: before 2985fce the rebuild counted first and allocated the
// filter the table needs. Measured with runtime.MemStats.TotalAlloc
// between the Set and the first allocation. FAILS on 2985fce.
func TestAdversary65PurgedBurstGuessedAllocation(t *testing.T) {
	const least = 64
	s, f, live, next := adv65PurgedBurst(t, least)
	oldBytes := uint64(len(f.words) * 8)
	oldLimit := f.limit
	table := len(tableState(t, s))
	require.Equal(t, live, table)
	var before, first runtime.MemStats
	allocs, counts, held := 0, 0, 0
	s.onFilterAlloc = func(*keyFilter) {
		allocs++
		if s.filter.Load() != nil {
			held++
		}
		if allocs == 1 {
			runtime.ReadMemStats(&first)
		}
	}
	s.onFilterCount = func() { counts++ }
	// A new key the filter says absent overflows it.
	k := adv65NextAbsent(s, &next)
	f = nil // the test keeps no filter reachable
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, s.Set(k, []byte("v")))
	s.onFilterAlloc, s.onFilterCount = nil, nil
	g := s.filter.Load()
	require.NotNil(t, g)
	require.Positive(t, allocs, "the Set rebuilt the filter")
	require.Zero(t, held, "two filters held at once")
	guessed := first.TotalAlloc - before.TotalAlloc
	needBytes := uint64((max(table+table/4, least)*filterBitsPerKey+511)/512) * 64
	t.Logf("old filter %d bytes (limit %d); table %d keys, its need %d bytes; the rebuild allocated %d bytes before its first filter was made (%d filters, %d counting passes), the final filter %d bytes (limit %d)",
		oldBytes, oldLimit, table, needBytes, guessed, allocs, counts, len(g.words)*8, g.limit)
	require.True(t, g.mayContain(filterHash(k)))
	for k := range tableState(t, s) {
		require.True(t, g.mayContain(filterHash(k)), k)
	}
	require.LessOrEqual(t, guessed, 4*needBytes+oldBytes/2,
		"a growth rebuild of a %d-key table allocated %d bytes (%.1fx the old filter's %d) where the table needs %d",
		table, guessed, float64(guessed)/float64(oldBytes), oldBytes, needBytes)
}

// TestAdversary65GuessedFilterReleasedBeforeRecount: promise 2, "never
// two filters at once", in the path a wrong estimate takes: a growth
// allocates a filter by the estimate, fills it, finds the estimate off
// and allocates another by the keys its pass met. The first must be
// unreachable by then. Since round 65's fix the estimate is the keys the
// filter saw less the deletions it saw, so it is made too small here on
// purpose: one job deleted and put again over and over (each deletion
// counts, the put adds no key, its bits are set). Reachability is checked
// with a weak pointer to the first filter after a GC at the second
// allocation.
func TestAdversary65GuessedFilterReleasedBeforeRecount(t *testing.T) {
	const n, least = 4000, 64
	s := adv65Fresh(t, n, false, least)
	f := s.filter.Load()
	for range 3 * n / 5 {
		require.NoError(t, s.Delete(keyN(0)))
		require.NoError(t, s.Set(keyN(0), val(at(0), "b")))
	}
	next := n
	for f.keys < f.limit {
		require.NoError(t, s.Set(keyN(next), val(at(next%100), "b")))
		next++
	}
	require.Same(t, f, s.filter.Load(), "no rebuild yet (%d deletes, limit %d)", f.deletes, f.limit)
	k := adv65NextAbsent(s, &next)
	est, table := f.keys+1-f.deletes, len(tableState(t, s))+1
	require.Greater(t, table, est+est/8, "the estimate is short of the table")
	f = nil
	var first weak.Pointer[keyFilter]
	allocs, counts, reachable := 0, 0, false
	s.onFilterAlloc = func(g *keyFilter) {
		if allocs++; allocs == 1 {
			first = weak.Make(g)
			return
		}
		runtime.GC()
		reachable = first.Value() != nil
	}
	s.onFilterCount = func() { counts++ }
	require.NoError(t, s.Set(k, []byte("v")))
	s.onFilterAlloc, s.onFilterCount = nil, nil
	t.Logf("estimate %d, table %d: %d filters allocated, %d counting passes", est, table, allocs, counts)
	require.Equal(t, 2, allocs, "a growth by the estimate, then by the pass's count")
	require.Zero(t, counts, "the pass counted the table: no counting pass of its own")
	require.False(t, reachable, "the estimate's filter is still reachable when the next is made")
	g := s.filter.Load()
	require.NotNil(t, g)
	require.GreaterOrEqual(t, g.limit, 2*(table-1), "the filter by count has room for twice the table the pass met (k is written after it; limit %d)", g.limit)
	for k := range tableState(t, s) {
		require.True(t, g.mayContain(filterHash(k)), k)
	}
}

// TestAdversary65RepeatPutsDoNotInflateEstimate: promise 2 and 3 under
// repeats. The estimate is f.keys, which counts a key only when it sets a
// bit: rewrites of the same keys, and deletes then re-puts of them (the
// deleted key stays in the filter), add nothing, and neither grows the
// filter nor rebuilds it more than the deletions' own rebuilds. Also keys
// dropped by a rebuild, then re-put: they count again, as the table holds
// them again. HOLDS expected.
func TestAdversary65RepeatPutsDoNotInflateEstimate(t *testing.T) {
	const n = 3000
	s := adv65Fresh(t, n, true, 8)
	var p adv65Pass
	p.hook(s)
	f0 := s.filter.Load()
	rebuilds := 0
	last := f0
	note := func() {
		if f := s.filter.Load(); f != last {
			rebuilds++
			last = f
		}
	}
	r := rand.New(rand.NewPCG(65, 1))
	for round := range 30 {
		for i := range n {
			switch {
			case round%5 == 4 && i%3 == 0:
				require.NoError(t, s.Delete(keyN(i)))
				note()
				require.NoError(t, s.Set(keyN(i), val(at(r.IntN(100)), "b")))
			default:
				require.NoError(t, s.Set(keyN(i), val(at(r.IntN(100)), "b")))
			}
			note()
		}
	}
	f := s.filter.Load()
	require.NotNil(t, f)
	t.Logf("30 rounds of rewrites of %d keys (6 with deletes and re-puts of a third): %d rebuilds, %d passes; limit %d -> %d",
		n, rebuilds, p.passes(), f0.limit, f.limit)
	require.LessOrEqual(t, f.limit, 4*(n+n/4), "rewrites grew the filter")
	// 6 rounds x 1000 deletions, a rebuild by count per limit deletions.
	require.LessOrEqual(t, rebuilds, 6*(n/3)/f0.limit+2)
	require.LessOrEqual(t, p.passes(), 2*rebuilds+1)
	for i := range n {
		require.True(t, f.mayContain(filterHash(keyN(i))), keyN(i))
	}
	// Keys dropped by a rebuild, then re-put: 1000 deleted, a rebuild by
	// deletions drops them, then they come back.
	for i := range n / 3 {
		require.NoError(t, s.Delete(keyN(i)))
	}
	g := s.filter.Load()
	for i := 0; s.filter.Load() == g; i++ {
		require.NoError(t, s.Delete(fmt.Sprintf("absent-%d", i))) // a Delete of a missing key counts too
	}
	h := s.filter.Load()
	require.NotNil(t, h)
	for i := range n / 3 {
		require.NoError(t, s.Set(keyN(i), val(at(i%100), "b")))
	}
	k := s.filter.Load()
	for i := range n {
		require.True(t, k.mayContain(filterHash(keyN(i))), keyN(i))
	}
	require.LessOrEqual(t, k.limit, 4*(n+n/4))
	checkConsistent(t, s)
}

// TestAdversary65ChurnModelBoundsAndCost: promises 1, 2 and 3 over long
// seeded random histories of ordinary writes: bursts of registrations,
// purges, steady one-shot churn, rewrites, deletes of missing keys, Gets
// before Sets. At every rebuild the new filter has room for the table and
// at most 4x its need (1.25 a key, or the minimum); every key of the
// model is in the filter (checked at each rebuild and at the end; and
// Get/Has agree with the model throughout); the table keys read by all
// the rebuilds' passes stay within a small constant per write (no storm).
// HOLDS expected.
func TestAdversary65ChurnModelBoundsAndCost(t *testing.T) {
	seeds := uint64(4)
	if testing.Short() {
		seeds = 2 // ~20 s a seed under -race
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 65))
			const least = 16
			s := adv65Fresh(t, 0, seed%2 == 0, least)
			model := map[string]bool{}
			var keysRead, rebuildsSeen, maxPasses int
			var passes int
			s.onFilterAlloc = func(*keyFilter) { keysRead += len(model); passes++ }
			s.onFilterCount = func() { keysRead += len(model); passes++ }
			last := s.filter.Load()
			writes := 0
			check := func(where string) {
				f := s.filter.Load()
				if f == last {
					return
				}
				rebuildsSeen++
				maxPasses = max(maxPasses, passes)
				passes = 0
				last = f
				require.NotNil(t, f, where)
				n := len(model)
				require.GreaterOrEqual(t, f.limit, n, "%s: no room for the table", where)
				require.LessOrEqual(t, f.limit, 4*max(n+n/4, least)+2, "%s: a %d-key table got a filter of limit %d", where, n, f.limit)
				for k := range model {
					require.True(t, f.mayContain(filterHash(k)), "%s: %s absent from the rebuilt filter", where, k)
				}
			}
			next := 0
			newKey := func() string { next++; return fmt.Sprintf("j%07d", next) }
			pickLive := func() (string, bool) {
				for k := range model { // map order: random enough
					return k, true
				}
				return "", false
			}
			set := func(k string) {
				if r.IntN(2) == 0 {
					_, err := s.Get(k)
					require.NoError(t, err)
				}
				require.NoError(t, s.Set(k, val(at(r.IntN(100)), "b")))
				model[k] = true
				writes++
				check("set " + k)
			}
			del := func(k string) {
				require.NoError(t, s.Delete(k))
				delete(model, k)
				writes++
				check("delete " + k)
			}
			for phase := range 40 {
				switch r.IntN(5) {
				case 0: // a burst of registrations
					for range r.IntN(4000) {
						set(newKey())
					}
				case 1: // a purge
					for range r.IntN(len(model) + 1) {
						k, _ := pickLive()
						del(k)
					}
				case 2: // steady one-shot churn
					for range r.IntN(6000) {
						set(newKey())
						if k, ok := pickLive(); ok {
							del(k)
						}
					}
				case 3: // rewrites, deletes and re-puts
					for range r.IntN(3000) {
						if k, ok := pickLive(); ok {
							if r.IntN(4) == 0 {
								del(k)
							}
							set(k)
						}
					}
				case 4: // deletes of missing keys (a purge of jobs already gone)
					for i := range r.IntN(3000) {
						del(fmt.Sprintf("gone-%d-%d", phase, i))
					}
				}
				for range 20 {
					k := fmt.Sprintf("j%07d", 1+r.IntN(next+1))
					v, err := s.Get(k)
					require.NoError(t, err)
					require.Equal(t, model[k], v != nil, "phase %d: Get(%s)", phase, k)
					has, err := s.Has(k)
					require.NoError(t, err)
					require.Equal(t, model[k], has, "phase %d: Has(%s)", phase, k)
				}
			}
			f := s.filter.Load()
			require.NotNil(t, f)
			for k := range model {
				require.True(t, f.mayContain(filterHash(k)), k)
			}
			require.Equal(t, len(model), len(tableState(t, s)))
			t.Logf("seed %d: %d writes, %d rebuilds (at most %d passes in one), %d table keys read by them (%.2f a write); table %d, limit %d",
				seed, writes, rebuildsSeen, maxPasses, keysRead, float64(keysRead)/float64(max(writes, 1)), len(model), f.limit)
			require.LessOrEqual(t, maxPasses, 3, "a rebuild read the table more than three times")
			require.LessOrEqual(t, keysRead, 4*writes+4*least, "rebuilds read %d table keys for %d writes", keysRead, writes)
		})
	}
}
