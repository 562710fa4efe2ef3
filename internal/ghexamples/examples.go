// Package ghexamples holds GitHub's published examples that tests check the simulator and the
// webhook parser against (testdata/, copied verbatim; testdata/README.md gives each file's
// provenance). Only tests import it: nothing here reaches the shipped binary.
package ghexamples

import (
	"embed"
	"io/fs"
	"path"
	"strings"
)

//go:embed testdata/webhooks
var files embed.FS

// Webhooks returns every workflow_job example payload, keyed by file name
// ("workflow_job.queued.json", ...).
func Webhooks() map[string][]byte {
	entries, err := fs.ReadDir(files, "testdata/webhooks")
	if err != nil {
		panic("ghexamples: embedded webhooks missing: " + err.Error()) // a broken build, not a test failure
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		out[e.Name()] = mustRead(path.Join("testdata/webhooks", e.Name()))
	}
	return out
}

// WorkflowJobSchema is octokit's JSON Schema of the workflow_job object
// (payload-schemas/api.github.com/common/workflow-job.schema.json).
func WorkflowJobSchema() []byte {
	return mustRead("testdata/webhooks/schemas/common/workflow-job.schema.json")
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("ghexamples: " + err.Error())
	}
	return b
}
