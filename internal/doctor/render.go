package doctor

import (
	"fmt"
	"io"
	"strings"
)

// Render writes the report as a table, one finding a line, with what to do and what --fix
// changed on the lines below it, then a one-line summary.
func (r Report) Render(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		mark := strings.ToUpper(string(f.Status))
		text := f.Detail
		if f.Subject != "" {
			text = f.Subject + ": " + f.Detail
		}
		fmt.Fprintf(&b, "%-4s  %-15s %s\n", mark, f.Check, text)
		if f.Fixed != "" {
			fmt.Fprintf(&b, "      fixed: %s\n", f.Fixed)
		}
		if f.Do != "" {
			fmt.Fprintf(&b, "      do: %s\n", f.Do)
		}
	}
	warnings := "warnings"
	if r.Count(Warn) == 1 {
		warnings = "warning"
	}
	fmt.Fprintf(&b, "doctor: %d failed, %d %s, %d ok, %d skipped\n", r.Count(Fail), r.Count(Warn), warnings, r.Count(OK), r.Count(Skip))
	_, err := io.WriteString(w, b.String())
	return err
}
