package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knadh/koanf/maps"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaCannotSay are the examples/invalid files whose mistake JSON Schema cannot express, so an
// editor accepts them and only validate refuses them. Every other invalid example must fail the
// schema too, and every valid example must pass it.
var schemaCannotSay = map[string]string{
	"bad-schedule.toml":        "whether a time zone name exists, and a comparison between two values",
	"duplicate-names.toml":     "uniqueness of a property across array items",
	"min-idle-over-max.toml":   "a comparison between two values",
	"missing-private-key.toml": "whether a file exists on the host",
	"scale-set-labels.toml":    "that a list lacks a value only when another property is set",
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(generateSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// schemaInstance parses a config file as Load does and converts it to the JSON an editor checks;
// ok is false for a file that does not parse at all.
func schemaInstance(t *testing.T, path string) (any, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	format, err := formatOf(path, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, _, ok := parse(newChecker(path), format, data)
	if !ok {
		return nil, false
	}
	maps.IntfaceKeysToStrings(raw)
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func TestSchemaAgreesWithValidate(t *testing.T) {
	s := compileSchema(t)
	invalid, _ := filepath.Glob("../examples/invalid/*.*")
	n := 0
	for _, f := range invalid {
		if strings.HasSuffix(f, ".golden") {
			continue
		}
		n++
		base := filepath.Base(f)
		t.Run("invalid/"+base, func(t *testing.T) {
			if _, err := LoadWith(f, Options{Environ: func() []string { return nil }}); err == nil {
				t.Fatal("validate accepts it; it does not belong in examples/invalid")
			}
			v, ok := schemaInstance(t, f)
			if !ok {
				return // a syntax error: no editor gets as far as the schema
			}
			err := s.Validate(v)
			why, exempt := schemaCannotSay[base]
			switch {
			case exempt && err != nil:
				t.Errorf("the schema now refuses it (%v): remove it from schemaCannotSay", err)
			case !exempt && err == nil:
				t.Error("the schema accepts it, validate refuses it: add the rule to the schema (schema.go, JSONSchemaExtend)")
			case exempt:
				t.Logf("accepted by the schema as expected: JSON Schema cannot express %s", why)
			}
		})
	}
	if n < 15 {
		t.Fatalf("found %d invalid examples, want at least 15", n)
	}
	valid := []string{"../examples/config.toml", "../examples/config.yaml", "../examples/demo.toml", "../examples/container.toml", "testdata/schema-edges.toml"}
	for _, f := range valid {
		t.Run("valid/"+filepath.Base(f), func(t *testing.T) {
			if _, err := LoadWith(f, Options{Offline: true, Environ: func() []string { return nil }}); err != nil {
				t.Fatalf("validate --offline refuses it: %v", err)
			}
			v, ok := schemaInstance(t, f)
			if !ok {
				t.Fatal("does not parse")
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("the schema refuses a valid example: %v", err)
			}
		})
	}
}
