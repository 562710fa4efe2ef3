package container

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/runner-manager/runner-manager/internal/redact"
)

const (
	pin   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	other = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// fakeImages is an Engine holding images by reference; a pull adds pulls[ref] or fails with
// pullErr (as the call's error) or streamErr (in the progress stream, as the Engine reports it).
type fakeImages struct {
	have      map[string]image.InspectResponse
	pulls     map[string]image.InspectResponse
	pullErr   error
	streamErr string
	pulled    []string
	auths     []string
}

func (f *fakeImages) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	if i, ok := f.have[ref]; ok {
		return i, nil
	}
	return image.InspectResponse{}, errdefs.NotFound(errors.New("No such image: " + ref))
}

func (f *fakeImages) ImagePull(_ context.Context, ref string, o image.PullOptions) (io.ReadCloser, error) {
	f.pulled, f.auths = append(f.pulled, ref), append(f.auths, o.RegistryAuth)
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	if f.streamErr != "" {
		msg, _ := json.Marshal(map[string]any{"error": f.streamErr, "errorDetail": map[string]string{"message": f.streamErr}})
		return io.NopCloser(strings.NewReader(`{"status":"Pulling"}` + "\n" + string(msg) + "\n")), nil
	}
	if i, ok := f.pulls[ref]; ok {
		f.have[ref] = i
	}
	return io.NopCloser(strings.NewReader(`{"status":"Downloaded newer image"}` + "\n")), nil
}

func TestResolvePolicies(t *testing.T) {
	local := image.InspectResponse{ID: "sha256:local"}
	fresh := image.InspectResponse{ID: "sha256:fresh"}
	pinned := image.InspectResponse{ID: "sha256:pinned", RepoDigests: []string{"reg.example:5000/team/runner@" + pin}}
	wrong := image.InspectResponse{ID: "sha256:wrong", RepoDigests: []string{"reg.example:5000/team/runner@" + other}}
	for _, tc := range []struct {
		name      string
		ref, pull string
		have      map[string]image.InspectResponse
		pulls     map[string]image.InspectResponse
		streamErr string
		wantID    string
		wantPulls int
		wantErr   string // substring; "" for success
		mismatch  bool
	}{
		{name: "missing uses the local image", ref: "runner:1", pull: "missing", have: map[string]image.InspectResponse{"runner:1": local}, wantID: "sha256:local"},
		{name: "absent policy is missing", ref: "runner:1", have: map[string]image.InspectResponse{"runner:1": local}, wantID: "sha256:local"},
		{name: "missing pulls an absent image", ref: "runner:1", pull: "missing", pulls: map[string]image.InspectResponse{"runner:1": fresh}, wantID: "sha256:fresh", wantPulls: 1},
		{name: "always pulls a present image", ref: "runner:1", pull: "always", have: map[string]image.InspectResponse{"runner:1": local}, pulls: map[string]image.InspectResponse{"runner:1": fresh}, wantID: "sha256:fresh", wantPulls: 1},
		{name: "never uses the local image", ref: "runner:1", pull: "never", have: map[string]image.InspectResponse{"runner:1": local}, wantID: "sha256:local"},
		{name: "never refuses an absent image", ref: "runner:1", pull: "never", wantErr: `image_pull = "never"`},
		{name: "pinned image present with its digest", ref: "reg.example:5000/team/runner@" + pin, pull: "never", have: map[string]image.InspectResponse{"reg.example:5000/team/runner@" + pin: pinned}, wantID: "sha256:pinned"},
		{name: "pinned image with another digest is refused", ref: "reg.example:5000/team/runner@" + pin, pull: "never", have: map[string]image.InspectResponse{"reg.example:5000/team/runner@" + pin: wrong}, wantErr: "refused", mismatch: true},
		{name: "pinned image pulled with another digest is refused", ref: "reg.example:5000/team/runner@" + pin, pull: "missing", pulls: map[string]image.InspectResponse{"reg.example:5000/team/runner@" + pin: wrong}, wantPulls: 1, wantErr: "refused", mismatch: true},
		{name: "a registry serving other content for the pin is refused", ref: "reg.example:5000/team/runner@" + pin, pull: "always", streamErr: "manifest verification failed for digest " + pin, wantPulls: 1, wantErr: "refused", mismatch: true},
		{name: "pull failure in the stream", ref: "runner:1", pull: "missing", streamErr: "manifest for runner:1 not found: manifest unknown", wantPulls: 1, wantErr: "has no such image"},
		{name: "a refused anonymous pull asks for registry_auth_file", ref: "runner:1", pull: "always", streamErr: "unauthorized: authentication required", wantPulls: 1, wantErr: "set registry_auth_file"},
		{name: "not a reference", ref: "Not A Ref", wantErr: "not an image reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.have == nil {
				tc.have = map[string]image.InspectResponse{}
			}
			f := &fakeImages{have: tc.have, pulls: tc.pulls, streamErr: tc.streamErr}
			id, err := Images{API: f}.Resolve(context.Background(), ImageSpec{Ref: tc.ref, Pull: tc.pull})
			if len(f.pulled) != tc.wantPulls {
				t.Errorf("pulls = %v, want %d", f.pulled, tc.wantPulls)
			}
			if tc.wantErr == "" {
				if err != nil || id != tc.wantID {
					t.Fatalf("Resolve = %q, %v; want %q", id, err, tc.wantID)
				}
				return
			}
			var ie *Failure
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ie) || ie.FailureReason() != ReasonImageMissing {
				t.Fatalf("Resolve = %q, %v; want an image_missing Failure containing %q", id, err, tc.wantErr)
			}
			if errors.Is(err, ErrDigestMismatch) != tc.mismatch {
				t.Fatalf("errors.Is(err, ErrDigestMismatch) = %v, want %v (%v)", !tc.mismatch, tc.mismatch, err)
			}
			if ie.Temporary() {
				t.Fatalf("%v is Temporary: a refusal needs the operator, not a quick retry", err)
			}
		})
	}
}

// TestResolveUnreachableEngine: an Engine that cannot be reached is not image_missing; the
// launcher's classify makes it container_runtime_unavailable.
func TestResolveUnreachableEngine(t *testing.T) {
	f := &fakeImages{have: map[string]image.InspectResponse{}, pullErr: client.ErrorConnectionFailed("unix:///nonexistent.sock")}
	_, err := Images{API: f}.Resolve(context.Background(), ImageSpec{Ref: "runner:1", Pull: "always"})
	if err == nil || !client.IsErrConnectionFailed(err) {
		t.Fatalf("Resolve = %v; want the connection failure, unwrappable", err)
	}
	var fail *Failure
	if err := classify(err); !errors.As(err, &fail) || fail.Reason != ReasonRuntimeUnavailable {
		t.Fatalf("the launcher classifies %v as %v; want %s", err, err, ReasonRuntimeUnavailable)
	}
}

func writeAuthFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRegistryAuth: the credentials for the image's registry reach the pull, and every one of
// them, decoded or not, is scrubbed from what the daemon prints.
func TestRegistryAuth(t *testing.T) {
	secret := "s3cret-registry-password"
	b64 := base64.StdEncoding.EncodeToString([]byte("robot:" + secret))
	path := writeAuthFile(t, `{"auths": {"127.0.0.1:5000": {"auth": "`+b64+`"}, "https://index.docker.io/v1/": {"identitytoken": "hub-identity-token-xyz"}}}`)
	red := redact.New()
	f := &fakeImages{have: map[string]image.InspectResponse{}, pulls: map[string]image.InspectResponse{"127.0.0.1:5000/team/runner:1": {ID: "sha256:x"}}}
	if _, err := (Images{API: f, Redactor: red}).Resolve(context.Background(), ImageSpec{Ref: "127.0.0.1:5000/team/runner:1", Pull: "missing", AuthFile: path}); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.URLEncoding.DecodeString(f.auths[0])
	if err != nil {
		t.Fatalf("X-Registry-Auth %q is not base64url: %v", f.auths[0], err)
	}
	var ac registry.AuthConfig
	if err := json.Unmarshal(raw, &ac); err != nil || ac.Username != "robot" || ac.Password != secret || ac.ServerAddress != "127.0.0.1:5000" {
		t.Fatalf("auth sent = %+v (%v); want robot's for 127.0.0.1:5000", ac, err)
	}
	for _, s := range []string{secret, b64, "hub-identity-token-xyz"} {
		if got := red.String("pull failed with " + s); strings.Contains(got, s) {
			t.Errorf("the redactor did not learn %q: %q", s, got)
		}
	}
	for _, tc := range []struct{ name, ref, content, want string }{
		{"no entry for the registry", "other.example/x:1", `{"auths": {"127.0.0.1:5000": {"auth": "` + b64 + `"}}}`, "has no credentials for the registry other.example (it has 127.0.0.1:5000)"},
		{"docker hub aliases", "debian:12", `{"auths": {"docker.io": {"auth": "bad!"}}}`, `"auth" of docker.io is not base64`},
		{"not json", "x:1", `auth = "` + secret + `"`, "is not a docker login config.json"},
		{"credential helper only", "x:1", `{"auths": {"docker.io": {}}}`, "neither auth, username nor identitytoken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeImages{have: map[string]image.InspectResponse{}}
			_, err := Images{API: f}.Resolve(context.Background(), ImageSpec{Ref: tc.ref, Pull: "always", AuthFile: writeAuthFile(t, tc.content)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), b64) {
				t.Fatalf("Resolve = %v; want an error containing %q and no credential", err, tc.want)
			}
			if len(f.pulled) != 0 {
				t.Fatalf("pulled %v with a bad auth file", f.pulled)
			}
		})
	}
	t.Run("world-readable file", func(t *testing.T) {
		p := writeAuthFile(t, `{"auths": {}}`)
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Images{API: &fakeImages{have: map[string]image.InspectResponse{}}}.Resolve(context.Background(), ImageSpec{Ref: "x:1", Pull: "always", AuthFile: p})
		if err == nil || !strings.Contains(err.Error(), "registry_auth_file") {
			t.Fatalf("Resolve = %v; want the credential-file rule's refusal", err)
		}
	})
}
