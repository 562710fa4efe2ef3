package runner

import (
	"strings"
	"testing"
)

func statLine(pid, comm, state string, start string) string {
	// Fields 4..21 are irrelevant here; 19 of them sit between state and starttime.
	return pid + " (" + comm + ") " + state + strings.Repeat(" 0", 18) + " " + start + " 123 456\n"
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		line      string
		wantStart uint64
		zombie    bool
		wantErr   bool
	}{
		{"plain", statLine("42", "sleep", "S", "987654"), 987654, false, false},
		{"comm with spaces and parens", statLine("42", "a) (b ) c", "R", "5"), 5, false, false},
		{"zombie", statLine("42", "sh", "Z", "77"), 77, true, false},
		{"dead", statLine("42", "sh", "X", "77"), 77, true, false},
		{"no comm", "42 sleep S 1 2 3", 0, false, true},
		{"too short", "42 (sleep) S 1 2 3", 0, false, true},
		{"bad start", statLine("42", "sleep", "S", "-1"), 0, false, true},
		{"bad state", statLine("42", "sleep", "SS", "1"), 0, false, true},
		{"empty", "", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (got.startTime != tt.wantStart || got.zombie != tt.zombie) {
				t.Fatalf("got %+v, want start %d zombie %v", got, tt.wantStart, tt.zombie)
			}
		})
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte(statLine("1", "init", "S", "1")))
	f.Add([]byte(statLine("9", ") ) (", "Z", "18446744073709551615")))
	f.Add([]byte("1 ((("))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parseProcStat(data)
		if err != nil && info != (procInfo{}) {
			t.Fatalf("error with a non-zero result: %+v", info)
		}
	})
}
