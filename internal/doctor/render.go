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
	fmt.Fprintf(&b, "doctor: %d failed, %d warnings, %d ok, %d skipped\n", r.Count(Fail), r.Count(Warn), r.Count(OK), r.Count(Skip))
	_, err := io.WriteString(w, b.String())
	return err
}
