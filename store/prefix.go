package store

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// PrefixKeys returns up to limit table keys starting with prefix, in key
// order, strictly after after ("" = from the start). limit <= 0 means no
// limit. Shard records are table keys too; the caller tells them apart by
// value. Safe for concurrent use.
func (s *Store) PrefixKeys(prefix, after string, limit int) ([]string, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	p := tableKey(prefix)
	lower := p
	if a := append(tableKey(after), 0); after != "" && bytes.Compare(a, lower) > 0 {
		lower = a
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	var out []string
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		out = append(out, string(it.Key()[1:]))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("store: scanning table keys: %w", err)
	}
	s.flood.addOther(1 + len(out))
	return out, nil
}
