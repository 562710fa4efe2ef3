//go:build !unix

package doctor

import "io/fs"

// ownerOf is -1 where files have no uid (Windows: an owner SID, which fileacl checks).
func ownerOf(fs.FileInfo) int { return -1 }
