package redact

import (
	"encoding/json"
	"io"
	"os"
)

// maxSecretFile bounds what LearnFile reads: credentials are a few KiB at most (an App's private
// key is about 1.7 KiB); a longer file is not a credential file and is not read further.
const maxSecretFile = 64 << 10

// LearnFiles learns the contents of the secret files at paths (LearnFile).
func (r *Redactor) LearnFiles(paths ...string) {
	for _, p := range paths {
		r.LearnFile(p)
	}
}

// LearnFile learns the contents of the secret file at path. A file that cannot be read (missing,
// not a regular file, not readable by this user: `validate` run as another user) teaches nothing;
// the shapes still apply. Its problems are reported by config's checks, never here.
func (r *Redactor) LearnFile(path string) {
	if r == nil || path == "" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile))
	if err != nil {
		return
	}
	r.Learn(string(b))
}

// Value returns v with every string in it scrubbed by r, through its JSON form (so every field of
// a status snapshot is covered, including ones added later). v's type must round-trip through JSON.
func Value[T any](r *Redactor, v T) (T, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return v, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return v, err
	}
	if b, err = json.Marshal(r.walk(doc)); err != nil {
		return v, err
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return v, err
	}
	return out, nil
}

func (r *Redactor) walk(v any) any {
	switch t := v.(type) {
	case string:
		return r.String(t)
	case map[string]any:
		for k, e := range t {
			t[k] = r.walk(e)
		}
	case []any:
		for i, e := range t {
			t[i] = r.walk(e)
		}
	}
	return v
}
