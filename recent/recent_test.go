package recent

import "testing"

// TestMapKeepsTheRecentHalf: past max Puts the map holds at most max
// entries, every one of the last max/2 keys put, and forgets the oldest.
func TestMapKeepsTheRecentHalf(t *testing.T) {
	const max = 100
	m := NewMap[int, int](max)
	for i := range 10 * max {
		m.Put(i, i*i)
		if m.Len() > max {
			t.Fatalf("after %d puts: %d entries, want ≤ %d", i+1, m.Len(), max)
		}
	}
	for i := 10*max - max/2; i < 10*max; i++ {
		if v, ok := m.Get(i); !ok || v != i*i {
			t.Fatalf("key %d: %d %v, want %d true (one of the last max/2)", i, v, ok, i*i)
		}
	}
	if _, ok := m.Get(0); ok {
		t.Fatal("key 0 still held after 10·max later puts")
	}
}

// TestMapPutOfAHeldKeyDoesNotRotate: updating a key of the current
// generation never starts a new one, so it cannot push the others out.
func TestMapPutOfAHeldKeyDoesNotRotate(t *testing.T) {
	m := NewMap[string, int](4)
	m.Put("a", 1)
	m.Put("b", 2) // current generation full (2)
	for i := range 10 {
		m.Put("b", i)
	}
	if v, ok := m.Get("a"); !ok || v != 1 {
		t.Fatalf("a: %d %v after updates of b, want 1 true", v, ok)
	}
	m.Put("c", 3) // rotates: a and b now old, still found
	if _, ok := m.Get("a"); !ok {
		t.Fatal("a lost one generation early")
	}
	m.Delete("a")
	if _, ok := m.Get("a"); ok {
		t.Fatal("a still held after Delete")
	}
}

// TestSet: a Set remembers what was added until two generations later.
func TestSet(t *testing.T) {
	s := NewSet[[2]byte](4)
	s.Add([2]byte{1})
	if !s.Has([2]byte{1}) || s.Has([2]byte{2}) {
		t.Fatal("Has wrong after one Add")
	}
	for i := range 4 {
		s.Add([2]byte{2, byte(i)})
	}
	if s.Has([2]byte{1}) || s.Len() > 4 {
		t.Fatalf("first key kept after 4 later adds to a set of 4, or %d > 4 keys", s.Len())
	}
	s.Delete([2]byte{2, 3})
	if s.Has([2]byte{2, 3}) {
		t.Fatal("deleted key still held")
	}
}
