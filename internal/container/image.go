package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/redact"
)

// ImageAPI is what pulling needs of the Docker Engine API; *client.Client satisfies it.
type ImageAPI interface {
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, ref string, options image.PullOptions) (io.ReadCloser, error)
}

// ImageSpec is a target's image keys.
type ImageSpec struct {
	Ref      string // image: name[:tag] or name[:tag]@sha256:<hex>
	Pull     string // image_pull: config.PullMissing (also for ""), PullAlways, PullNever
	AuthFile string // registry_auth_file, "" for anonymous pulls
}

// ErrDigestMismatch is wrapped by the image_missing Failure of a pinned image whose digest is not the pin.
var ErrDigestMismatch = errors.New("digest differs from the pinned one")

// Images makes a target's image present on the Engine as its image_pull says: the Launcher's
// ImageSource. Its failures are *Failure with ReasonImageMissing, Retry only for a registry that
// may come back (a refusal waits for the operator); an Engine that cannot be reached is the
// launcher's container_runtime_unavailable.
type Images struct {
	API ImageAPI
	// Redactor learns the credentials of every registry_auth_file read; nil scrubs nothing more.
	Redactor *redact.Redactor
}

var _ ImageSource = Images{}

// Ensure is Resolve for the Launcher's ImageSource.
func (im Images) Ensure(ctx context.Context, ref, policy, authFile string) error {
	_, err := im.Resolve(ctx, ImageSpec{Ref: ref, Pull: policy, AuthFile: authFile})
	return err
}

// Resolve returns the ID of spec's image, pulling it first when spec.Pull asks. A pinned reference
// (name@sha256:...) only ever resolves to an image that carries that digest.
func (im Images) Resolve(ctx context.Context, spec ImageSpec) (string, error) {
	ref, err := parseRef(spec.Ref)
	if err != nil {
		return "", imageMissing(spec.Ref, err, false)
	}
	policy := spec.Pull
	if policy == "" {
		policy = config.PullMissing
	}
	if policy != config.PullAlways {
		id, err := im.present(ctx, spec.Ref, ref)
		switch {
		case err == nil:
			return id, nil
		case !errdefs.IsNotFound(err):
			return "", err
		case policy == config.PullNever:
			return "", imageMissing(spec.Ref, errors.New("not on the host, and image_pull = \"never\": load it (docker pull or docker load), or set image_pull = \"missing\""), false)
		}
	}
	if err := im.pull(ctx, spec, ref); err != nil {
		return "", err
	}
	id, err := im.present(ctx, spec.Ref, ref)
	if err != nil {
		return "", imageMissing(spec.Ref, fmt.Errorf("pulled, yet the Engine does not show it: %w", err), false)
	}
	return id, nil
}

// present inspects the image and, for a pinned reference, checks that it carries the pinned digest.
func (im Images) present(ctx context.Context, raw string, ref reference.Named) (string, error) {
	info, err := im.API.ImageInspect(ctx, raw)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", err
		}
		return "", fmt.Errorf("inspect image %s: %w", raw, err) // the launcher classifies an unreachable Engine
	}
	if d, ok := ref.(reference.Digested); ok {
		want := d.Digest().String()
		for _, rd := range info.RepoDigests {
			if _, got, ok := strings.Cut(rd, "@"); ok && got == want {
				return info.ID, nil
			}
		}
		return "", imageMissing(raw, fmt.Errorf("%w: the Engine's image %s carries %v, not %s; it is refused: push the image you pinned, or pin the digest you mean", ErrDigestMismatch, info.ID, info.RepoDigests, want), false)
	}
	return info.ID, nil
}

// pull pulls ref with the credentials of spec.AuthFile for its registry, reading the Engine's
// progress stream to its end (a pull's failure arrives in that stream, not as the call's error).
func (im Images) pull(ctx context.Context, spec ImageSpec, ref reference.Named) error {
	opts := image.PullOptions{}
	if spec.AuthFile != "" {
		auth, err := registryAuth(spec.AuthFile, reference.Domain(ref), im.Redactor)
		if err != nil {
			return imageMissing(spec.Ref, err, false)
		}
		opts.RegistryAuth = auth
	}
	rc, err := im.API.ImagePull(ctx, spec.Ref, opts)
	if err == nil {
		err = drainPull(rc)
		rc.Close()
	}
	if err == nil {
		return nil
	}
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("pull %s: %w", spec.Ref, err) // the launcher's container_runtime_unavailable
	}
	return imageMissing(spec.Ref, pullAdvice(err, spec.AuthFile, reference.Domain(ref)), retryablePull(err))
}

// pullMessage is one line of the Engine's pull progress stream.
type pullMessage struct {
	Error       string `json:"error"`
	ErrorDetail struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// drainPull reads the pull's progress to the end and returns the error it reports, if any.
func drainPull(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m pullMessage
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the Engine's pull progress: %w", err)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// pullAdvice phrases a pull's failure for the operator, by what the Engine said.
func pullAdvice(err error, authFile, registry string) error {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "manifest verification failed") || strings.Contains(msg, "digest did not match") || strings.Contains(msg, "does not match digest"):
		return fmt.Errorf("%w: the registry served content for the pinned digest that does not hash to it (%v); it is refused", ErrDigestMismatch, err)
	case strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authentication required") || strings.Contains(msg, "denied") || strings.Contains(msg, "no basic auth credentials"):
		if authFile == "" {
			return fmt.Errorf("the registry %s refused an anonymous pull (%v): set registry_auth_file to a docker login config.json with credentials for it", registry, err)
		}
		return fmt.Errorf("the registry %s refused the credentials in %s (%v): run docker login for %s again and copy its config.json there", registry, authFile, err, registry)
	case errdefs.IsNotFound(err) || strings.Contains(msg, "not found") || strings.Contains(msg, "manifest unknown"):
		return fmt.Errorf("the registry %s has no such image (%v): check image (name, tag, digest)", registry, err)
	}
	return fmt.Errorf("pull failed: %w", err)
}

// retryablePull reports whether a pull's failure may pass by itself: the registry unreachable or
// failing, not refusing.
func retryablePull(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"unauthorized", "denied", "authentication required", "no basic auth credentials", "not found", "manifest unknown", "verification failed", "digest"} {
		if strings.Contains(msg, s) {
			return false
		}
	}
	return true
}

// parseRef parses an image reference as Docker does (docker.io/library/ added to short names).
func parseRef(raw string) (reference.Named, error) {
	ref, err := reference.ParseNormalizedNamed(raw)
	if err != nil {
		return nil, fmt.Errorf("not an image reference (%w): use name[:tag] or name@sha256:<digest>", err)
	}
	return ref, nil
}

// imageMissing is the image_missing failure of ref; retry says whether the next pass may cure it.
func imageMissing(ref string, err error, retry bool) *Failure {
	return &Failure{Reason: ReasonImageMissing, Err: fmt.Errorf("image %s: %w", ref, err), Retry: retry}
}
