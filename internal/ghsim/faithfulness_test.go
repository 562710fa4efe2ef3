package ghsim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghexamples"

	"github.com/google/go-github/v62/github"
)

func decodeJSON(t *testing.T, name string, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// jsonType names v's JSON Schema type; whole numbers are "integer".
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// schemaTypes reads the allowed types of every workflow_job property from GitHub's schema.
func schemaTypes(t *testing.T) map[string][]string {
	t.Helper()
	s := decodeJSON(t, "workflow-job.schema.json", ghexamples.WorkflowJobSchema())
	out := map[string][]string{}
	for k, v := range s["properties"].(map[string]any) {
		prop := v.(map[string]any)
		add := func(x any) {
			switch tt := x.(type) {
			case string:
				out[k] = append(out[k], tt)
			case []any:
				for _, e := range tt {
					out[k] = append(out[k], e.(string))
				}
			}
		}
		add(prop["type"])
		for _, alt := range anySlice(prop["oneOf"]) {
			add(alt.(map[string]any)["type"])
		}
		if slices.Contains(out[k], "number") {
			out[k] = append(out[k], "integer")
		}
	}
	return out
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dig(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestWebhookPayloadsMatchGitHubExamples compares the simulator's real deliveries with every
// published workflow_job example: the same workflow_job key set, types the schema allows, and the
// same types for every field runner-manager reads.
func TestWebhookPayloadsMatchGitHubExamples(t *testing.T) {
	types := schemaTypes(t)
	s := newTestServer(t, Options{})
	s.CreateRepo("octo-org", "octo-repo")
	key := rsaKey(t)
	s.CreateApp(1, &key.PublicKey)
	if _, err := s.CreateInstallation(1, "octo-org"); err != nil {
		t.Fatal(err)
	}
	hookURL, ch := hookReceiver(t, "x")
	s.AddWebhook(hookURL, "x")
	gh := newClient(t, s, s.AddToken(TokenOptions{}))
	if _, err := s.QueueJob("octo-org/octo-repo", []string{"linux"}, 0); err != nil {
		t.Fatal(err)
	}
	jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "octo-org", "octo-repo", jitReq("r", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	playRunner(t, s, jit.GetEncodedJITConfig(), true)
	ours := map[string]map[string]any{}
	for range 3 {
		r := next(t, ch)
		strict := json.NewDecoder(bytes.NewReader(r.raw))
		strict.DisallowUnknownFields()
		if err := strict.Decode(&github.WorkflowJobEvent{}); err != nil {
			t.Errorf("%s delivery has a field go-github does not know: %v", r.event.GetAction(), err)
		}
		var m map[string]any
		_ = json.Unmarshal(r.raw, &m)
		ours[r.event.GetAction()] = m
	}
	read := []string{"action", "workflow_job.id", "workflow_job.run_id", "workflow_job.status", "workflow_job.labels",
		"workflow_job.created_at", "workflow_job.started_at", "workflow_job.head_branch", "workflow_job.name",
		"repository.full_name", "repository.name", "repository.owner.login", "organization.login", "installation.id"}
	examples := ghexamples.Webhooks()
	if len(examples) == 0 {
		t.Fatal("no webhook examples in internal/ghexamples")
	}
	for name, raw := range examples {
		t.Run(name, func(t *testing.T) {
			ex := decodeJSON(t, name, raw)
			action := ex["action"].(string)
			if action == "waiting" { // the simulator announces a held job (JobSpec.Waiting) as queued; this compares a plain queued delivery
				action = "queued"
			}
			got := ours[action]
			if got == nil {
				t.Fatalf("no %s delivery", action)
			}
			exJob, gotJob := ex["workflow_job"].(map[string]any), got["workflow_job"].(map[string]any)
			if a, b := keys(exJob), keys(gotJob); !slices.Equal(a, b) {
				t.Errorf("workflow_job keys differ:\n example %v\n ours    %v", a, b)
			}
			for k, v := range gotJob {
				if allowed := types[k]; !slices.Contains(allowed, jsonType(v)) {
					t.Errorf("workflow_job.%s is %s; the schema allows %v", k, jsonType(v), allowed)
				}
				if ev := exJob[k]; ev != nil && v != nil && jsonType(ev) != jsonType(v) {
					t.Errorf("workflow_job.%s: example %s, ours %s", k, jsonType(ev), jsonType(v))
				}
			}
			if got["action"] != action || gotJob["status"] != action {
				t.Errorf("action %v with status %v", got["action"], gotJob["status"])
			}
			for _, p := range read {
				ev, inExample := dig(ex, p)
				gv, inOurs := dig(got, p)
				if !inExample {
					continue
				}
				if !inOurs || (ev != nil && jsonType(ev) != jsonType(gv)) {
					t.Errorf("%s: example %s (%v), ours %s (present %v)", p, jsonType(ev), ev, jsonType(gv), inOurs)
				}
			}
			if inst, ok := got["installation"].(map[string]any); ok && !slices.Equal(keys(inst), []string{"id", "node_id"}) {
				t.Errorf("installation keys %v, want InstallationLite's id and node_id", keys(inst))
			}
		})
	}
}

// TestRESTResponsesDecodeStrictly: every REST answer runner-manager reads decodes into its
// go-github type with no field go-github does not know.
func TestRESTResponsesDecodeStrictly(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	tok := s.AddToken(TokenOptions{})
	s.ServeRunnerPackage(Package{Filename: "actions-runner-linux-x64-2.317.0.tar.gz", OS: "linux", Arch: "x64", SHA256: "00"})
	jobID, _ := s.QueueJob("acme/api", []string{"linux"}, 0)
	gh := newClient(t, s, tok)
	jit, _, err := gh.Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq("strict", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	playRunner(t, s, jit.GetEncodedJITConfig(), false) // a busy runner: every job field is set
	j, _ := s.Job(jobID)
	for _, tc := range []struct {
		path string
		into any
	}{
		{"/repos/acme/api/actions/runs?status=in_progress", &github.WorkflowRuns{}},
		{"/repos/acme/api/actions/runs/" + itoa(j.RunID) + "/jobs", &github.Jobs{}},
		{"/repos/acme/api/actions/jobs/" + itoa(jobID), &github.WorkflowJob{}},
		{"/repos/acme/api/actions/runners", &github.Runners{}},
		{"/repos/acme/api/actions/runners/" + itoa(jit.Runner.GetID()), &github.Runner{}},
		{"/repos/acme/api/actions/runners/downloads", &[]*github.RunnerApplicationDownload{}},
		{"/orgs/acme/actions/runner-groups", &github.RunnerGroups{}},
		{"/user", &github.User{}},
		{"/repos/acme/nope/actions/runners", &github.ErrorResponse{}},
	} {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+tc.path, nil)
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(tc.into); err != nil {
			t.Errorf("GET %s: %v", tc.path, err)
		}
		resp.Body.Close()
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
