package store

import (
	"path/filepath"
	"strconv"
	"sync"

	"github.com/lovoo/goka/storage"
)

// Registry keeps the open store of each partition of one table, so code
// outside goka's callbacks (the fan-out, the read API) can reach the store
// goka opened. Safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	stores map[int32]*Store
}

// Builder returns a goka storage builder that opens one Store per partition
// under root/topic/partition, with the options opts(partition) returns, and
// registers it while it is open.
func (r *Registry) Builder(root string, opts func(partition int32) Options) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		st := New(filepath.Join(root, topic, strconv.Itoa(int(partition))), opts(partition))
		return &registered{Store: st, r: r, p: partition}, nil
	}
}

// Get returns the open store of partition p, or nil.
func (r *Registry) Get(p int32) *Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stores[p]
}

// Len returns how many stores are open.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.stores)
}

// registered registers its store while it is open.
type registered struct {
	*Store
	r *Registry
	p int32
}

func (g *registered) Open() error {
	if err := g.Store.Open(); err != nil {
		return err
	}
	g.r.mu.Lock()
	if g.r.stores == nil {
		g.r.stores = make(map[int32]*Store)
	}
	g.r.stores[g.p] = g.Store
	g.r.mu.Unlock()
	return nil
}

func (g *registered) Close() error {
	g.r.mu.Lock()
	if g.r.stores[g.p] == g.Store {
		delete(g.r.stores, g.p)
	}
	g.r.mu.Unlock()
	return g.Store.Close()
}
