//go:build e2e

// Package images tests the container executor's image keys (image_pull, registry_auth_file,
// digest pinning: internal/container.Images) against a real Docker Engine (a private dockerd,
// e2e/dockertest) pulling from an in-process registry on 127.0.0.1 (go-containerregistry's
// pkg/registry), behind basic auth. Nothing here reaches another host.
package images

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/runner-manager/runner-manager/e2e/dockertest"
	"github.com/runner-manager/runner-manager/internal/container"
	"github.com/runner-manager/runner-manager/internal/redact"
)

const (
	user     = "robot"
	password = "registry-s3cret-password"
)

// reg is the in-process registry: basic auth on every /v2/ request, a count of manifest requests
// (a pull makes one or more: HEAD for a present image, GET to fetch), and an optional lie: serve another manifest in place of the one asked for.
type reg struct {
	addr      string
	manifests atomic.Int64
	lie       atomic.Pointer[[2]string] // {asked path, served path}
}

func startRegistry(t *testing.T) *reg {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &reg{addr: ln.Addr().String()}
	inner := registry.New(registry.Logger(nilLogger()))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		if strings.Contains(req.URL.Path, "/manifests/") && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
			r.manifests.Add(1)
			if l := r.lie.Load(); l != nil && req.URL.Path == l[0] {
				req.URL.Path = l[1]
			}
		}
		inner.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// push writes an image made of one layer (a busybox root with marker at /marker) to repo:tag and
// returns its manifest digest.
func (r *reg) push(t *testing.T, repo, tag, marker string) string {
	t.Helper()
	root := t.TempDir()
	dockertest.BusyboxRoot(t, root)
	if err := os.WriteFile(filepath.Join(root, "marker"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	var layerTar bytes.Buffer
	if err := dockertest.WriteTar(&layerTar, root); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Cmd: []string{"/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(fmt.Sprintf("%s/%s:%s", r.addr, repo, tag), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: user, Password: password})); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// authFile writes a docker login config.json (0600) for the registry with pass.
func (r *reg) authFile(t *testing.T, pass string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(path, []byte(`{"auths": {"`+r.addr+`": {"auth": "`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// setup starts a registry holding runner:1 and runner:2 (two images of other content) and a
// private dockerd that trusts it over plain HTTP.
func setup(t *testing.T) (*reg, *dockertest.Daemon, container.Images, map[string]string) {
	t.Helper()
	r := startRegistry(t)
	digests := map[string]string{"1": r.push(t, "team/runner", "1", "one"), "2": r.push(t, "team/runner", "2", "two")}
	r.manifests.Store(0) // the pushes' own requests
	d := dockertest.Start(t, dockertest.Options{InsecureRegistries: []string{r.addr}})
	api, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return r, d, container.Images{API: api, Redactor: redact.New()}, digests
}

// TestPullPolicies: missing pulls once and then uses the local image, always pulls at every
// launch, never refuses an image the host does not have and uses one it has; the container runs
// what was pushed.
func TestPullPolicies(t *testing.T) {
	r, d, im, _ := setup(t)
	ctx := context.Background()
	ref := r.addr + "/team/runner:1"
	auth := r.authFile(t, password)

	_, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "never", AuthFile: auth})
	assertImageMissing(t, err, `image_pull = "never"`)
	if n := r.manifests.Load(); n != 0 {
		t.Fatalf("image_pull = never fetched %d manifests", n)
	}

	id, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "missing", AuthFile: auth})
	if err != nil {
		t.Fatalf("missing, absent: %v", err)
	}
	pulls := r.manifests.Load()
	if pulls == 0 {
		t.Fatal("image_pull = missing did not pull an absent image")
	}
	if got := d.Docker(t, "run", "--rm", "--network", "none", id, "cat", "/marker"); got != "one" {
		t.Fatalf("the pulled image's /marker = %q, want one", got)
	}
	if again, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "missing", AuthFile: auth}); err != nil || again != id {
		t.Fatalf("missing, present: %q, %v; want %q", again, err, id)
	}
	if n := r.manifests.Load(); n != pulls {
		t.Fatalf("image_pull = missing pulled a present image (%d manifest fetches, was %d)", n, pulls)
	}
	if got, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "never"}); err != nil || got != id {
		t.Fatalf("never, present: %q, %v; want %q", got, err, id)
	}
	for i := range 2 {
		before := r.manifests.Load()
		if got, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "always", AuthFile: auth}); err != nil || got != id {
			t.Fatalf("always #%d: %q, %v; want %q", i, got, err, id)
		}
		if r.manifests.Load() == before {
			t.Fatalf("image_pull = always did not pull at launch #%d", i)
		}
	}
}

// TestPullCredentials: a pull without credentials, or with wrong ones, is image_missing saying
// what to do, and neither the message nor anything the redactor lets through holds the password.
func TestPullCredentials(t *testing.T) {
	r, d, im, _ := setup(t)
	ctx := context.Background()
	ref := r.addr + "/team/runner:1"

	_, err := im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "missing"})
	assertImageMissing(t, err, "set registry_auth_file")

	wrong := "not-the-registry-password"
	bad := r.authFile(t, wrong)
	_, err = im.Resolve(ctx, container.ImageSpec{Ref: ref, Pull: "missing", AuthFile: bad})
	assertImageMissing(t, err, "refused the credentials in "+bad)
	encoded := base64.StdEncoding.EncodeToString([]byte(user + ":" + wrong))
	for _, s := range []string{wrong, encoded} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error holds a credential: %v", err)
		}
		if got := im.Redactor.String("log line with " + s); strings.Contains(got, s) {
			t.Fatalf("the daemon's redactor did not learn the auth file's credential: %q", got)
		}
	}
	if ids := d.Docker(t, "images", "--quiet"); ids != "" {
		t.Fatalf("a refused pull left images: %q", ids)
	}
}

// TestPullDigestPinning: image = name@sha256:<digest> pulls exactly that image; a registry that
// serves other content for it is refused (the Engine verifies the manifest's hash, and Ensure
// checks the digest of what it returns); a digest the registry lacks is image_missing.
func TestPullDigestPinning(t *testing.T) {
	r, d, im, digests := setup(t)
	ctx := context.Background()
	auth := r.authFile(t, password)
	pinned := r.addr + "/team/runner@" + digests["1"]

	// The lie: the manifest asked for by runner:1's digest is served from runner:2's.
	r.lie.Store(&[2]string{"/v2/team/runner/manifests/" + digests["1"], "/v2/team/runner/manifests/2"})
	_, err := im.Resolve(ctx, container.ImageSpec{Ref: pinned, Pull: "missing", AuthFile: auth})
	t.Logf("the lying registry: %v", err)
	assertImageMissing(t, err, "refused")
	if !errors.Is(err, container.ErrDigestMismatch) {
		t.Fatalf("a registry serving other content for the pin: %v; want ErrDigestMismatch", err)
	}
	if ids := d.Docker(t, "images", "--quiet"); ids != "" {
		t.Fatalf("the refused content reached the Engine: images %q", ids)
	}
	r.lie.Store(nil)

	id, err := im.Resolve(ctx, container.ImageSpec{Ref: pinned, Pull: "missing", AuthFile: auth})
	if err != nil {
		t.Fatalf("pinned pull: %v", err)
	}
	if got := d.Docker(t, "run", "--rm", "--network", "none", id, "cat", "/marker"); got != "one" {
		t.Fatalf("the pinned image's /marker = %q, want one", got)
	}
	// runner:2 pulled and tagged as the pinned repository's tag: still not the pin.
	if _, err := im.Resolve(ctx, container.ImageSpec{Ref: r.addr + "/team/runner:2", Pull: "always", AuthFile: auth}); err != nil {
		t.Fatal(err)
	}
	if got, err := im.Resolve(ctx, container.ImageSpec{Ref: pinned, Pull: "never"}); err != nil || got != id {
		t.Fatalf("pinned, never, after runner:2 arrived: %q, %v; want %q", got, err, id)
	}

	absent := r.addr + "/team/runner@sha256:" + strings.Repeat("0", 64)
	_, err = im.Resolve(ctx, container.ImageSpec{Ref: absent, Pull: "missing", AuthFile: auth})
	assertImageMissing(t, err, "has no such image")
}

func assertImageMissing(t *testing.T, err error, want string) {
	t.Helper()
	var f *container.Failure
	if err == nil || !errors.As(err, &f) || f.Reason != container.ReasonImageMissing || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want an image_missing failure saying %q", err, want)
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("the error holds the registry password: %v", err)
	}
}

// nilLogger keeps the registry's request log out of the test output.
func nilLogger() *log.Logger { return log.New(io.Discard, "", 0) }
