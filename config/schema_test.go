package config

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/runner-manager/runner-manager/internal/golden"
)

var update = flag.Bool("update", false, "rewrite docs/config.schema.json")

const schemaFile = "../docs/config.schema.json"

// generateSchema reflects the JSON Schema editors use (taplo, yaml-language-server) from the
// structs and their doc comments.
func generateSchema(t *testing.T) []byte {
	t.Helper()
	r := &jsonschema.Reflector{RequiredFromJSONSchemaTags: true, FieldNameTag: "json"}
	if err := r.AddGoComments("github.com/runner-manager/runner-manager/config", "."); err != nil {
		t.Fatal(err)
	}
	s := r.Reflect(&Config{})
	s.ID = "https://github.com/runner-manager/runner-manager/raw/main/docs/config.schema.json"
	s.Title = "runner-manager configuration"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestSchema fails when docs/config.schema.json is stale; regenerate with
// go test ./config -run TestSchema -update (or go generate ./config).
func TestSchema(t *testing.T) {
	got := generateSchema(t)
	golden.Check(t, schemaFile, got, *update)
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Ref         string `json:"$ref"`
				Description string `json:"description"`
			} `json:"properties"`
			Type                 string `json:"type"`
			AdditionalProperties *bool  `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	for def, field := range map[string]string{"Daemon": "poll_interval", "Daemon.": "shutdown_drain_timeout", "Target": "idle_timeout"} {
		p := doc.Defs[strings.TrimSuffix(def, ".")].Properties[field]
		if p.Ref != "#/$defs/Duration" {
			t.Errorf("%s.%s is %+v in the schema, want a Duration", def, field, p)
		}
	}
	if typ := doc.Defs["Duration"].Type; typ != "string" {
		t.Errorf("Duration has type %q in the schema, want string (durations are written \"30s\")", typ)
	}
	for name, d := range doc.Defs {
		if d.Type == "object" && (d.AdditionalProperties == nil || *d.AdditionalProperties) {
			t.Errorf("%s allows unknown keys in the schema; Load rejects them", name)
		}
	}
	if doc.Defs["Target"].Properties["max_runners"].Description == "" {
		t.Error("schema lost the doc comments")
	}
}
