package metrics

import (
	"encoding/json"
	"os"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
)

const dashboardPath = "../../examples/grafana-dashboard.json"

// TestDashboardQueries parses every query of the Grafana dashboard with Prometheus' own PromQL
// parser and checks that each names only metrics the daemon's registry exports (a histogram's
// _bucket, _sum and _count series count as its family's), so the dashboard cannot drift from
// the daemon: a panel on a metric that does not exist, or a typo, fails here.
func TestDashboardQueries(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}

	families := gatherAll(t)
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[f.GetName()+suffix] = true
			}
		}
	}

	promql := parser.NewParser(parser.Options{})
	queries := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			expr, err := promql.ParseExpr(q.Expr)
			if err != nil {
				t.Errorf("panel %q: %q does not parse: %v", p.Title, q.Expr, err)
				continue
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				switch {
				case !ok:
				case vs.Name == "":
					t.Errorf("panel %q: %q selects series without a metric name", p.Title, q.Expr)
				case !exported[vs.Name]:
					t.Errorf("panel %q: %s is not a metric the daemon exports (docs/metrics.md lists them)", p.Title, vs.Name)
				}
				return nil
			})
		}
	}
	if queries < len(dash.Panels) {
		t.Fatalf("%d queries in %d panels", queries, len(dash.Panels))
	}
}
