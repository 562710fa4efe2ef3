package dockerd

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Image is an image imported into a private daemon.
type Image struct {
	Name string // repository:tag given at import
	ID   string // sha256:... image ID
}

// busybox is Debian's busybox-static.
const busybox = "/bin/busybox"

// BusyboxRoot makes a minimal root filesystem in dir: Debian's static busybox at /bin/busybox
// with a link per applet (sh, cat, id, ...), /tmp (1777) and /etc/passwd and /etc/group naming
// root and nobody. It says to install busybox-static when that is missing.
func BusyboxRoot(dir string) error {
	if err := requireStatic(busybox); err != nil {
		return fmt.Errorf("%w: install Debian's busybox-static (`make e2e-tools` does)", err)
	}
	for _, sub := range []string{"bin", "etc", "tmp", "root", "proc", "sys", "dev"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|fs.ModeSticky); err != nil {
		return err
	}
	if err := CopyFile(busybox, filepath.Join(dir, "bin", "busybox"), 0o755); err != nil {
		return err
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", applet)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	for name, content := range map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
		"group":  "root:x:0:\nnogroup:x:65534:\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ImportRoot tars the root filesystem at root (owned by root, modes kept) and `docker import`s it
// as name, with changes as `docker import --change` lines ("CMD [...]", "ENV K=V", "WORKDIR /x").
func (d *Daemon) ImportRoot(root, name string, changes ...string) (Image, error) {
	var buf bytes.Buffer
	if err := WriteTar(&buf, root); err != nil {
		return Image{}, err
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	if _, err := d.Run(&buf, append(args, "-", name)...); err != nil {
		return Image{}, err
	}
	id, err := d.Run(nil, "image", "inspect", "--format", "{{.Id}}", name)
	return Image{Name: name, ID: id}, err
}

// CopyFile copies src's content to dst (its directories made) with mode.
func CopyFile(src, dst string, mode fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}

// WriteTar writes the tree at root as an uncompressed tar stream (paths relative to root, every
// entry owned by 0:0, symlinks kept as links): the layer `docker import` and registry pushes take.
func WriteTar(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", root, err)
	}
	return tw.Close()
}

// requireStatic fails unless path is an ELF executable without an interpreter (statically linked),
// so it runs in an image that has no libc.
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a readable executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}
