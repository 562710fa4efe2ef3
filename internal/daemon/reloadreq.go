package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/runner-manager/runner-manager/internal/redact"
	"github.com/runner-manager/runner-manager/internal/status"
)

// Reload is `runner-manager reload` (POST /v1/reload on the status API): the reload loop loads the
// file now, as SIGHUP makes it, in turn with the other triggers, and answers with the outcome,
// scrubbed like everything the status API serves.
func (s statusSource) Reload(ctx context.Context) (status.ReloadResult, error) {
	answer := make(chan status.ReloadResult, 1) // the loop never waits on a caller that gave up
	select {
	case s.d.reloadReq <- answer:
	case <-ctx.Done():
		return status.ReloadResult{}, fmt.Errorf("the daemon's reload loop did not take the request (%w); the daemon log says what it is doing", ctx.Err())
	}
	select {
	case res := <-answer:
		clean, err := redact.Value(s.d.o.Redactor, res)
		if err != nil {
			return status.ReloadResult{}, fmt.Errorf("scrubbing the reload result of secrets: %w", err)
		}
		return clean, nil
	case <-ctx.Done():
		return status.ReloadResult{}, fmt.Errorf("the reload did not finish in time (%w); it goes on, and the daemon log and `runner-manager status` report its outcome", ctx.Err())
	}
}

// rejected is the answer for a refused reload: the problems as status reports them (one per line
// of the supervisor's record), and the generation that keeps running.
func (d *daemon) rejected(err error) status.ReloadResult {
	var problems []string
	for _, p := range strings.Split(strings.TrimSpace(err.Error()), "\n") {
		if p != "" {
			problems = append(problems, p)
		}
	}
	return status.ReloadResult{Outcome: status.ReloadRejected, Generation: d.sup.Status().Generation, Problems: problems}
}
