package selfupdate

import (
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Stamp is the cheap identity of a file: what one stat returns. Two stats with equal stamps are
// taken to be the same content, so an unchanged file is never executed twice. Mode is part of it so
// a file first seen without its execute bit is probed again after chmod; Inode so a package manager's
// rename-into-place is noticed even when it preserves size and mtime.
type Stamp struct {
	Size    int64       `json:"size"`
	ModTime time.Time   `json:"mod_time"`
	Mode    fs.FileMode `json:"mode"`
	Inode   uint64      `json:"inode,omitempty"`
}

// StatStamp stats path (following symlinks, as exec does).
func StatStamp(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return Stamp{}, fmt.Errorf("%s is not a regular file", path)
	}
	return Stamp{Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode(), Inode: inode(fi)}, nil
}

// Equal compares stamps; time.Time must be compared with Equal, not ==.
func (s Stamp) Equal(o Stamp) bool {
	return s.Size == o.Size && s.ModTime.Equal(o.ModTime) && s.Mode == o.Mode && s.Inode == o.Inode
}

func (s Stamp) String() string {
	return fmt.Sprintf("size=%d mtime=%s mode=%s", s.Size, s.ModTime.UTC().Format(time.RFC3339Nano), s.Mode)
}
