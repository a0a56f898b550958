package store

// readState is the read path's state that lives as long as its Store: the
// cache of metric names and tag keys.
type readState struct {
	names *nameCache
}

func (s *Store) readState() *readState { return &s.read }
