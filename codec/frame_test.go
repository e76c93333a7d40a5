package codec

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
)

// TestFrameRoundTrip writes frames whose lengths straddle the varint
// boundaries through the pooled buffers and checks each is the length
// prefix followed by exactly Marshal's bytes, and reads back equal.
func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100, 123, 124, 127, 128, 16379, 16380, 16384, 70000, 300000} {
		v := bytes.Repeat([]byte{7}, n)
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteFrame(&out, v); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if err := WriteRawFrame(&out, want); err != nil {
			t.Fatalf("%d bytes raw: %v", n, err)
		}
		var hdr [binary.MaxVarintLen64]byte
		frame := append(hdr[:binary.PutUvarint(hdr[:], uint64(len(want)))], want...)
		if !bytes.Equal(out.Bytes(), append(append([]byte(nil), frame...), frame...)) {
			t.Fatalf("%d bytes: frames are not the length and Marshal's bytes", n)
		}
		r := bufio.NewReader(&out)
		for range 2 {
			var got []byte
			if err := ReadFrame(r, MaxFrame, &got); err != nil {
				t.Fatalf("%d bytes: read: %v", n, err)
			}
			if !bytes.Equal(got, v) {
				t.Fatalf("%d bytes: read back differs", n)
			}
		}
	}
}

// TestFrameTooLarge refuses to write a frame over MaxFrame.
func TestFrameTooLarge(t *testing.T) {
	var out bytes.Buffer
	err := WriteRawFrame(&out, make([]byte, MaxFrame+1))
	if !errors.Is(err, ErrFrameTooLarge) || out.Len() != 0 {
		t.Fatalf("err %v, %d bytes written; want ErrFrameTooLarge and nothing", err, out.Len())
	}
}

// TestFrameConcurrent writes from many goroutines at once: no buffer is
// shared between two writes (run with -race).
func TestFrameConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v := bytes.Repeat([]byte{byte(g)}, i*37)
				var out bytes.Buffer
				if err := WriteFrame(&out, v); err != nil {
					t.Error(err)
					return
				}
				var got []byte
				if err := ReadFrame(bufio.NewReader(&out), MaxFrame, &got); err != nil || !bytes.Equal(got, v) {
					t.Errorf("goroutine %d frame %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
