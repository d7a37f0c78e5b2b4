package reproduce

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/kiln-dev/kiln/pkg/osimage"
)

// freshBuildah points buildah at empty storage under work, so that no
// layer cached by an earlier build (the one under check, say) can stand
// in for a rebuilt one: `bud --layers` would otherwise reuse it.
func freshBuildah(bin string, env []string, work string) (osimage.Buildah, error) {
	conf := filepath.Join(work, "storage.conf")
	storage := fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(work, "storage"), filepath.Join(work, "run"))
	if err := os.WriteFile(conf, []byte(storage), 0o644); err != nil {
		return osimage.Buildah{}, fmt.Errorf("writing the rebuild's storage.conf: %w", err)
	}
	if env == nil {
		env = os.Environ()
	}
	// exec keeps the last of duplicate variables: this one wins.
	env = append(slices.Clone(env), "CONTAINERS_STORAGE_CONF="+conf)
	return osimage.Buildah{Bin: bin, Env: env}, nil
}

// removeStorage removes the rebuild's folder: buildah's containers and
// images first, then whatever overlay mounts are left under it.
func removeStorage(bb osimage.Buildah, work string) error {
	ctx := context.Background()
	for _, args := range [][]string{{"rm", "--all"}, {"rmi", "--all", "--force"}} {
		cmd := exec.CommandContext(ctx, bb.Bin, args...)
		cmd.Env = bb.Env
		_ = cmd.Run() // best effort: the unmounts below do the rest
	}
	for _, m := range mountsUnder(work) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", m, err)
		}
	}
	return os.RemoveAll(work)
}

// mountsUnder lists mount points below root, deepest first.
func mountsUnder(root string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], root+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	return mounts
}
