package engine

import "github.com/runner-manager/runner-manager/journal"

// The pebble journal is used as is; enginetest.Journal keeps the tests honest to the same API.
var _ Journal = (*journal.Journal)(nil)
