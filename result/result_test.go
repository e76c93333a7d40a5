package result

import "testing"

// TestKilledBy: the limit an error text names, and none for the rest.
func TestKilledBy(t *testing.T) {
	cases := []struct{ in, want string }{
		{"killed: memory limit", "memory limit"},
		{KilledPrefix + "wall-clock limit", "wall-clock limit"},
		{"exit code 3: boom", ""},
		{"", ""},
		{"killed:", ""},
	}
	for _, c := range cases {
		if got := KilledBy(c.in); got != c.want {
			t.Errorf("KilledBy(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
