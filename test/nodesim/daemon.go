package nodesim

import (
	"archive/tar"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/ignres"
)

// systemdDir is where the machine-config daemon writes units.
const systemdDir = "/etc/systemd/system"

// ConfigFiles are the files MCO's machine-config daemon writes for mc on
// a rollout (its updateFiles: storage.files, storage.links, units and
// their drop-ins, masks as links to /dev/null), by the path the
// MachineConfig gives. Enabling units (systemctl enable) is not part of
// it: the links it makes depend on the units' [Install] sections.
func ConfigFiles(mc *mcfgv1.MachineConfig) (map[string]File, error) {
	cfg, rpt, err := ign.Parse(mc.Spec.Config.Raw)
	if err != nil {
		return nil, fmt.Errorf("parsing spec.config of MachineConfig %s: %w (%s)", mc.Name, err, rpt.String())
	}
	out := map[string]File{}
	for _, f := range cfg.Storage.Files {
		raw := []byte{}
		if f.Contents.Source != nil {
			if raw, err = ignres.DataURL(*f.Contents.Source); err != nil {
				return nil, fmt.Errorf("MachineConfig %s: storage.files %s: %w", mc.Name, f.Path, err)
			}
		}
		data, err := ignres.Content(raw, f.Contents, ignres.ContentLimit())
		if err != nil {
			return nil, fmt.Errorf("MachineConfig %s: storage.files %s: %w", mc.Name, f.Path, err)
		}
		mode := fs.FileMode(0o644)
		if f.Mode != nil {
			mode = fs.FileMode(*f.Mode).Perm() | specialBits(int64(*f.Mode))
		}
		out[f.Path] = File{Type: tar.TypeReg, Mode: mode, UID: idOf(f.User.ID), GID: idOf(f.Group.ID), Data: data}
	}
	for _, l := range cfg.Storage.Links {
		if l.Hard != nil && *l.Hard {
			return nil, fmt.Errorf("MachineConfig %s: storage.links %s: hard links are not simulated", mc.Name, l.Path)
		}
		out[l.Path] = File{Type: tar.TypeSymlink, Mode: 0o777, Link: deref(l.Target)}
	}
	for _, u := range cfg.Systemd.Units {
		unitFiles(u, out)
	}
	return out, nil
}

func unitFiles(u igntypes.Unit, out map[string]File) {
	p := path.Join(systemdDir, u.Name)
	if u.Mask != nil && *u.Mask {
		out[p] = File{Type: tar.TypeSymlink, Mode: 0o777, Link: "/dev/null"}
	} else if u.Contents != nil {
		out[p] = File{Type: tar.TypeReg, Mode: 0o644, Data: []byte(*u.Contents)}
	}
	for _, d := range u.Dropins {
		if d.Contents != nil {
			out[path.Join(p+".d", d.Name)] = File{Type: tar.TypeReg, Mode: 0o644, Data: []byte(*d.Contents)}
		}
	}
}

func idOf(id *int) int {
	if id == nil {
		return 0
	}
	return *id
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ApplyConfig writes mc's ConfigFiles into the deployment the node boots,
// as the machine-config daemon does on an osImageURL rollout. A path is
// resolved through the node's own symlinks (/usr/local is /var/usrlocal
// on CoreOS); one that does not land in /etc or /var fails, as /usr is
// read-only on the node.
func (n *Node) ApplyConfig(mc *mcfgv1.MachineConfig) error {
	files, err := ConfigFiles(mc)
	if err != nil {
		return err
	}
	v, err := n.View()
	if err != nil {
		return fmt.Errorf("applying MachineConfig %s: %w", mc.Name, err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := files[p]
		// A missing folder is made where the resolved part leads.
		dir, _ := v.resolveDir(path.Dir(p))
		real := path.Join(dir, path.Base(p))
		if !strings.HasPrefix(real, "/etc/") && !strings.HasPrefix(real, "/var/") {
			return fmt.Errorf("applying MachineConfig %s: %s is %s on the node, which is read-only", mc.Name, p, real)
		}
		if f.Type == tar.TypeSymlink {
			err = n.Symlink(real, f.Link)
		} else {
			err = n.WriteFile(real, f.Data, f.Mode, f.UID, f.GID)
		}
		if err != nil {
			return fmt.Errorf("applying MachineConfig %s: %w", mc.Name, err)
		}
	}
	return nil
}
