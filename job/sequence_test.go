package job

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// TestSpecV6RoundTrip: a sequence takes the 19-element layout and decodes
// to the same spec; a version 5 spec keeps its 18-element bytes; a
// version 5 spec with steps is refused.
func TestSpecV6RoundTrip(t *testing.T) {
	key := testKey(6)
	s := testSpecV4()
	s.Commit, s.Version = 2, specVersion5
	if b := mustSign(t, s, key).Spec; b[0] != specV5Header {
		t.Fatalf("version 5 spec starts with %#x", b[0])
	}
	s.Steps = 20
	if err := s.Validate(); err == nil {
		t.Fatal("a version 5 spec with steps validated")
	}
	s.Version = s.LeastVersion()
	if s.Version != specVersion6 {
		t.Fatalf("LeastVersion with steps = %d", s.Version)
	}
	signed := mustSign(t, s, key)
	if signed.Spec[0] != specV6Header {
		t.Fatalf("spec starts with %#x, want %#x", signed.Spec[0], specV6Header)
	}
	_, got, err := Decode(signed.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != 20 || got.Commit != 2 || !got.IsSequence() {
		t.Fatalf("decoded steps %d commit %d", got.Steps, got.Commit)
	}
	s.Steps = MaxSteps + 1
	if err := s.Validate(); err == nil {
		t.Fatal("steps above MaxSteps validated")
	}
	if v := testSpecV3().LeastVersion(); v != specVersion3 {
		t.Fatalf("control: LeastVersion of a plain spec = %d", v)
	}
}

// TestLapseRenewed: a checkpoint of the live claim moves its deadline to
// renewal + T_finish on the node's clock; of another claim, or of a
// released one, it changes nothing.
func TestLapseRenewed(t *testing.T) {
	const tf, skew = 1000, 100
	client := []byte("c")
	claim := State{Phase: Claimed, Client: client, Start: 10_000, Deadline: 11_000}
	released := State{Phase: Claimed, Client: client, Start: 10_000, Deadline: 10_500}
	mine := Renewal{Client: client, Start: 10_000, At: 15_000}
	for _, c := range []struct {
		name  string
		s     State
		now   int64
		r     Renewal
		phase Phase
	}{
		{"no renewal, before deadline+skew", claim, 11_099, Renewal{}, Claimed},
		{"no renewal, at deadline+skew", claim, 11_100, Renewal{}, Ready},
		{"renewed, long after the first deadline", claim, 16_099, mine, Claimed},
		{"renewed, at renewal+tf+skew", claim, 16_100, mine, Ready},
		{"renewal earlier than the deadline", claim, 11_100, Renewal{Client: client, Start: 10_000, At: 9_000}, Ready},
		{"renewal of another claim", claim, 11_100, Renewal{Client: client, Start: 9_000, At: 15_000}, Ready},
		{"renewal of another client", claim, 11_100, Renewal{Client: []byte("d"), Start: 10_000, At: 15_000}, Ready},
		{"released claim", released, 10_600, mine, Ready},
		{"finished", State{Phase: Finished, Client: client, At: 5, Result: []byte{1}}, 99_999, mine, Finished},
	} {
		if got := LapseRenewed(c.s, c.now, tf, skew, c.r).Phase; got != c.phase {
			t.Errorf("%s: %s, want %s", c.name, got, c.phase)
		}
	}
	tomb := State{Phase: Ready, Client: client, Start: 10_000}
	if got := ReceiveRenewed(claim, tomb, 12_000, tf, skew, mine); !Equal(got, claim) {
		t.Errorf("a tombstone of a renewed live claim merged: %+v", got)
	}
	if got := ReceiveRenewed(claim, tomb, 12_000, tf, skew, Renewal{}); !Equal(got, tomb) {
		t.Errorf("control: a tombstone of a lapsed claim kept out: %+v", got)
	}
}

func testCheckpoint(t testing.TB, step uint16, data string) (*Checkpoint, ed25519.PrivateKey) {
	t.Helper()
	key := testKey(7)
	c, err := SignCheckpoint(Checkpoint{Job: []byte("job"), Cert: []byte{1}, Start: 1000, Step: step, Data: []byte(data)}, key)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// TestCheckpoint: a signed checkpoint decodes and verifies; any change of
// a signed field breaks the signature; bounds are refused; the newest is
// the one with more steps, whatever the order.
func TestCheckpoint(t *testing.T) {
	c, _ := testCheckpoint(t, 3, "state")
	got, err := DecodeCheckpoint(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Verify(); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*Checkpoint){
		"step":  func(c *Checkpoint) { c.Step++ },
		"data":  func(c *Checkpoint) { c.Data = []byte("forged") },
		"start": func(c *Checkpoint) { c.Start++ },
		"job":   func(c *Checkpoint) { c.Job = []byte("other") },
	} {
		x := *got
		f(&x)
		if x.Verify() == nil {
			t.Errorf("checkpoint with %s changed verified", name)
		}
	}
	for name, f := range map[string]func(*Checkpoint){
		"step 0":     func(c *Checkpoint) { c.Step = 0 },
		"big state":  func(c *Checkpoint) { c.Data = make([]byte, MaxCheckpointData+1) },
		"no cert":    func(c *Checkpoint) { c.Cert = nil },
		"big tickle": func(c *Checkpoint) { c.Trickle = make([]byte, MaxTrickleBytes+1) },
	} {
		x := *got
		f(&x)
		if _, err := DecodeCheckpoint(x.Encode()); err == nil {
			t.Errorf("checkpoint with %s decoded", name)
		}
	}
	unsigned := *got
	unsigned.Sig = nil
	if _, err := DecodeCheckpoint(unsigned.Encode()); err == nil {
		t.Error("unsigned checkpoint decoded")
	}
	older, _ := testCheckpoint(t, 2, "zzz")
	if !NewerCheckpoint(c, older) || NewerCheckpoint(older, c) || !NewerCheckpoint(c, nil) {
		t.Error("NewerCheckpoint does not prefer more steps")
	}
	same, _ := testCheckpoint(t, 3, "other")
	if NewerCheckpoint(c, same) == NewerCheckpoint(same, c) {
		t.Error("NewerCheckpoint is not a total order on one step")
	}
	if !bytes.Equal(got.Encode(), c.Encode()) {
		t.Error("re-encoding differs")
	}
}

// FuzzDecodeCheckpoint: never a panic; what decodes re-encodes to its
// bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	c, _ := testCheckpoint(f, 1, "x")
	f.Add(c.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b)
		if err != nil {
			return
		}
		if !bytes.Equal(c.Encode(), b) {
			t.Fatal("decoded checkpoint re-encodes differently")
		}
	})
}
