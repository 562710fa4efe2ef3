package journal

import (
	"bytes"
	"testing"
	"time"
)

// FuzzDecodeAttempt: whatever bytes are on disk, decoding never panics, and anything it accepts
// re-encodes to a stable form.
func FuzzDecodeAttempt(f *testing.F) {
	code := 1
	f.Add(encodeAttempt(Attempt{ID: "abcdefgh-0000000001", Target: "org", Slot: 2, State: StateExited, ExitCode: &code,
		Labels: []string{"linux"}, CreatedAt: time.Unix(1, 0).UTC()}))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"created_at":"2026-12-02T10:00:00+05:00"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := decodeAttempt([]byte("attempt/x"), raw)
		if err != nil {
			return
		}
		once := encodeAttempt(a)
		b, err := decodeAttempt([]byte("attempt/x"), once)
		if err != nil {
			t.Fatalf("re-decoding our own encoding failed: %v\n%s", err, once)
		}
		if twice := encodeAttempt(b); !bytes.Equal(once, twice) {
			t.Fatalf("encoding not stable:\n%s\n%s", once, twice)
		}
	})
}

func TestPrefixBounds(t *testing.T) {
	lo, hi := prefixBounds(prefixLive)
	for key, in := range map[string]bool{"live/": true, "live/x": true, "live0": false, "livd/": false, "attempt/x": false} {
		got := bytes.Compare([]byte(key), lo) >= 0 && bytes.Compare([]byte(key), hi) < 0
		if got != in {
			t.Errorf("%q in [%q, %q) = %v, want %v", key, lo, hi, got, in)
		}
	}
}
