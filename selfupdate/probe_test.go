package selfupdate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		out, want string
	}{
		{"runner-manager 1.2.3\n", "1.2.3"},
		{"runner-manager 0.1.0-rc.1+g1a2b3c\r\n", "0.1.0-rc.1+g1a2b3c"},
		{"runner-manager 0.0.0-dev", "0.0.0-dev"},
		{"runner-manager\n", ""},
		{"runner-manager 1.2.3 extra\n", ""},
		{"something-else 1.2.3\n", ""},
		{"\x7fELF\x02\x01", ""},
		{"runner-manager 1.2.3\nrunner-manager 1.2.4\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := ParseVersion([]byte(tt.out))
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %q, want an error", tt.out, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseVersion(%q) = %q, %v; want %q", tt.out, got, err, tt.want)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	f.Add([]byte("runner-manager 1.2.3\n"))
	f.Add([]byte("runner-manager \x00\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		v, err := ParseVersion(out)
		if err != nil {
			return
		}
		if v == "" || strings.ContainsAny(v, " \n\r\t") {
			t.Fatalf("accepted version %q from %q", v, out)
		}
		if again, err := ParseVersion([]byte("runner-manager " + v + "\n")); err != nil || again != v {
			t.Fatalf("version %q does not round-trip: %q, %v", v, again, err)
		}
	})
}

func TestProbeVersionRealBinaries(t *testing.T) {
	tests := []struct {
		variant, want, errContains string
	}{
		{"v1.2.3", "1.2.3", ""},
		{"fail", "", "--version failed"},
		{"hang", "", "did not answer within"},
		{"garbage", "", "not a runner-manager binary"},
	}
	for _, tt := range tests {
		t.Run(tt.variant, func(t *testing.T) {
			start := time.Now()
			got, err := ProbeVersion(t.Context(), nil, filepath.Join(fakeBins, tt.variant), testProbeTimeout)
			if tt.errContains == "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errContains) {
				t.Fatalf("got %q, %v; want an error containing %q", got, err, tt.errContains)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("probe of %s took %s; the timeout did not bound it", tt.variant, time.Since(start))
			}
		})
	}
}

func TestProbeVersionShutdownIsNotATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := ProbeVersion(ctx, func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, "/x", time.Hour)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
