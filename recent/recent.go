// Package recent owns bounded memories of recent keys: a map and a set
// that hold at most a fixed number of entries by forgetting the older
// half at once (two generations). A cache built on them stops growing
// once it has filled, and keeps what it saw last, where a map cleared when
// full keeps its peak capacity and forgets everything at once. Neither
// type locks: the owner does.
package recent

// Map remembers values by key, at most size entries (NewMap): Put starts a new
// generation when the current one holds size/2, dropping the one before.
// An entry lives through at least size/2 later Puts of other keys.
type Map[K comparable, V any] struct {
	cur, old map[K]V
	half     int
}

// NewMap returns an empty Map of at most size entries (size ≥ 2).
func NewMap[K comparable, V any](size int) *Map[K, V] {
	half := max(1, size/2)
	return &Map[K, V]{cur: make(map[K]V), half: half}
}

// Get returns key's value, from the current generation or the one before.
func (m *Map[K, V]) Get(key K) (V, bool) {
	if v, ok := m.cur[key]; ok {
		return v, true
	}
	v, ok := m.old[key]
	return v, ok
}

// Put sets key's value in the current generation, first starting a new
// generation when the current one is full.
func (m *Map[K, V]) Put(key K, v V) {
	if _, ok := m.cur[key]; !ok && len(m.cur) >= m.half {
		m.Rotate()
	}
	m.cur[key] = v
}

// Rotate starts a new generation now, dropping the one before: for an
// owner that also ages its entries by time.
func (m *Map[K, V]) Rotate() {
	m.old, m.cur = m.cur, make(map[K]V, min(len(m.cur), m.half))
}

// Delete forgets key.
func (m *Map[K, V]) Delete(key K) {
	delete(m.cur, key)
	delete(m.old, key)
}

// Len is the entries held, a key in both generations counted twice: at
// most size.
func (m *Map[K, V]) Len() int { return len(m.cur) + len(m.old) }

// Set remembers keys, at most size (NewSet): a Map of empty values.
type Set[K comparable] struct{ m *Map[K, struct{}] }

// NewSet returns an empty Set of at most size keys (size ≥ 2).
func NewSet[K comparable](size int) Set[K] { return Set[K]{NewMap[K, struct{}](size)} }

// Has reports whether key is remembered.
func (s Set[K]) Has(key K) bool { _, ok := s.m.Get(key); return ok }

// Add remembers key.
func (s Set[K]) Add(key K) { s.m.Put(key, struct{}{}) }

// Delete forgets key.
func (s Set[K]) Delete(key K) { s.m.Delete(key) }

// Rotate starts a new generation (see Map.Rotate).
func (s Set[K]) Rotate() { s.m.Rotate() }

// Len is the keys held (see Map.Len).
func (s Set[K]) Len() int { return s.m.Len() }
