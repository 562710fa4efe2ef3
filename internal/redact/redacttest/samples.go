// Package redacttest holds a sample of every credential shape internal/redact scrubs, for the
// tests of the packages that print (a test that greps an output for them).
package redacttest

import "strings"

// Samples of each shape, valid as far as their shape goes; none is a live credential.
var (
	PAT         = "ghp_" + strings.Repeat("A1b2", 9)
	FineGrained = "github_pat_11ABCDEFG0" + strings.Repeat("x", 60)
	Install     = "ghs_" + strings.Repeat("Z9", 18)
	Refresh     = "ghr_" + strings.Repeat("r", 70)
	JWT         = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLWJ5dGVz"
	JIT         = "eyJkLnJ1bm5lciI6IntcImFnZW50SWRcIjoxLFwiYWdlbnROYW1lXCI6XCJ4XCJ9In0=" // base64 of a JIT config
	PEMKey      = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----"
)
