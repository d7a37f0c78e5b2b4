package nodesim

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxHostFile caps a file the helper reads from the host's work folder.
const maxHostFile = 64 << 20

// bootEntry is the part of a Boot Loader Specification entry that ostree
// writes and the simulation reads: which deployment and kernel boot.
type bootEntry struct {
	version int
	ostree  string // the ostree= kernel argument
	linux   string
}

// defaultDeployment is the deployment the bootloader starts by default
// (the entry with the highest version, as ostree orders them) and its
// kernel version.
func (h *helper) defaultDeployment() (dir, kernel string, err error) {
	entriesDir := filepath.Join(h.sysroot, "boot", "loader", "entries")
	names, err := filepath.Glob(filepath.Join(entriesDir, "*.conf"))
	if err != nil || len(names) == 0 {
		return "", "", errNoDeployment
	}
	var best *bootEntry
	for _, n := range names {
		e, err := readBootEntry(n)
		if err != nil {
			return "", "", err
		}
		if best == nil || e.version > best.version {
			best = e
		}
	}
	// ostree=/ostree/boot.N/<os>/<bootcsum>/<serial> is a chain of
	// relative symlinks to the deployment folder.
	if !strings.HasPrefix(best.ostree, "/ostree/boot.") {
		return "", "", fmt.Errorf("boot entry: unexpected ostree= argument %q", best.ostree)
	}
	dir, err = filepath.EvalSymlinks(filepath.Join(h.sysroot, best.ostree))
	if err != nil {
		return "", "", fmt.Errorf("resolving boot entry ostree=%s: %w", best.ostree, err)
	}
	deploys := filepath.Join(h.sysroot, "ostree", "deploy", osName, "deploy") + "/"
	if !strings.HasPrefix(dir, deploys) {
		return "", "", fmt.Errorf("boot entry ostree=%s resolves outside the deployments: %s", best.ostree, dir)
	}
	kernel = strings.TrimPrefix(path.Base(best.linux), "vmlinuz-")
	return dir, kernel, nil
}

func readBootEntry(name string) (*bootEntry, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading boot entry: %w", err)
	}
	defer f.Close()
	e := &bootEntry{}
	sc := bufio.NewScanner(io.LimitReader(f, maxRequest))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "version":
			if e.version, err = strconv.Atoi(val); err != nil {
				return nil, fmt.Errorf("boot entry %s: version %q: %w", filepath.Base(name), val, err)
			}
		case "linux":
			e.linux = val
		case "options":
			for _, a := range strings.Fields(val) {
				if v, ok := strings.CutPrefix(a, "ostree="); ok {
					e.ostree = v
				}
			}
		}
	}
	return e, sc.Err()
}

// copyTreeNoClobber copies src into dst, keeping whatever dst has.
func copyTreeNoClobber(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if _, err := os.Lstat(to); err == nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		switch {
		case d.IsDir():
			err = os.Mkdir(to, fi.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(p); err == nil {
				err = os.Symlink(target, to)
			}
		case d.Type().IsRegular():
			err = copyFile(p, to, fi.Mode().Perm())
		default:
			return fmt.Errorf("copying /var: %s is neither a file, a folder nor a symlink", rel)
		}
		if err != nil {
			return fmt.Errorf("copying /var: %w", err)
		}
		if err := os.Lchown(to, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("copying /var: %w", err)
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return os.Chmod(to, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// write puts a file or a symlink at req.Path of the default deployment,
// as the node's Ignition or machine-config daemon would: /etc is the
// deployment's, /var the stateroot's. Every folder is resolved inside that
// root (openat2 RESOLVE_IN_ROOT), missing ones are made, and the file
// replaces the old one by a rename, as the daemon writes.
func (h *helper) write(req request) error {
	dep, _, err := h.defaultDeployment()
	if err != nil {
		return err
	}
	clean := path.Clean(req.Path)
	var root, rel string
	switch {
	case clean != req.Path || !path.IsAbs(clean):
		return fmt.Errorf("writing %q: the path must be absolute and clean", req.Path)
	case strings.HasPrefix(clean, "/etc/"):
		root, rel = filepath.Join(dep, "etc"), strings.TrimPrefix(clean, "/etc/")
	case strings.HasPrefix(clean, "/var/"):
		root, rel = h.stateVar(), strings.TrimPrefix(clean, "/var/")
	default:
		return fmt.Errorf("writing %s: only /etc and /var are writable on the node", req.Path)
	}
	parent, err := openDirIn(root, path.Dir(rel))
	if err != nil {
		return fmt.Errorf("writing %s: %w", req.Path, err)
	}
	defer unix.Close(parent)
	base := path.Base(rel)
	tmp := "." + base + ".nodesim-tmp"
	if req.Link != "" {
		err = unix.Symlinkat(req.Link, parent, tmp)
	} else {
		err = writeAt(parent, tmp, req.Src, req.Mode)
	}
	if err == nil {
		err = unix.Fchownat(parent, tmp, req.UID, req.GID, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil {
		err = unix.Renameat(parent, tmp, parent, base)
	}
	if err != nil {
		unix.Unlinkat(parent, tmp, 0)
		return fmt.Errorf("writing %s: %w", req.Path, err)
	}
	return nil
}

// openDirIn opens folder rel of root, resolved inside root, making the
// missing folders (0755, root-owned, as the daemon does).
func openDirIn(root, rel string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	rootfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rootfd)
	if rel == "." {
		return unix.Openat2(rootfd, ".", how)
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fd, err := unix.Openat2(rootfd, sub, how)
		if err == unix.ENOENT {
			up, err2 := unix.Openat2(rootfd, strings.Join(append([]string{"."}, parts[:i]...), "/"), how)
			if err2 != nil {
				return -1, err2
			}
			err = unix.Mkdirat(up, parts[i], 0o755)
			unix.Close(up)
			if err != nil {
				return -1, err
			}
			fd, err = unix.Openat2(rootfd, sub, how)
		}
		if err != nil {
			return -1, err
		}
		if i == len(parts)-1 {
			return fd, nil
		}
		unix.Close(fd)
	}
	return -1, fmt.Errorf("opening %s: empty path", rel)
}

func writeAt(dir int, name, src string, mode uint32) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), name)
	defer out.Close()
	n, err := io.Copy(out, io.LimitReader(in, maxHostFile+1))
	if err == nil && n > maxHostFile {
		err = fmt.Errorf("%s is over %d bytes", src, maxHostFile)
	}
	if err == nil {
		// Fchmod, not the open mode: the umask must not trim it.
		err = out.Chmod(fs.FileMode(mode & 0o777))
		if mode&0o7000 != 0 && err == nil {
			err = unix.Fchmod(fd, mode&0o7777)
		}
	}
	return err
}

// export writes the default deployment's tree, with the stateroot's /var
// in place of the deployment's own (what the node mounts), to out.
func (h *helper) export(out string) (string, error) {
	dep, kernel, err := h.defaultDeployment()
	if err != nil {
		return "", err
	}
	f, err := os.Create(out)
	if err != nil {
		return "", fmt.Errorf("exporting the deployment: %w", err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := addTree(tw, dep, "", "var"); err != nil {
		return "", fmt.Errorf("exporting the deployment: %w", err)
	}
	if err := addTree(tw, h.stateVar(), "var", ""); err != nil {
		return "", fmt.Errorf("exporting /var: %w", err)
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("exporting the deployment: %w", err)
	}
	return kernel, f.Close()
}

// addTree adds root's entries to tw under prefix, skipping the top-level
// entry named skip.
func addTree(tw *tar.Writer, root, prefix, skip string) error {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip != "" && rel == skip {
			return fs.SkipDir
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, rel := range names {
		if prefix == "" && rel == "." {
			continue
		}
		if err := addEntry(tw, filepath.Join(root, rel), path.Join(prefix, rel)); err != nil {
			return err
		}
	}
	return nil
}

func addEntry(tw *tar.Writer, p, name string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	var link string
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = name, int(st.Uid), int(st.Gid), "", ""
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
