package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// ByteSize is a number of bytes written as a size with a unit ("512MiB", "20GB") or as a plain
// whole number of bytes in the file.
type ByteSize int64

// Bytes returns the size as a plain number of bytes.
func (b ByteSize) Bytes() int64 { return int64(b) }

// byteUnits are the units a size may carry: binary (KiB = 1024) and decimal (KB = 1000), as
// written by df -h and docker respectively. A bare B or no unit means bytes.
var byteUnits = map[string]int64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// byteSyntax is what ParseByteSize accepts: a whole or decimal number and an optional unit.
var byteSyntax = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?$`)

// ByteSizePattern is byteSyntax as the JSON schema states it (no spaces: the schema is for editors).
const ByteSizePattern = `^[0-9]+(\.[0-9]+)?([KMGT]i?B|B)?$`

// String writes the size in the first unit that divides it, binary before decimal ("512MiB",
// "20GB"), else in bytes.
func (b ByteSize) String() string {
	for _, u := range []string{"TiB", "GiB", "MiB", "TB", "GB", "MB", "KiB", "KB"} {
		if n := byteUnits[u]; b != 0 && int64(b)%n == 0 {
			return strconv.FormatInt(int64(b)/n, 10) + u
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// MarshalText writes the size as String does, so printed configs read like the file.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses "512MiB", "1.5GiB", "20GB" or a plain number of bytes.
func (b *ByteSize) UnmarshalText(text []byte) error {
	n, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = n
	return nil
}

// ParseByteSize parses a size as the file writes it; the error is phrased for the operator.
func ParseByteSize(s string) (ByteSize, error) {
	m := byteSyntax.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (use a number with a unit, such as 512MiB, 2GiB or 20GB; KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB of 1000)", s)
	}
	unit := byteUnits[m[2]]
	whole, frac, _ := strings.Cut(m[1], ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/unit {
		return 0, errSizeTooLarge{written: s}
	}
	n := w * unit
	if frac != "" {
		f, _ := strconv.ParseFloat("0."+frac, 64)
		n += int64(math.Round(f * float64(unit)))
	}
	if n < 0 {
		return 0, errSizeTooLarge{written: s}
	}
	return ByteSize(n), nil
}

// errSizeTooLarge marks a size beyond what an int64 of bytes holds.
type errSizeTooLarge struct{ written string }

func (e errSizeTooLarge) Error() string { return fmt.Sprintf("%q is too large for a size", e.written) }

// JSONSchema makes sizes a string with a unit or a whole number in docs/config.schema.json.
func (ByteSize) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		OneOf: []*jsonschema.Schema{
			{Type: "string", Pattern: ByteSizePattern},
			{Type: "integer", Minimum: "0"},
		},
		Description: "A size such as 512MiB, 2GiB or 20GB (KiB/MiB/GiB/TiB: powers of 1024; KB/MB/GB/TB: of 1000), or a whole number of bytes.",
	}
}
