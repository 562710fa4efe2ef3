package runner

import (
	"archive/tar"
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// extractArchive unpacks archive, a package of the layout's kind (.tar.gz or .zip), into dest.
func extractArchive(ctx context.Context, kind, archive, dest string) error {
	if kind == ".zip" {
		return extractZip(ctx, archive, dest)
	}
	return extractTarGz(ctx, archive, dest)
}

// maxZipLink bounds a symlink entry's body, which is its target.
const maxZipLink = 4096

// extractZip unpacks a .zip (the Windows runner package) into dest with extractTarGz's rules: each
// entry is turned into the tar header it stands for and checked and written by the same
// extractor, so a zip can hold nothing a tarball may not (no absolute or .. path, no link out, no
// entry through a link, no device). Also refused: a name with a backslash or a colon, which the
// zip format does not allow and which Windows would read as a separator, a drive or a stream.
func extractZip(ctx context.Context, archive, dest string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // insecure names are refused below, by name
		return fmt.Errorf("not a zip archive: %w", err)
	}
	defer zr.Close()
	files := zr.File
	return extractEach(ctx, dest, func() (*tar.Header, io.Reader, error) {
		if len(files) == 0 {
			return nil, nil, io.EOF
		}
		f := files[0]
		files = files[1:]
		hdr, body, err := zipHeader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("archive entry %q: %w", f.Name, err)
		}
		return hdr, body, nil
	})
}

// zipHeader turns f into the tar header it stands for and its content (an open reader for a
// regular file, which extractEach closes), for the extractor to check and write.
func zipHeader(f *zip.File) (*tar.Header, io.Reader, error) {
	if strings.ContainsAny(f.Name, `\:`) {
		return nil, nil, errors.New(`path has a backslash or a colon: the zip format separates with "/", and Windows would read them as a separator, a drive or a stream`)
	}
	mode := f.Mode()
	hdr := &tar.Header{Name: f.Name, Mode: int64(mode.Perm())}
	switch {
	case mode.IsDir():
		hdr.Typeflag = tar.TypeDir
	case mode&fs.ModeSymlink != 0:
		target, err := readZipBody(f, maxZipLink)
		if err != nil {
			return nil, nil, fmt.Errorf("read symlink target: %w", err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, string(target)
	case mode.IsRegular():
		rc, err := f.Open()
		if err != nil {
			return nil, nil, err
		}
		hdr.Typeflag = tar.TypeReg
		return hdr, rc, nil
	default:
		// A named pipe, device or socket: extractor.entry names the type it refuses.
		hdr.Typeflag = tar.TypeFifo
	}
	return hdr, nil, nil
}

func readZipBody(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("longer than %d bytes", limit)
	}
	return b, err
}
