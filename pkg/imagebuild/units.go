package imagebuild

import (
	"archive/tar"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
)

// unit writes a systemd unit, its dropins and its enablement.
//
// Enablement is the set of symlinks `systemctl enable` makes from the unit's
// [Install] section: <target>.wants/<unit> for WantedBy=, .requires/ for
// RequiredBy=, and Alias= links. MCO's daemon runs `systemctl enable` on the
// node; we put the same links into the image.
//
// Differences from MCO, by necessity of a layer that never reads the base:
//   - enabled: false cannot remove links the base image ships (that would
//     need whiteouts of files we cannot see); it only adds nothing;
//   - enabling a unit without contents (a unit of the base) needs its
//     [Install] section, so that config goes to the buildah path, which runs
//     `systemctl enable` inside the image.
func (p *planner) unit(u igntypes.Unit) {
	if u.Name == "" || strings.Contains(u.Name, "/") {
		p.errorf("systemd.units %q: not a unit name", u.Name)
		return
	}
	unitPath := path.Join(systemdDir, u.Name)
	for _, d := range u.Dropins {
		if d.Name == "" || strings.Contains(d.Name, "/") {
			p.errorf("systemd.units %s: dropin %q is not a file name", u.Name, d.Name)
			continue
		}
		if d.Contents == nil {
			continue // Ignition writes no file for a dropin without contents
		}
		p.add(Entry{Path: path.Join(systemdDir, u.Name+".d", d.Name), Type: tar.TypeReg, Mode: 0o644,
			Data: []byte(*d.Contents), Origin: "systemd.units " + u.Name + " dropin"})
	}
	if u.Mask != nil && *u.Mask {
		p.add(Entry{Path: unitPath, Type: tar.TypeSymlink, Mode: 0o777, Link: "/dev/null", Origin: "systemd.units " + u.Name + " mask"})
		return
	}
	if u.Contents != nil {
		p.add(Entry{Path: unitPath, Type: tar.TypeReg, Mode: 0o644, Data: []byte(*u.Contents), Origin: "systemd.units " + u.Name})
	}
	if u.Enabled == nil || !*u.Enabled {
		return
	}
	if u.Contents == nil {
		p.buildah = append(p.buildah, fmt.Sprintf("systemd.units %s: enabling a unit of the base image needs systemctl enable in a build", u.Name))
		p.enableBase = append(p.enableBase, u.Name)
		return
	}
	links, err := enableLinks(u.Name, *u.Contents)
	if err != nil {
		p.errorf("systemd.units %s: %v", u.Name, err)
		return
	}
	for _, l := range links {
		p.add(Entry{Path: l, Type: tar.TypeSymlink, Mode: 0o777, Link: unitPath, Origin: "systemd.units " + u.Name + " enable"})
	}
}

// enableLinks returns the symlink paths `systemctl enable name` creates for a
// unit with these contents.
func enableLinks(name, contents string) ([]string, error) {
	opts, err := unit.DeserializeOptions(strings.NewReader(contents))
	if err != nil {
		return nil, fmt.Errorf("parsing unit: %w", err)
	}
	instance := name
	var links []string
	var wanted, required, alias []string
	for _, o := range opts {
		if o.Section != "Install" {
			continue
		}
		switch o.Name {
		case "WantedBy":
			wanted = append(wanted, strings.Fields(o.Value)...)
		case "RequiredBy":
			required = append(required, strings.Fields(o.Value)...)
		case "Alias":
			alias = append(alias, strings.Fields(o.Value)...)
		case "DefaultInstance":
			if prefix, suffix, ok := strings.Cut(name, "@."); ok {
				instance = prefix + "@" + o.Value + "." + suffix
			}
		}
	}
	if strings.Contains(instance, "@.") && (len(wanted) > 0 || len(required) > 0) {
		// systemctl enable refuses a template without an instance too.
		return nil, fmt.Errorf("template unit has WantedBy/RequiredBy but no DefaultInstance")
	}
	for _, n := range slices.Concat(wanted, required, alias, []string{instance}) {
		// systemd unit names are plain file names; a "/" would place a
		// link outside /etc/systemd/system.
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
			return nil, fmt.Errorf("[Install] names %q, which is not a unit name", n)
		}
	}
	for _, t := range wanted {
		links = append(links, path.Join(systemdDir, t+".wants", instance))
	}
	for _, t := range required {
		links = append(links, path.Join(systemdDir, t+".requires", instance))
	}
	for _, a := range alias {
		links = append(links, path.Join(systemdDir, a))
	}
	return links, nil
}
