package container

import "fmt"

// Launch failure reasons (the engine counts them in runner_manager_runner_failures_total).
const (
	// ReasonImageMissing: the image is not on the host and may not (image_pull = "never") or
	// could not be pulled.
	ReasonImageMissing = "image_missing"
	// ReasonRuntimeUnavailable: the Docker Engine at daemon.docker_host did not answer.
	ReasonRuntimeUnavailable = "container_runtime_unavailable"
	// ReasonDependencyMissing: the runner cannot start in the image (its entry point, shell or
	// dynamic loader is missing: the runtime refused it, or the container ended before its start
	// was confirmed).
	ReasonDependencyMissing = "runner_dependency_missing"
)

// Failure is a launch failure with its reason. Retry says whether trying again soon can help
// (the Engine coming back); the others need the operator (an image, a dependency).
type Failure struct {
	Reason string
	Err    error
	Retry  bool
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %v", f.Reason, f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

// FailureReason is the engine's hook for the reason a launch failed.
func (f *Failure) FailureReason() string { return f.Reason }

// Temporary is engine.Classify's hook: false backs off as a terminal error.
func (f *Failure) Temporary() bool { return f.Retry }
