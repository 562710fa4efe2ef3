package runner

import (
	"bytes"
	"fmt"
	"strconv"
)

// parseProcStat extracts the state and start time from the contents of /proc/<pid>/stat. The
// second field (comm) is the executable name in parentheses and may itself contain spaces and
// parentheses, so fields are counted from the last ')' (proc(5)). It is plain text parsing,
// kept OS-independent so it is tested and fuzzed everywhere.
func parseProcStat(data []byte) (procInfo, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 || bytes.IndexByte(data, '(') < 0 {
		return procInfo{}, fmt.Errorf("malformed /proc stat line: no (comm)")
	}
	// After "pid (comm) " come field 3 (state) onwards; starttime is field 22.
	fields := bytes.Fields(data[end+1:])
	const stateIdx, startIdx = 0, 22 - 3
	if len(fields) <= startIdx {
		return procInfo{}, fmt.Errorf("malformed /proc stat line: %d fields after comm, want at least %d",
			len(fields), startIdx+1)
	}
	if len(fields[stateIdx]) != 1 {
		return procInfo{}, fmt.Errorf("malformed /proc stat line: state %q", fields[stateIdx])
	}
	start, err := strconv.ParseUint(string(fields[startIdx]), 10, 64)
	if err != nil {
		return procInfo{}, fmt.Errorf("malformed /proc stat line: start time: %w", err)
	}
	state := fields[stateIdx][0]
	// Z: zombie; X (and x on old kernels): dead, being torn down.
	return procInfo{startTime: start, zombie: state == 'Z' || state == 'X' || state == 'x'}, nil
}
