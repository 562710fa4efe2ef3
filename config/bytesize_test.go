package config

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		err  string
	}{
		{"0", 0, ""},
		{"512", 512, ""},
		{"512B", 512, ""},
		{"1KiB", 1024, ""},
		{"1KB", 1000, ""},
		{"512MiB", 512 << 20, ""},
		{"1.5GiB", 3 << 29, ""},
		{"20GB", 20e9, ""},
		{"2 TiB", 2 << 40, ""},
		{" 64MB ", 64e6, ""},
		{"0.5KiB", 512, ""},
		{"1PiB", 0, "is not a size"},
		{"-1MiB", 0, "is not a size"},
		{"1mib", 0, "is not a size"},
		{"MiB", 0, "is not a size"},
		{"", 0, "is not a size"},
		{"1e9", 0, "is not a size"},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"9223372036854775808", 0, "too large for a size"},
		{"8388608TiB", 0, "too large for a size"},
	} {
		got, err := ParseByteSize(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseByteSize(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for n, want := range map[ByteSize]string{0: "0", 1: "1", 1024: "1KiB", 1000: "1KB", 512 << 20: "512MiB", 20e9: "20GB", 3 << 29: "1536MiB", 64 << 40: "64TiB"} {
		if got := n.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(n), got, want)
		}
		if back, err := ParseByteSize(want); err != nil || back != n {
			t.Errorf("ParseByteSize(%q) = %d, %v; want it back as %d", want, back, err, int64(n))
		}
	}
}

// FuzzParseByteSize: no panic, never negative, and what String writes parses back to the same size.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"512MiB", "1.5GiB", "20GB", "0", "9223372036854775807", "8388608TiB", "0.0000001KB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseByteSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseByteSize(%q) = %d, negative", s, n)
		}
		if back, err := ParseByteSize(n.String()); err != nil || back != n {
			t.Fatalf("ParseByteSize(%q) = %d, but its String %q parses to %d, %v", s, n, n.String(), back, err)
		}
	})
}

func TestLimitsOf(t *testing.T) {
	cfg := &Config{Daemon: Daemon{MemoryMax: 1 << 30, CPUs: 2, PidsMax: 1000, MinFreeDisk: 5 << 30}}
	for _, tc := range []struct {
		name string
		t    Target
		want Limits
		disk ByteSize
	}{
		{"the daemon's", Target{}, Limits{MemoryMax: 1 << 30, CPUs: 2, PidsMax: 1000}, 5 << 30},
		{"the target's own", Target{MemoryMax: 512 << 20, CPUs: 0.5, PidsMax: 100, MinFreeDisk: 1 << 30}, Limits{MemoryMax: 512 << 20, CPUs: 0.5, PidsMax: 100}, 1 << 30},
		{"one key of its own", Target{PidsMax: 200}, Limits{MemoryMax: 1 << 30, CPUs: 2, PidsMax: 200}, 5 << 30},
	} {
		if got := cfg.LimitsOf(tc.t); got != tc.want {
			t.Errorf("%s: LimitsOf = %+v, want %+v", tc.name, got, tc.want)
		}
		if got := cfg.MinFreeDiskOf(tc.t); got != tc.disk {
			t.Errorf("%s: MinFreeDiskOf = %s, want %s", tc.name, got, tc.disk)
		}
	}
	if got := (&Config{}).LimitsOf(Target{}); got != (Limits{}) {
		t.Errorf("no keys set: LimitsOf = %+v, want no limits", got)
	}
}
