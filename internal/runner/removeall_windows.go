package runner

import (
	"errors"

	"golang.org/x/sys/windows"
)

// deleteUnsupported reports the refusal of FileDispositionInformationEx that Go's delete does not
// fall back from: ERROR_INVALID_FUNCTION ("Invalid function."), wine 8.0's answer (e2e/windows).
func deleteUnsupported(err error) bool { return errors.Is(err, windows.ERROR_INVALID_FUNCTION) }
